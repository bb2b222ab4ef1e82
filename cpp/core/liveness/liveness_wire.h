// The liveness channel's messages (liveness/liveness_hub.h, liveness/liveness_spoke.h): the
// join a process sends to process 0, and the notices that travel either way,
// in the framing the roll call also uses (base/wire.h): the 12-byte header with
// types kFrameLiveJoin and kFrameLiveNotice (declared in base/wire.h), then tagged
// fields.
//
// Events (a LiveNotice):
//   a process -> process 0: "I failed: <message>", "I finished" (and whether
//     it goes through JAX's shutdown barrier, or leaves without it);
//   process 0 -> every process: "process N failed first: ...", "process N
//     died", "process N is unreachable", "every process finished"; and to a
//     joining process: "admitted".
// Stopping together (stop/stop_book.h, liveness/stall_book.h, liveness/barrier_book.h):
//   a process -> process 0: "I ask should_stop" (armed), "stop the job"
//     (a stop signal or request_stop), "my step is S", "I made no progress",
//     "my step and idle time", "my stacks are dumped", "I reached barrier N";
//   process 0 -> every process: "your step?", "every process stops at step
//     S", "the job ends now", "your step and idle time?", "dump your stacks",
//     "the job stalled", "barrier N is released / failed".
//
// Everything here is a pure function of its bytes: decoding must survive any
// input (fuzz/liveness/liveness_fuzz.cc feeds it anything) and never reads
// past what it was given.
#ifndef KDIST_LIVENESS_LIVENESS_WIRE_H_
#define KDIST_LIVENESS_LIVENESS_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/wire.h"

namespace kdist {

// A process asking process 0 to be watched.
struct LiveJoin {
  int64_t process_id = 0;
  std::string nonce;  // from "go"
  std::string host;
  int64_t pid = 0;
};

enum class LiveKind : int64_t {
  kFailed = 1,     // an uncaught exception; `message` says which
  kDied = 2,       // its connection closed without a finish message
  kFinished = 3,   // its work is done; it goes through JAX's shutdown barrier
  kLeft = 4,       // its work is done; it leaves without JAX's barrier (os._exit)
  kAllDone = 5,    // process 0 -> all: every process finished; `barrier`: all use JAX's
  kAdmitted = 6,   // process 0 -> a joining process: you are watched
  // Stopping together. The process fields name the process a notice is about:
  // the one that asked to stop, in kStopQuery, kStopAt and kStopNow.
  kArmed = 7,           // -> 0: this process asked should_stop(step) for the first time
  kStopRequest = 8,     // -> 0: stop the job: `signal_number`, or `message` (the code's
                        //    reason); `code` 1: a second signal ("now"); `armed`: the
                        //    sender had asked should_stop before it sent this
  kStopQuery = 9,       // 0 -> all: a stop was asked; answer with your step
  kStopStep = 10,       // -> 0: my last step (`step`; -1: none yet)
  kStopAt = 11,         // 0 -> all: every process stops at `step`
  kStopNow = 12,        // 0 -> all: the job ends now (nobody asks should_stop, or "now")
  kStalled = 13,        // -> 0: no progress for the stall timeout (`step`, `millis` idle)
  kProgressQuery = 14,  // 0 -> all: answer with your step and idle time
  kProgressReport = 15, // -> 0: `step`, `millis` idle, `code` 1: it ever made progress
  kDumpStacks = 16,     // 0 -> a stuck process: write your Python stacks to your stderr
  kStacksDumped = 17,   // -> 0: done
  kJobStalled = 18,     // 0 -> all: the job ends; `message` names the stuck processes
  kBarrierArrive = 19,  // -> 0: reached barrier call `index` named `name`, waiting `millis`
  kBarrierDone = 20,    // 0 -> arrived: barrier `index` released (`code` 0) or failed
                        //    (`code` 1 timed out, 2 names differ, 3 abandoned; `message`)
  kUnreachable = 21,    // 0 -> all: nothing answered from the process's host for
                        //    `millis` (its connection timed out: a host that lost power or
                        //    its network); `address`, `since_unix_millis`
};
const char* LiveKindName(LiveKind kind);

struct LiveNotice {
  LiveKind kind = LiveKind::kFailed;
  int64_t process_id = 0;  // the process it is about
  std::string host;
  int64_t pid = 0;
  std::string message;     // kFailed: "RuntimeError: injected failure"; kDied: how it ended
  bool barrier = true;     // kAllDone: whether every process goes through JAX's barrier
  // The fields of the kinds above kAdmitted (each travels only when it is not
  // its default, so the earlier kinds' frames are what they were).
  int64_t step = -1;
  int64_t signal_number = 0;
  int64_t index = 0;
  std::string name;
  int64_t millis = 0;
  int64_t code = 0;
  // kUnreachable: the address its connection came from, and since when (the
  // start of the silent window, milliseconds since the Unix epoch).
  std::string address;
  int64_t since_unix_millis = 0;
  // kStopRequest: whether the sender had asked should_stop(step) before it sent
  // the request. It travels with the request, so process 0 never decides "nobody
  // asks should_stop" because the sender's kArmed (sent on its channel's next
  // board tick) has not arrived yet.
  bool armed = false;
};

std::string EncodeLiveJoin(const LiveJoin& join);
std::string EncodeLiveNotice(const LiveNotice& notice);
// One whole frame each; kInvalidArgument for anything malformed or of
// another type, kFailedPrecondition for another protocol version.
Result<LiveJoin> DecodeLiveJoin(std::string_view frame);
Result<LiveNotice> DecodeLiveNotice(std::string_view frame);

}  // namespace kdist

#endif  // KDIST_LIVENESS_LIVENESS_WIRE_H_
