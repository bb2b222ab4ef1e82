#include "liveness_bindings.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "address.h"
#include "casters.h"
#include "clock.h"
#include "errors.h"
#include "liveness_book.h"
#include "liveness_connection.h"
#include "liveness_hub.h"
#include "liveness_spoke.h"
#include "liveness_wire.h"
#include "python_hooks.h"
#include "roll_call_options.h"
#include "socket.h"
#include "status.h"
#include "text.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::ProgressCallback;
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

// One process's end of the liveness channel as Python sees it: process 0's
// hub or another process's spoke, and what this process does on a notice
// (decided by DecideOnNotice; done here, on the channel's thread, without the
// GIL, so it works while the main thread is stuck in a collective).
class LivenessChannelPy {
 public:
  LivenessChannelPy(int64_t self, PeerFailurePolicy policy, double exit_flush_seconds)
      : self_(self), policy_(policy), flush_bound_(SecondsToNanos(exit_flush_seconds)) {}
  ~LivenessChannelPy() { Stop(); }

  NoticeHandler Handler() {
    return [this](const LiveNotice& notice) { Handle(notice); };
  }

  void Handle(const LiveNotice& notice) {
    const LiveAction action = DecideOnNotice(notice, policy_, finishing_.load());
    switch (action) {
      case LiveAction::kNone: return;
      case LiveAction::kReport: {
        const std::string line = DescribeFailure(notice, self_, action);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          reported_.push_back(line);
        }
        WriteLineToStderr(line);
        return;
      }
      case LiveAction::kExitFailure:
        FlushPythonWithin(flush_bound_);
        WriteLineToStderr(DescribeFailure(notice, self_, action));
        _exit(1);
      case LiveAction::kExitSuccess:
        FlushPythonWithin(flush_bound_);
        _exit(0);
    }
  }

  std::unique_ptr<LivenessHub> hub;
  std::unique_ptr<LivenessSpoke> spoke;

  void ReportFailure(const std::string& message) {
    Status status = hub ? hub->ReportFailure(message)
                        : spoke ? spoke->ReportFailure(message)
                                : FailedPrecondition("the liveness channel is closed");
    (void)status;  // best effort: the process leaves either way
  }

  void Finish(bool barrier) {
    finishing_ = true;
    Status status = hub ? hub->Finish(barrier)
                        : spoke ? spoke->Finish(barrier)
                                : FailedPrecondition("the liveness channel is closed");
    (void)status;
  }

  void Stop() {
    if (hub) hub->Stop();
    if (spoke) spoke->Stop();
  }

  std::vector<std::string> Reported() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reported_;
  }

 private:
  int64_t self_;
  PeerFailurePolicy policy_;
  Nanos flush_bound_;
  std::atomic<bool> finishing_{false};
  std::mutex mutex_;
  std::vector<std::string> reported_;
};

PeerFailurePolicy PolicyOrRaise(const std::string& policy) {
  if (policy == "exit") return PeerFailurePolicy::kExit;
  if (policy == "ignore") return PeerFailurePolicy::kIgnore;
  RaiseIfError(InvalidArgument("on_peer_failure=" + Quote(policy) +
                               ": expected \"exit\" or \"ignore\""));
  return PeerFailurePolicy::kExit;
}

LivenessChannelPy* StartLivenessHubPy(int64_t num_processes, const std::string& host, int64_t pid,
                                      const std::string& nonce, double heartbeat_timeout,
                                      const std::string& policy, double exit_flush_seconds) {
  auto channel = std::make_unique<LivenessChannelPy>(0, PolicyOrRaise(policy), exit_flush_seconds);
  Result<std::unique_ptr<LivenessHub>> hub =
      LivenessHub::Start(num_processes, LiveMember{0, host, pid}, nonce,
                         LivenessOptionsFor(SecondsToNanos(heartbeat_timeout)), channel->Handler());
  RaiseIfError(hub.status());
  channel->hub = std::move(*hub);
  return channel.release();
}

LivenessChannelPy* JoinLivenessPy(const std::string& hub_endpoint, int64_t process_id,
                                  const std::string& host, int64_t pid, const std::string& nonce,
                                  const std::string& coordinator_host, int64_t coordinator_pid,
                                  double heartbeat_timeout, const std::string& policy,
                                  double join_timeout, double exit_flush_seconds) {
  Result<Address> address = ParseAddress(hub_endpoint);
  RaiseIfError(address.status());
  Result<Endpoint> endpoint = EndpointFromLiteral(address->host, address->port);
  RaiseIfError(endpoint.status());
  auto channel =
      std::make_unique<LivenessChannelPy>(process_id, PolicyOrRaise(policy), exit_flush_seconds);
  LivenessOptions options = LivenessOptionsFor(SecondsToNanos(heartbeat_timeout));
  options.join_timeout = SecondsToNanos(join_timeout);
  RealClock clock;
  Result<std::unique_ptr<LivenessSpoke>> spoke = Internal("not run");
  {
    nb::gil_scoped_release release;
    spoke = LivenessSpoke::Join(*endpoint, LiveJoin{process_id, nonce, host, pid},
                                LiveMember{0, coordinator_host, coordinator_pid}, options,
                                channel->Handler(), clock);
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

}  // namespace

namespace bindings {

void BindLiveness(nb::module_& m) {
  nb::class_<LivenessChannelPy>(
      m, "LivenessChannel",
      "This process's end of the liveness channel: process 0's hub, or another process's "
      "connection to it. On a peer's failure it prints one line and leaves with status 1 "
      "(policy 'exit'), or prints the line and goes on (policy 'ignore').")
      .def_prop_ro("port",
                   [](const LivenessChannelPy& c) -> int { return c.hub ? c.hub->port() : 0; },
                   "Process 0's listening port (0 for other processes).")
      .def_prop_ro("watched",
                   [](LivenessChannelPy& c) {
                     return c.hub ? c.hub->Watched() : std::vector<int64_t>();
                   },
                   "The process ids that joined process 0's hub (empty elsewhere).")
      .def_prop_ro("reported", &LivenessChannelPy::Reported,
                   "The lines printed about peers' failures under policy 'ignore'.")
      .def("report_failure", &LivenessChannelPy::ReportFailure, nb::arg("message"),
           nb::call_guard<nb::gil_scoped_release>(),
           "Tells every process (through process 0) that this one failed with `message`; "
           "returns once sent (bounded).")
      .def("finish", &LivenessChannelPy::Finish, nb::arg("barrier"),
           nb::call_guard<nb::gil_scoped_release>(),
           "Says this process's work is done; `barrier`: it will wait in JAX's shutdown "
           "barrier (False: it leaves at once).")
      .def("wait_all_done", &WaitAllDonePy, nb::arg("timeout"),
           nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
           "Process 0: waits until every watched process finished; returns whether all go "
           "through JAX's shutdown barrier. Raises RendezvousError when a failure ended the "
           "job, RendezvousTimeoutError after `timeout` seconds. True at once elsewhere.")
      .def("stop", &LivenessChannelPy::Stop, nb::call_guard<nb::gil_scoped_release>(),
           "Stops the channel's thread and closes its connections.");
  m.def("start_liveness_hub", &StartLivenessHubPy, nb::arg("num_processes"), nb::arg("host"),
        nb::arg("pid"), nb::arg("nonce"), nb::arg("heartbeat_timeout"), nb::arg("policy"),
        nb::arg("exit_flush_seconds") = 1.0, nb::rv_policy::take_ownership,
        "Process 0: listens on an ephemeral port for the other processes' liveness "
        "connections (admitted with `nonce`).");
  m.def("join_liveness", &JoinLivenessPy, nb::arg("hub"), nb::arg("process_id"), nb::arg("host"),
        nb::arg("pid"), nb::arg("nonce"), nb::arg("coordinator_host"),
        nb::arg("coordinator_pid"), nb::arg("heartbeat_timeout"), nb::arg("policy"),
        nb::arg("join_timeout") = 5.0, nb::arg("exit_flush_seconds") = 1.0,
        nb::rv_policy::take_ownership,
        "Another process: connects to process 0's hub at `hub` (IP literal host:port) and is "
        "admitted with `nonce` (GIL released); raises CoordinatorUnreachableError when it "
        "cannot.");
}

}  // namespace bindings
}  // namespace kdist
