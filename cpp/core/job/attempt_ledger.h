// The attempts of one job and the one restart rule, for `kdist launch -n` (one
// machine) and `kdist launch --nodes` (the rendezvous's book keeps one): each
// attempt's row, whether the job goes on after it, and the table and records
// that show them. Pure: the time of each event is passed in.
//
// What follows an attempt:
//   - every process passed: the end, status 0;
//   - a failure (Failed): it counts against `max_restarts`; the same failure at
//     the same point as the attempt before (JobFailure::SamePoint) ends the job
//     with status 1; no restart left ends it with the failure's status;
//     otherwise the job starts again;
//   - a re-form (Reformed: a machine lost, drained or added): it does not count
//     against `max_restarts` and the next failure is compared with none; the
//     thrash guard ends the job with status 1 when more than `max_reforms`
//     re-forms of attempts that made no progress (no backup saved, no step past
//     the one they started from) fall within `reform_window`, naming each: a job
//     that keeps saving between re-forms is never thrashing, however often
//     machines come and go;
//   - an end the starter decided (Ended: a signal to it, its timeout, a command
//     that cannot start, too few machines): the end, with that status.
#ifndef KDIST_JOB_ATTEMPT_LEDGER_H_
#define KDIST_JOB_ATTEMPT_LEDGER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "job/goodput.h"
#include "job/job_failure.h"

namespace kdist {

struct LedgerOptions {
  int64_t max_restarts = 0;  // --max-restarts
  // The thrash guard: more than this many re-forms without progress within
  // `reform_window` end the job (--max-reforms, --reform-window).
  int64_t max_reforms = 4;
  Nanos reform_window = std::chrono::minutes(10);
  // The wall-clock time of the ledger's start (Unix milliseconds; 0: unknown): rows then
  // carry wall-clock times too, and the table shows them.
  int64_t wall_start_unix_millis = 0;
};

// One attempt: a row of the table and of attempts.json.
struct AttemptRow {
  int64_t attempt = 0;
  int64_t port = 0;                // the coordinator's
  std::vector<std::string> nodes;  // by rank ("" on one machine: none named)
  int64_t processes = 0;
  double started_seconds = 0;  // since the job started
  double ended_seconds = -1;   // -1: still running
  int64_t started_unix_millis = 0;  // wall clock; 0: unknown
  int64_t ended_unix_millis = 0;    // wall clock; 0: unknown or still running
  // "finished"; a failure's Record() ("failed (exit 1): process 1 ..."); "node lost: ...";
  // "drained: ..."; "grown: ... joined"; how the starter ended it; "" while running.
  std::string ended;
  int64_t exit_status = 0;
  bool counted = true;  // against --max-restarts (a re-form's is not)
  // Its processes' steps (kdist.should_stop(step)), seconds since the job started; -1: none.
  int64_t first_step = -1;
  double first_step_seconds = -1;
  int64_t step = -1;  // the newest reported
  double step_seconds = -1;
  double waited_seconds = 0;  // gathering nodes before it started (job/goodput.h)
};

// What comes after an attempt.
struct LedgerDecision {
  bool again = false;       // start another attempt
  int64_t exit_status = 0;  // when not again: the job's
  std::string message;      // why it ends, or why it goes on ("" when it finished)
};

// Everything a ledger remembers, as plain values: what the rendezvous's book saves with
// its own state (rendezvous/rendezvous_state.h) and restores on another machine.
struct LedgerState {
  Nanos start{0};
  std::vector<AttemptRow> rows;
  int64_t counted_restarts = 0;
  JobFailure previous;
  std::vector<std::pair<Nanos, std::string>> reforms;  // within the window: when, why
  bool gathering = false;  // nodes are being gathered since `gathering_since`
  Nanos gathering_since{0};
  bool over = false;  // the job ended, at `over_at`
  Nanos over_at{0};
};

class AttemptLedger {
 public:
  AttemptLedger(LedgerOptions options, Nanos start);
  // A ledger that goes on from `state` (saved by State()), deciding as the original would.
  AttemptLedger(LedgerOptions options, LedgerState state);

  // An attempt starts (its number is the row count so far).
  void Begin(int64_t port, std::vector<std::string> nodes, int64_t processes, Nanos now);
  // The running attempt ended so (each returns what follows).
  LedgerDecision Finished(Nanos now);
  LedgerDecision Failed(const JobFailure& failure, Nanos now);
  // `progressed`: the attempt it ends saved a backup or stepped past its first step.
  LedgerDecision Reformed(const std::string& cause, bool progressed, Nanos now);
  LedgerDecision Ended(const std::string& how, int64_t exit_status, Nanos now);
  // More words about the last attempt's end ("; fewer than MIN nodes came back").
  void AddToLastEnd(const std::string& text);
  // Steps its processes reported in attempt `attempt` (merged with what it has: the
  // earliest first step, the newest step); times without a wall clock are not kept.
  void NoteSteps(int64_t attempt, const StepReport& steps);
  // The job gathers nodes from `now` until the next attempt begins (goodput's waiting).
  void Gathering(Nanos now);
  // The job ended at `now` (when no decision of the ledger's ended it: a gathering's
  // timeout, a stop). Decisions that end it mark it themselves.
  void Over(Nanos now);
  bool over() const { return over_; }
  // The wall time so far split by cause (the job's end once it ended).
  Goodput GoodputAt(Nanos now) const;
  // Restarts by cause (job/goodput.h).
  std::map<std::string, int64_t> Restarts() const;
  // The newest step any attempt's processes reported; -1: none.
  int64_t NewestStep() const;

  int64_t attempt() const { return static_cast<int64_t>(rows_.size()) - 1; }
  int64_t counted_restarts() const { return counted_restarts_; }
  const std::vector<AttemptRow>& rows() const { return rows_; }
  const LedgerOptions& options() const { return options_; }
  // attempt, port, status, start, end, nodes, processes, counted, ended: one line each.
  std::string Table() const;
  LedgerState State() const;

 private:
  AttemptRow* Running();
  double SecondsSinceStart(Nanos at) const;
  int64_t WallMillis(Nanos at) const;  // 0 when the wall clock is unknown
  void End(AttemptRow& row, Nanos now) const;

  LedgerOptions options_;
  Nanos start_;
  std::vector<AttemptRow> rows_;
  int64_t counted_restarts_ = 0;
  JobFailure previous_;  // the failure of the attempt before, when it failed (same shape)
  // The re-forms without progress within the window: when, why.
  std::vector<std::pair<Nanos, std::string>> reforms_;
  bool gathering_ = false;
  Nanos gathering_since_{0};
  bool over_ = false;
  Nanos over_at_{0};
};

}  // namespace kdist

#endif  // KDIST_JOB_ATTEMPT_LEDGER_H_
