#include "liveness_bindings.h"

#include <nanobind/stl/unique_ptr.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/waiter.h"
#include "casters.h"
#include "config/cluster_spec.h"
#include "errors.h"
#include "liveness/liveness_channel.h"
#include "liveness/verdict_record.h"
#include "net/socket.h"
#include "python_hooks.h"
#include "roll_call/roll_call_wire.h"
#include "roll_call/worker.h"
#include "stop_bindings.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::ProgressCallback;
using bindings::PythonHooks;
using bindings::RaiseIfError;
using bindings::StopBoardPy;

// The channel's flush hook: flushes Python's sys.stdout and sys.stderr from a thread
// that may not hold the GIL, waiting at most `bound` (the main thread may sit in a
// collective that holds it). A helper thread takes the GIL; if it cannot within the
// bound the process leaves without the flush (what was printed before is lost, the
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

ChannelHooks PythonExitHooks(double exit_flush_seconds) {
  ChannelHooks hooks;
  hooks.flush = FlushPythonWithin;
  hooks.flush_bound = SecondsToNanos(exit_flush_seconds);
  return hooks;
}

StopBoard* BoardOf(StopBoardPy* board) { return board != nullptr ? &board->board : nullptr; }

std::unique_ptr<LivenessChannel> StartLivenessHubPy(const ClusterSpec& spec, StopBoardPy* board,
                                                    JobShared* shared, bool alone,
                                                    double exit_flush_seconds) {
  Result<std::unique_ptr<LivenessChannel>> channel = LivenessChannel::StartHub(
      spec, BoardOf(board), alone, PythonExitHooks(exit_flush_seconds));
  RaiseIfError(channel.status());
  if (shared != nullptr) {  // what "go" carries to the others
    shared->liveness_port = (*channel)->port();
    shared->liveness_nonce = (*channel)->nonce();
  }
  return std::move(*channel);
}

// Another process, after "go": the hub is where the roll call's result says it listens
// (roll_call/worker.h, LivenessHubEndpoint), admitted with the nonce "go" carried.
std::unique_ptr<LivenessChannel> JoinLivenessPy(const ClusterSpec& spec, StopBoardPy* board,
                                                const WorkerResult& roll_call,
                                                double join_timeout, double exit_flush_seconds) {
  Result<Endpoint> endpoint = LivenessHubEndpoint(roll_call);
  RaiseIfError(endpoint.status());
  const Reply& go = roll_call.go;
  Result<std::unique_ptr<LivenessChannel>> channel = Internal("not run");
  {
    nb::gil_scoped_release release;
    channel = LivenessChannel::Join(spec, BoardOf(board), *endpoint, go.shared.liveness_nonce,
                                    LiveMember{0, go.host, go.pid, endpoint->Host()},
                                    SecondsToNanos(join_timeout),
                                    PythonExitHooks(exit_flush_seconds));
  }
  RaiseIfError(channel.status());
  return std::move(*channel);
}

FinishOutcome FinishPy(LivenessChannel& channel, bool barrier, double timeout,
                       std::optional<ProgressCallback> progress, double progress_interval) {
  WaitOptions wait;
  wait.progress_interval = SecondsToNanos(progress_interval);
  PythonHooks hooks(std::move(progress));
  hooks.Install(wait);
  Result<FinishOutcome> outcome = Internal("not run");
  {
    nb::gil_scoped_release release;
    outcome = channel.Finish(barrier, SecondsToNanos(timeout), wait);
  }
  hooks.Finish(outcome.status());
  return *outcome;
}

void BarrierPy(LivenessChannel& channel, const std::string& name, int64_t index, double timeout) {
  WaitOptions wait;
  PythonHooks hooks(std::nullopt);
  hooks.Install(wait);
  Status status;
  {
    nb::gil_scoped_release release;
    status = channel.Barrier(name, index, SecondsToNanos(timeout), wait.interrupted);
  }
  hooks.Finish(status, status.code() == StatusCode::kDeadlineExceeded ? "BarrierTimeoutError"
                                                                      : "BarrierError");
}

void RequestStopPy(LivenessChannel& channel, const std::string& reason) {
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
  nb::enum_<FinishOutcome>(m, "FinishOutcome", "How LivenessChannel.finish ended.")
      .value("BARRIER", FinishOutcome::kBarrier,
             "Every process goes through JAX's shutdown barrier.")
      .value("NO_BARRIER", FinishOutcome::kNoBarrier,
             "JAX's shutdown barrier cannot complete (a process left without it, or a "
             "peer's failure was let pass): leave without it.")
      .value("ENDING", FinishOutcome::kEnding,
             "A failure ended the job meanwhile: the channel's thread is ending this process.");
  nb::class_<LivenessChannel>(
      m, "LivenessChannel",
      "This process's end of the liveness channel: process 0's hub, or another process's "
      "connection to it. On a peer's failure it prints one line and leaves with status 1 "
      "(policy 'exit'), or prints the line and goes on (policy 'ignore'); a stop of the job "
      "and a stall end every process whatever the policy (liveness/liveness_channel.h).")
      .def_prop_ro("port", [](const LivenessChannel& c) -> int { return c.port(); },
                   "Process 0's listening port (0 for other processes and a job of one).")
      .def_prop_ro("watched", &LivenessChannel::Watched,
                   "The process ids that joined process 0's hub (empty elsewhere).")
      .def_prop_ro("reported", &LivenessChannel::Reported,
                   "The lines printed about peers' failures under policy 'ignore'.")
      .def_prop_ro("job_ended", &LivenessChannel::JobEnded,
                   "Whether the job's end was decided (a failure, a stop, a stall): this "
                   "process is about to be ended with the job's line.")
      .def("report_failure", &LivenessChannel::ReportFailure, nb::arg("message"),
           nb::call_guard<nb::gil_scoped_release>(),
           "Tells every process (through process 0) that this one failed with `message`; "
           "returns the line to print about it, once sent (bounded).")
      .def("finish", &FinishPy, nb::arg("barrier"), nb::arg("timeout"),
           nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
           "Says this process's work is done (`barrier`: it will wait in JAX's shutdown "
           "barrier). Process 0 then waits, at most `timeout` seconds, until every process "
           "finished, calling `progress` with whom it waits for. Returns a FinishOutcome; "
           "raises RendezvousTimeoutError at the timeout.")
      .def("request_stop", &RequestStopPy, nb::arg("reason"),
           "Asks the whole job to stop (request_stop(reason)).")
      .def("barrier", &BarrierPy, nb::arg("name"), nb::arg("index"), nb::arg("timeout"),
           "Waits (GIL released) at this process's barrier call `index` named `name` until "
           "every process reached it; raises BarrierTimeoutError after `timeout` seconds, "
           "BarrierError when names differ or a process left without it.")
      .def("stop", &LivenessChannel::Stop, nb::call_guard<nb::gil_scoped_release>(),
           "Stops the channel's thread and closes its connections.");
  m.def(
      "verdict_event_names",
      [] {
        std::vector<std::string> names;
        for (VerdictEvent event : kAllVerdictEvents) names.emplace_back(VerdictEventName(event));
        return names;
      },
      "The events a verdict record names (liveness/verdict_record.h), in their order.");
  m.def("start_liveness_hub", &StartLivenessHubPy, nb::arg("spec"), nb::arg("board").none(),
        nb::arg("shared").none(), nb::kw_only(), nb::arg("alone") = false,
        nb::arg("exit_flush_seconds") = 1.0, nb::keep_alive<0, 2>(),
        "Process 0: listens on an ephemeral port for the other processes' liveness "
        "connections, admitting them with a nonce it draws, and writes the port and the "
        "nonce into `shared` (what \"go\" carries); for a job of one process, or `alone` "
        "(this process's own channel outside a job), a channel without a listener. Every "
        "setting comes from `spec` (the process count and hosts, the unreachable timeout, "
        "on_peer_failure, the stall watchdog, the verdict file). `board`: this process's "
        "StopBoard (stop signals, should_stop, barriers).");
  m.def("join_liveness", &JoinLivenessPy, nb::arg("spec"), nb::arg("board").none(),
        nb::arg("roll_call"), nb::kw_only(), nb::arg("join_timeout") = 5.0,
        nb::arg("exit_flush_seconds") = 1.0, nb::keep_alive<0, 2>(),
        "Another process, after \"go\": connects to process 0's hub at the address that "
        "answered `roll_call` (run_worker's result), on the port \"go\" announced, and is "
        "admitted with the nonce \"go\" carried (GIL released); raises "
        "CoordinatorUnreachableError when it cannot. Settings come from `spec`, as for "
        "start_liveness_hub.");
}

}  // namespace bindings
}  // namespace kdist
