#include "liveness_bindings.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/text.h"
#include "casters.h"
#include "config/cluster_spec.h"
#include "errors.h"
#include "liveness/board_watch.h"
#include "liveness/liveness_book.h"
#include "liveness/liveness_connection.h"
#include "liveness/liveness_hub.h"
#include "liveness/liveness_spoke.h"
#include "liveness/liveness_wire.h"
#include "liveness/verdict_record.h"
#include "net/socket.h"
#include "python_hooks.h"
#include "roll_call/roll_call_options.h"
#include "roll_call/roll_call_wire.h"
#include "roll_call/worker.h"
#include "stop/stop_board.h"
#include "stop/stop_signals.h"
#include "stop_bindings.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::ProgressCallback;
using bindings::StopBoardPy;
using bindings::PythonHooks;
using bindings::RaiseIfError;
using bindings::ValueOrRaise;

// Flushes Python's sys.stdout and sys.stderr from a thread that may not hold
// the GIL, waiting at most `bound`: the main thread may sit in a collective
// that holds it. A helper thread takes the GIL; if it cannot within the bound
// the process leaves without the flush (what was printed before is lost, the
// exit is not).
void FlushPythonWithin(Nanos bound) {
  if (!Py_IsInitialized()) return;
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> flushed = done->get_future();
  std::thread([done] {
    PyGILState_STATE gil = PyGILState_Ensure();
    for (const char* name : {"stdout", "stderr"}) {
      PyObject* stream = PySys_GetObject(name);  // borrowed
      if (stream != nullptr && stream != Py_None) {
        PyObject* result = PyObject_CallMethod(stream, "flush", nullptr);
        Py_XDECREF(result);
        PyErr_Clear();
      }
    }
    PyGILState_Release(gil);
    done->set_value();
  }).detach();
  flushed.wait_for(bound);
}

void WriteLineToStderr(const std::string& line) {
  std::string out = line + "\n";
  std::string_view rest = out;
  for (int i = 0; i < 64 && !rest.empty(); ++i) {
    const ssize_t n = write(STDERR_FILENO, rest.data(), rest.size());
    if (n <= 0) break;
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

// This process as the liveness channel names it: its id, its host (as
// os.uname().nodename, as the roll call names it) and pid.
LiveMember ThisProcess(int64_t process_id) {
  struct utsname names {};
  std::string host = uname(&names) == 0 ? std::string(names.nodename) : std::string();
  return LiveMember{process_id, std::move(host), static_cast<int64_t>(getpid())};
}

// The record event of a notice this process acts on ("" for none).
const char* EventOf(const LiveNotice& notice) {
  switch (notice.kind) {
    case LiveKind::kFailed: return "peer_failed";
    case LiveKind::kDied: return "died";
    case LiveKind::kUnreachable: return "unreachable";
    case LiveKind::kStopNow: return "stop_now";
    case LiveKind::kStopAt: return "stop_at";
    case LiveKind::kJobStalled: return "stalled";
    default: return "";
  }
}

// One process's end of the liveness channel as Python sees it: process 0's
// hub (a job of one process has one too) or another process's spoke, and what
// this process does on a notice (decided by DecideOnNotice; done here, on the
// channel's thread, without the GIL, so it works while the main thread is
// stuck in a collective). Every line it prints about the job's end it also
// appends, as a record, to `record_path` (liveness/verdict_record.h) when one is given.
class LivenessChannelPy {
 public:
  LivenessChannelPy(LiveMember self, PeerFailurePolicy policy, double exit_flush_seconds,
                    std::string record_path)
      : self_(std::move(self)),
        policy_(policy),
        flush_bound_(SecondsToNanos(exit_flush_seconds)),
        record_path_(std::move(record_path)) {}
  ~LivenessChannelPy() { Stop(); }

  NoticeHandler Handler() {
    return [this](const LiveNotice& notice) { Handle(notice); };
  }

  void Handle(const LiveNotice& notice) {
    const LiveAction action = DecideOnNotice(notice, policy_, finishing_.load());
    if (action == LiveAction::kExitFailure || action == LiveAction::kExitStopped ||
        action == LiveAction::kExitStalled) {
      ended_ = true;
    }
    switch (action) {
      case LiveAction::kNone: return;
      case LiveAction::kReport: {
        const std::string line = DescribeFailure(notice, self_.process_id, action);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          reported_.push_back(line);
        }
        Say(notice, line, -1);
        return;
      }
      case LiveAction::kSayStop:
        Say(notice, DescribeStop(notice, self_.process_id), -1);
        return;
      case LiveAction::kExitFailure:
        Leave(notice, DescribeFailure(notice, self_.process_id, action), 1);
      case LiveAction::kExitStopped:
        Leave(notice, DescribeStop(notice, self_.process_id), StopExitStatus(notice));
      case LiveAction::kExitStalled:
        Leave(notice, DescribeStop(notice, self_.process_id), 1);
      case LiveAction::kExitSuccess:
        FlushPythonWithin(flush_bound_);
        _exit(0);
    }
  }

  // The one clock of the channel this process starts (declared first: it outlives
  // the hub or the spoke, which keeps it).
  RealClock clock;
  std::unique_ptr<LivenessHub> hub;
  std::unique_ptr<LivenessSpoke> spoke;

  // This process failed: returns the line to print (the core's), records it,
  // and tells every process (best effort: the process leaves either way).
  std::string ReportFailure(const std::string& message) {
    const std::string line = DescribeOwnFailure(self_, message);
    Record("failed", self_, message, -1, 1, line);
    Status status = hub ? hub->ReportFailure(message)
                        : spoke ? spoke->ReportFailure(message)
                                : FailedPrecondition("the liveness channel is closed");
    (void)status;
    return line;
  }

  void Finish(bool barrier) {
    finishing_ = true;
    Status status = hub ? hub->Finish(barrier)
                        : spoke ? spoke->Finish(barrier)
                                : FailedPrecondition("the liveness channel is closed");
    (void)status;
  }

  Status RequestStop(const std::string& reason) {
    return hub ? hub->RequestStop(reason)
               : spoke ? spoke->RequestStop(reason)
                       : FailedPrecondition("the liveness channel is closed");
  }

  Status Barrier(const std::string& name, int64_t index, Nanos timeout,
                 const std::function<Status()>& interrupted) {
    return hub ? hub->Barrier(name, index, timeout, interrupted)
               : spoke ? spoke->Barrier(name, index, timeout, interrupted)
                       : FailedPrecondition("the liveness channel is closed");
  }

  void Stop() {
    if (hub) hub->Stop();
    if (spoke) spoke->Stop();
  }

  std::vector<std::string> Reported() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reported_;
  }

  // Whether the job's end was decided (a failure, a stop, a stall).
  bool JobEnded() const { return ended_.load() || (hub && hub->JobEnded()); }

 private:
  void Record(const char* event, const LiveMember& about, const std::string& message,
              int64_t step, int exit_status, const std::string& line) {
    VerdictRecord record{event,  about.process_id, about.host,       about.pid, message,
                         step,   exit_status,      self_.process_id, line};
    (void)AppendVerdictRecord(record_path_, record);  // best effort
  }

  void Say(const LiveNotice& notice, const std::string& line, int exit_status) {
    const std::string message =
        notice.kind == LiveKind::kStopAt || notice.kind == LiveKind::kStopNow
            ? DescribeStopCause(notice)
            : notice.message;
    Record(EventOf(notice), LiveMember{notice.process_id, notice.host, notice.pid}, message,
           notice.kind == LiveKind::kStopAt ? notice.step : -1, exit_status, line);
    WriteLineToStderr(line);
  }

  // The job's end is said once per process: the first caller prints its line
  // and leaves; one that comes meanwhile (another thread with another notice
  // of the same end) prints nothing and waits for that exit, bounded.
  [[noreturn]] void Leave(const LiveNotice& notice, const std::string& line, int status) {
    if (leaving_.exchange(true)) {
      std::this_thread::sleep_for(flush_bound_ + std::chrono::seconds(5));
      _exit(status);
    }
    FlushPythonWithin(flush_bound_);
    Say(notice, line, status);
    _exit(status);
  }

  LiveMember self_;
  PeerFailurePolicy policy_;
  Nanos flush_bound_;
  std::string record_path_;
  std::atomic<bool> finishing_{false};
  std::atomic<bool> ended_{false};
  std::atomic<bool> leaving_{false};
  std::mutex mutex_;
  std::vector<std::string> reported_;
};

// Every setting of the channel comes from the spec, as Resolve() made it: no
// value crosses back into Python and in again.
StopOptions StopOptionsFor(const ClusterSpec& spec, StopBoardPy* board) {
  StopOptions stop;
  stop.board = board != nullptr ? &board->board : nullptr;
  stop.stall_timeout = spec.stall_timeout.value;
  stop.stack_signal = spec.stall_timeout.value ? StackSignal() : 0;
  return stop;
}

LivenessOptions LivenessOptionsOf(const ClusterSpec& spec) {
  return LivenessOptionsFor(SecondsToNanos(spec.unreachable_timeout_seconds.value));
}

LivenessChannelPy* StartLivenessHubPy(const ClusterSpec& spec, StopBoardPy* board,
                                      const std::string& nonce, const std::string& record_path,
                                      bool alone, double exit_flush_seconds) {
  const LiveMember self = ThisProcess(0);
  auto channel = std::make_unique<LivenessChannelPy>(self, spec.on_peer_failure.value,
                                                     exit_flush_seconds, record_path);
  Result<std::unique_ptr<LivenessHub>> hub = LivenessHub::Start(
      alone ? 1 : spec.num_processes.value, self, nonce, LivenessOptionsOf(spec),
      StopOptionsFor(spec, board), channel->Handler(), channel->clock,
      alone ? std::vector<std::string>{} : spec.process_hosts.value);
  RaiseIfError(hub.status());
  channel->hub = std::move(*hub);
  return channel.release();
}

// Another process, after "go": joins the hub where the roll call's result says it listens
// (roll_call/worker.h, LivenessHubEndpoint), admitted with the nonce "go" carried.
LivenessChannelPy* JoinLivenessPy(const ClusterSpec& spec, StopBoardPy* board,
                                  const WorkerResult& roll_call, const std::string& record_path,
                                  double join_timeout, double exit_flush_seconds) {
  const Reply& go = roll_call.go;
  Result<Endpoint> endpoint = LivenessHubEndpoint(roll_call);
  RaiseIfError(endpoint.status());
  const LiveMember self = ThisProcess(spec.process_id.value);
  auto channel = std::make_unique<LivenessChannelPy>(self, spec.on_peer_failure.value,
                                                     exit_flush_seconds, record_path);
  LivenessOptions options = LivenessOptionsOf(spec);
  options.join_timeout = SecondsToNanos(join_timeout);
  const StopOptions stop = StopOptionsFor(spec, board);
  Result<std::unique_ptr<LivenessSpoke>> spoke = Internal("not run");
  {
    nb::gil_scoped_release release;
    spoke = LivenessSpoke::Join(
        *endpoint, LiveJoin{self.process_id, go.shared.liveness_nonce, self.host, self.pid},
        LiveMember{0, go.host, go.pid, endpoint->Host()}, options, stop, channel->Handler(),
        channel->clock);
  }
  RaiseIfError(spoke.status());
  channel->spoke = std::move(*spoke);
  return channel.release();
}

bool WaitAllDonePy(LivenessChannelPy& channel, double timeout,
                   std::optional<ProgressCallback> progress, double progress_interval) {
  if (!channel.hub) return true;
  RollCallOptions options;
  PythonHooks hooks(std::move(progress));
  hooks.Install(options);
  Result<bool> result = Internal("not run");
  {
    nb::gil_scoped_release release;
    result = channel.hub->WaitAllDone(SecondsToNanos(timeout), SecondsToNanos(progress_interval),
                                      options.progress, options.interrupted);
  }
  hooks.Finish(result.status());
  return *result;
}

void BarrierPy(LivenessChannelPy& channel, const std::string& name, int64_t index,
               double timeout) {
  RollCallOptions options;
  PythonHooks hooks(std::nullopt);
  hooks.Install(options);
  Status status;
  {
    nb::gil_scoped_release release;
    status = channel.Barrier(name, index, SecondsToNanos(timeout), options.interrupted);
  }
  hooks.Finish(status, status.code() == StatusCode::kDeadlineExceeded ? "BarrierTimeoutError"
                                                                      : "BarrierError");
}

void RequestStopPy(LivenessChannelPy& channel, const std::string& reason) {
  Status status;
  {
    nb::gil_scoped_release release;
    status = channel.RequestStop(reason);
  }
  RaiseIfError(status);
}

}  // namespace

namespace bindings {

void BindLiveness(nb::module_& m) {
  nb::class_<LivenessChannelPy>(
      m, "LivenessChannel",
      "This process's end of the liveness channel: process 0's hub, or another process's "
      "connection to it. On a peer's failure it prints one line and leaves with status 1 "
      "(policy 'exit'), or prints the line and goes on (policy 'ignore'); a stop of the job "
      "and a stall end every process whatever the policy.")
      .def_prop_ro("port",
                   [](const LivenessChannelPy& c) -> int { return c.hub ? c.hub->port() : 0; },
                   "Process 0's listening port (0 for other processes and a job of one).")
      .def_prop_ro("watched",
                   [](LivenessChannelPy& c) {
                     return c.hub ? c.hub->Watched() : std::vector<int64_t>();
                   },
                   "The process ids that joined process 0's hub (empty elsewhere).")
      .def_prop_ro("reported", &LivenessChannelPy::Reported,
                   "The lines printed about peers' failures under policy 'ignore'.")
      .def_prop_ro("job_ended", &LivenessChannelPy::JobEnded,
                   "Whether the job's end was decided (a failure, a stop, a stall): this "
                   "process is about to be ended with the job's line.")
      .def("report_failure", &LivenessChannelPy::ReportFailure, nb::arg("message"),
           nb::call_guard<nb::gil_scoped_release>(),
           "Tells every process (through process 0) that this one failed with `message`; "
           "returns the line to print about it, once sent (bounded).")
      .def("finish", &LivenessChannelPy::Finish, nb::arg("barrier"),
           nb::call_guard<nb::gil_scoped_release>(),
           "Says this process's work is done; `barrier`: it will wait in JAX's shutdown "
           "barrier (False: it leaves at once).")
      .def("request_stop", &RequestStopPy, nb::arg("reason"),
           "Asks the whole job to stop (request_stop(reason)).")
      .def("barrier", &BarrierPy, nb::arg("name"), nb::arg("index"), nb::arg("timeout"),
           "Waits (GIL released) at this process's barrier call `index` named `name` until "
           "every process reached it; raises BarrierTimeoutError after `timeout` seconds, "
           "BarrierError when names differ or a process left without it.")
      .def("wait_all_done", &WaitAllDonePy, nb::arg("timeout"),
           nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
           "Process 0: waits until every watched process finished; returns whether all go "
           "through JAX's shutdown barrier. Raises RendezvousError when a failure ended the "
           "job, RendezvousTimeoutError after `timeout` seconds. True at once elsewhere.")
      .def("stop", &LivenessChannelPy::Stop, nb::call_guard<nb::gil_scoped_release>(),
           "Stops the channel's thread and closes its connections.");
  m.def("start_liveness_hub", &StartLivenessHubPy, nb::arg("spec"),
        nb::arg("board").none(), nb::kw_only(), nb::arg("nonce"), nb::arg("record_path") = "",
        nb::arg("alone") = false, nb::arg("exit_flush_seconds") = 1.0,
        nb::rv_policy::take_ownership, nb::keep_alive<0, 2>(),
        "Process 0: listens on an ephemeral port for the other processes' liveness "
        "connections (admitted with `nonce`); for a job of one process, or `alone` (this "
        "process's own channel outside a job), a channel without a listener. Every setting "
        "comes from `spec` (the process count and hosts, the unreachable timeout, "
        "on_peer_failure, the stall watchdog). `board`: this process's StopBoard (stop "
        "signals, should_stop, barriers); `record_path`: where the records of the job's end "
        "are appended.");
  m.def("join_liveness", &JoinLivenessPy, nb::arg("spec"), nb::arg("board").none(),
        nb::arg("roll_call"), nb::kw_only(), nb::arg("record_path") = "",
        nb::arg("join_timeout") = 5.0, nb::arg("exit_flush_seconds") = 1.0,
        nb::rv_policy::take_ownership, nb::keep_alive<0, 2>(),
        "Another process, after \"go\": connects to process 0's hub at the address that "
        "answered `roll_call` (run_worker's result), on the port \"go\" announced, and is "
        "admitted with the nonce \"go\" carried (GIL released); raises "
        "CoordinatorUnreachableError when it cannot. Settings come from `spec`, as for "
        "start_liveness_hub.");
}

}  // namespace bindings
}  // namespace kdist
