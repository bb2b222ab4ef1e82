// The record a process leaves of how its job ended, for the program that
// started it to read (kdist launch), instead of parsing the verdict line back:
// one JSON object per line, appended to the file KDIST_VERDICT_FILE names.
//
//   {"event": "peer_failed", "process_id": 1, "host": "node-1", "pid": 4242,
//    "message": "RuntimeError: boom", "step": -1, "exit_status": 1,
//    "reporter": 0, "line": "kdist: process 1 (host node-1, pid 4242) failed first: ..."}
//
// Events (VerdictEvent, named by VerdictEventName; declared here and nowhere else
// in the core, and read by kdist._local_job.process.VerdictEvent, which a test holds
// against verdict_event_names()): "failed" (the reporter's own uncaught exception),
// "peer_failed" and "died" (another process, the first failure), "unreachable"
// (another process's host answered nothing for the unreachable window), "stop_now"
// (the job stopped at once; process_id is the process that asked), "stop_at" (the job
// agreed on a stop step, `step`), "stalled" (the job ended by the stall watchdog; the
// message names the stuck). exit_status is what the reporter leaves with, -1 when it
// goes on.
#ifndef KDIST_LIVENESS_VERDICT_RECORD_H_
#define KDIST_LIVENESS_VERDICT_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "liveness/liveness_wire.h"

namespace kdist {

enum class VerdictEvent {
  kFailed,
  kPeerFailed,
  kDied,
  kUnreachable,
  kStopNow,
  kStopAt,
  kStalled,
};
inline constexpr VerdictEvent kAllVerdictEvents[] = {
    VerdictEvent::kFailed, VerdictEvent::kPeerFailed, VerdictEvent::kDied,
    VerdictEvent::kUnreachable, VerdictEvent::kStopNow, VerdictEvent::kStopAt,
    VerdictEvent::kStalled};
// "failed", "peer_failed", "died", "unreachable", "stop_now", "stop_at", "stalled".
const char* VerdictEventName(VerdictEvent event);
// The event a process records for a notice it acts on; nullopt for a notice that
// is no verdict (an admission, a query, a finish).
std::optional<VerdictEvent> VerdictEventOf(LiveKind kind);

struct VerdictRecord {
  VerdictEvent event = VerdictEvent::kFailed;
  int64_t process_id = 0;
  std::string host;
  int64_t pid = 0;
  std::string message;
  int64_t step = -1;
  int exit_status = -1;
  int64_t reporter = 0;
  std::string line;
};

// One JSON object, no newline; strings escaped as JSON requires (control
// characters as \uXXXX; bytes that are not UTF-8 as U+FFFD).
std::string EncodeVerdictRecord(const VerdictRecord& record);

// Appends the record and a newline to `path` with one write (O_APPEND), so
// records of several threads never interleave. Best effort for the caller
// (which is about to leave): kUnavailable says why it could not.
Status AppendVerdictRecord(const std::string& path, const VerdictRecord& record);

}  // namespace kdist

#endif  // KDIST_LIVENESS_VERDICT_RECORD_H_
