// How an attempt of a job failed, as a structure: who (the process, its node,
// host and pid), how it ended, and what it said. The agents of `kdist launch
// --nodes` send it to the rendezvous (rendezvous/rendezvous_wire.h), `kdist
// launch -n` hands it to its ledger directly (job/attempt_ledger.h); the
// restart rule compares two failures by their fields (SamePoint), never by
// their text.
#ifndef KDIST_JOB_JOB_FAILURE_H_
#define KDIST_JOB_JOB_FAILURE_H_

#include <cstdint>
#include <string>

namespace kdist {

enum class FailureKind : int64_t {
  kNone = 0,       // nothing failed (a report of processes that all passed)
  kProcess = 1,    // a process raised or exited with a non-zero status: `what` says how
  kStopped = 2,    // the job stopped together (a stop signal, request_stop): `process_id`
                   // asked, at `step` (-1: at once); `what` is its reason ("SIGTERM")
  kStalled = 3,    // the stall watchdog ended the job: `what` names the stuck process
  kNodeEnded = 4,  // a node's processes ended without naming a failure of their own
                   // (their cause lies elsewhere, or was not recorded)
};

struct JobFailure {
  FailureKind kind = FailureKind::kNone;
  int64_t process_id = -1;  // the job-wide id of the process it began in; -1: unknown
  std::string node;         // its node's name ("" on one machine)
  std::string host;         // its host name
  int64_t pid = 0;          // its pid; 0: unknown
  int64_t exit_status = 0;  // its exit status, as a shell reports it (128 + N: signal N)
  std::string ended_how;    // "exit 1", "killed by SIGKILL" ("" : from exit_status)
  std::string what;         // kProcess: its exception line; kStopped: the reason; kStalled: the line
  int64_t step = -1;        // kStopped: the agreed step; -1: none

  bool failed() const { return kind != FailureKind::kNone; }
  // "process 1 (node b, host h, pid 9)": the parts that are known.
  std::string Where() const;
  // One line, what the agents print as the job's first failure: "process 1 (host h,
  // pid 9): RuntimeError: boom", "every process stopped at step 42: process 1 (host h,
  // pid 9) asked to stop (SIGTERM)", "the job stalled: ...", "node b's processes ended
  // with status 3".
  std::string Text() const;
  // A few words: "failed (exit 1)", "stopped at step 42", "stalled".
  std::string Summary() const;
  // How the attempt ended, for its row: "failed (exit 1): process 1 (...): ..." for a
  // failure, Text() for a stop or a stall.
  std::string Record() const;
  // Whether `other` is the same failure at the same point: the same kind, process,
  // node, exit status, line and step (host and pid differ between attempts).
  bool SamePoint(const JobFailure& other) const;
};

}  // namespace kdist

#endif  // KDIST_JOB_JOB_FAILURE_H_
