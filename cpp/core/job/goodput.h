// Goodput by cause: a job's wall time since it started, split into what it was spent on,
// from what its ledger saw (job/attempt_ledger.h): each attempt's start and end, the steps
// its processes reported (the first and the newest, each with its time) and the gatherings
// of nodes. Pure: every time is given, in seconds since the job started.
//
// The phases, whose sum is the wall time:
//   - waiting: gathering nodes (before the first attempt of `kdist launch --nodes`, and
//     after a loss that left fewer than MIN nodes);
//   - starting: the first attempt's start to its first step;
//   - restarting: an attempt's end to the next one's first step (less any waiting), and
//     in an attempt that did not finish, its newest step to its end (the failure or loss
//     being found, the attempt stopped);
//   - recomputing: steps done again after a restore: an attempt that starts from a step
//     below the newest step an earlier attempt reached spends the time of those steps
//     again (at the attempt's own measured seconds per step; all of its stepping while it
//     has not passed that step);
//   - productive: the rest of the time after an attempt's first step (steps that were kept;
//     in the attempt that finished, up to its end).
// An attempt whose processes reported no step counts whole as starting or restarting.
#ifndef KDIST_JOB_GOODPUT_H_
#define KDIST_JOB_GOODPUT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kdist {

struct AttemptRow;

struct Goodput {
  double productive_seconds = 0;
  double starting_seconds = 0;
  double restarting_seconds = 0;
  double recomputing_seconds = 0;
  double waiting_seconds = 0;
  double wall_seconds() const {
    return productive_seconds + starting_seconds + restarting_seconds + recomputing_seconds +
           waiting_seconds;
  }
  // productive / wall; 0 before any time passed.
  double ratio() const;
  // "productive 81.2 s (87%), starting 3.0 s, restarting 6.1 s, recomputing 2.5 s, waiting 0.0 s"
  std::string Line() const;
};

// What a machine's processes reported of their steps in one attempt (kdist.should_stop(step)):
// the first step and the newest, each with its wall-clock time (Unix milliseconds; 0:
// unknown). -1: no step reported.
struct StepReport {
  int64_t first_step = -1;
  int64_t first_step_unix_millis = 0;
  int64_t step = -1;
  int64_t step_unix_millis = 0;
  bool any() const { return first_step >= 0 || step >= 0; }
};

// `rows`: the ledger's attempts, in order; `gathering_since`: >= 0 while the job gathers
// nodes after its last attempt ended (or before its first: 0), -1 otherwise; `now`: the
// wall time so far (the job's end once it ended). Seconds since the job started, all.
Goodput GoodputOf(const std::vector<AttemptRow>& rows, double gathering_since, double now);

// Each restart's cause: "failure" (an attempt that failed, counted against
// --max-restarts), "node_lost", "drained", "grown" (a re-form: each cause it names),
// counted over the attempts that another followed (`restarting_after_last`: the last one
// too, when the job goes on after it).
std::map<std::string, int64_t> RestartsByCause(const std::vector<AttemptRow>& rows,
                                               bool restarting_after_last);

}  // namespace kdist

#endif  // KDIST_JOB_GOODPUT_H_
