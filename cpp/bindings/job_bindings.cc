#include "job_bindings.h"

#include <memory>
#include <string>
#include <utility>

#include "base/clock.h"
#include "casters.h"
#include "job/attempt_ledger.h"
#include "job/job_failure.h"

namespace nb = nanobind;

namespace kdist::bindings {
namespace {

// The ledger with the clock its events are timed by.
class PyLedger {
 public:
  explicit PyLedger(LedgerOptions options) : ledger_(WithWallClock(std::move(options)), clock_.Now()) {}
  static LedgerOptions WithWallClock(LedgerOptions options) {
    options.wall_start_unix_millis = WallClockMillis();
    return options;
  }
  Nanos Now() { return clock_.Now(); }
  RealClock clock_;
  AttemptLedger ledger_;
};

}  // namespace

void BindJob(nb::module_& m) {
  nb::enum_<FailureKind>(m, "FailureKind", "What kind of end a JobFailure describes.")
      .value("NONE", FailureKind::kNone, "Nothing failed.")
      .value("PROCESS", FailureKind::kProcess, "A process raised or exited non-zero.")
      .value("STOPPED", FailureKind::kStopped, "The job stopped together (a stop request).")
      .value("STALLED", FailureKind::kStalled, "The stall watchdog ended the job.")
      .value("NODE_ENDED", FailureKind::kNodeEnded,
             "A node's processes ended without a failure of their own.");

  nb::class_<JobFailure>(m, "JobFailure",
                         "How an attempt failed, as a structure: where it began, how it ended, "
                         "what it said. The restart rule compares fields, never text.")
      .def(nb::init<>())
      .def_rw("kind", &JobFailure::kind)
      .def_rw("process_id", &JobFailure::process_id, "The job-wide id; -1: unknown.")
      .def_rw("node", &JobFailure::node, "The node's name ('' on one machine).")
      .def_rw("host", &JobFailure::host)
      .def_rw("pid", &JobFailure::pid)
      .def_rw("exit_status", &JobFailure::exit_status)
      .def_rw("ended_how", &JobFailure::ended_how, "'exit 1', 'killed by SIGKILL'.")
      .def_rw("what", &JobFailure::what, "Its exception line, or the stop's reason.")
      .def_rw("step", &JobFailure::step, "The agreed stop step; -1: none.")
      .def_prop_ro("failed", &JobFailure::failed)
      .def("text", &JobFailure::Text, "One line: 'failed (exit 1): process 1 (...): ...'.")
      .def("summary", &JobFailure::Summary, "A few words: 'failed (exit 1)'.")
      .def("same_point", &JobFailure::SamePoint, nb::arg("other"),
           "Whether `other` is the same failure at the same point (host and pid aside).");

  nb::class_<AttemptRow>(m, "AttemptRow", "One attempt of a job: a row of its attempts table.")
      .def_ro("attempt", &AttemptRow::attempt)
      .def_ro("port", &AttemptRow::port, "The coordinator's port.")
      .def_ro("nodes", &AttemptRow::nodes, "The node names, by rank (none on one machine).")
      .def_ro("processes", &AttemptRow::processes)
      .def_ro("started_seconds", &AttemptRow::started_seconds, "Since the job started.")
      .def_ro("ended_seconds", &AttemptRow::ended_seconds, "-1 while it runs.")
      .def_ro("started_unix_millis", &AttemptRow::started_unix_millis, "Wall clock; 0: unknown.")
      .def_ro("ended_unix_millis", &AttemptRow::ended_unix_millis,
              "Wall clock; 0: unknown or still running.")
      .def_ro("ended", &AttemptRow::ended,
              "'finished', a failure's text, 'node lost: ...', 'drained: ...', 'grown: ...'.")
      .def_ro("exit_status", &AttemptRow::exit_status)
      .def_ro("counted", &AttemptRow::counted, "Against --max-restarts.")
      .def_ro("first_step", &AttemptRow::first_step, "Its processes' first step; -1: none.")
      .def_ro("first_step_seconds", &AttemptRow::first_step_seconds,
              "When, since the job started; -1: none.")
      .def_ro("step", &AttemptRow::step, "The newest step its processes reported; -1: none.")
      .def_ro("step_seconds", &AttemptRow::step_seconds, "When, since the job started.")
      .def_ro("waited_seconds", &AttemptRow::waited_seconds,
              "Gathering nodes before it started.");

  nb::class_<Goodput>(m, "Goodput",
                      "A job's wall time split by cause (job/goodput.h); the sum is the wall "
                      "time.")
      .def_ro("productive_seconds", &Goodput::productive_seconds, "Steps that were kept.")
      .def_ro("starting_seconds", &Goodput::starting_seconds, "The start to the first step.")
      .def_ro("restarting_seconds", &Goodput::restarting_seconds,
              "An attempt's end to the next one's first step.")
      .def_ro("recomputing_seconds", &Goodput::recomputing_seconds,
              "Steps done again after a restore.")
      .def_ro("waiting_seconds", &Goodput::waiting_seconds, "Gathering nodes.")
      .def_prop_ro("wall_seconds", &Goodput::wall_seconds)
      .def_prop_ro("ratio", &Goodput::ratio, "productive / wall.")
      .def("line", &Goodput::Line, "One line, for the end-of-job table.");

  nb::class_<LedgerDecision>(m, "LedgerDecision", "What comes after an attempt.")
      .def_ro("again", &LedgerDecision::again, "Start another attempt.")
      .def_ro("exit_status", &LedgerDecision::exit_status, "When not again: the job's status.")
      .def_ro("message", &LedgerDecision::message);

  nb::class_<PyLedger>(m, "AttemptLedger",
                       "A job's attempts and its one restart rule (job/attempt_ledger.h), timed "
                       "by a monotonic clock.")
      .def(
          "__init__",
          [](PyLedger* self, int64_t max_restarts) {
            LedgerOptions options;
            options.max_restarts = max_restarts;
            new (self) PyLedger(std::move(options));
          },
          nb::arg("max_restarts"))
      .def(
          "begin",
          [](PyLedger& l, int64_t port, int64_t processes) {
            l.ledger_.Begin(port, {}, processes, l.Now());
          },
          nb::arg("port"), nb::arg("processes"), "An attempt starts.")
      .def("finished", [](PyLedger& l) { return l.ledger_.Finished(l.Now()); })
      .def(
          "failed", [](PyLedger& l, const JobFailure& failure) { return l.ledger_.Failed(failure, l.Now()); },
          nb::arg("failure"))
      .def(
          "ended",
          [](PyLedger& l, const std::string& how, int64_t status) {
            return l.ledger_.Ended(how, status, l.Now());
          },
          nb::arg("how"), nb::arg("exit_status"), "An end the starter decided: final.")
      .def_prop_ro("rows", [](const PyLedger& l) { return l.ledger_.rows(); })
      .def_prop_ro("table", [](const PyLedger& l) { return l.ledger_.Table(); })
      .def_prop_ro("counted_restarts", [](const PyLedger& l) { return l.ledger_.counted_restarts(); })
      .def(
          "note_steps",
          [](PyLedger& l, int64_t attempt, int64_t first_step, int64_t first_step_unix_millis,
             int64_t step, int64_t step_unix_millis) {
            l.ledger_.NoteSteps(attempt, StepReport{first_step, first_step_unix_millis, step,
                                                    step_unix_millis});
          },
          nb::arg("attempt"), nb::arg("first_step"), nb::arg("first_step_unix_millis"),
          nb::arg("step"), nb::arg("step_unix_millis"),
          "Steps attempt `attempt`'s processes reported (-1: none), with their wall-clock "
          "times (Unix milliseconds).")
      .def("goodput", [](PyLedger& l) { return l.ledger_.GoodputAt(l.Now()); },
           "The wall time so far (the job's end once it ended) split by cause.")
      .def_prop_ro("restarts", [](const PyLedger& l) { return l.ledger_.Restarts(); },
                   "Restarts by cause: failure, node_lost, drained, grown, stopped.")
      .def_prop_ro("newest_step", [](const PyLedger& l) { return l.ledger_.NewestStep(); },
                   "The newest step any attempt reported; -1: none.")
      .def_prop_ro("over", [](const PyLedger& l) { return l.ledger_.over(); },
                   "Whether the job ended.");
}

}  // namespace kdist::bindings
