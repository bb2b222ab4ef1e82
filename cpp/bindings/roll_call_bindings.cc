#include "roll_call_bindings.h"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/deadline.h"
#include "base/status.h"
#include "base/wire.h"
#include "casters.h"
#include "config/cluster_spec.h"
#include "errors.h"
#include "net/address.h"
#include "net/socket.h"
#include "python_hooks.h"
#include "roll_call/consistency.h"
#include "roll_call/coordinator.h"
#include "roll_call/roll_call_options.h"
#include "roll_call/roll_call_wire.h"
#include "roll_call/worker.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::ProgressCallback;
using bindings::PythonHooks;
using bindings::RaiseIfError;
using bindings::ValueOrRaise;

// An environment fingerprint as Python passes it: (name, value, must_match) entries.
using EnvironmentEntries = std::vector<std::tuple<std::string, std::string, bool>>;

RollCallOptions Options(const Deadline& deadline, double progress_interval) {
  RollCallOptions options;
  options.deadline = deadline;
  options.progress_interval = SecondsToNanos(progress_interval);
  return options;
}

// This process's fingerprint into the options (compared by process 0 under the
// spec's policy) and into its hello.
void ApplyEnvironment(const ClusterSpec& spec, const EnvironmentEntries& entries,
                      RollCallOptions& options, Hello& own) {
  for (const auto& [name, value, must_match] : entries) {
    options.environment.push_back({name, value, must_match});
  }
  RaiseIfError(ValidateFingerprint(options.environment));
  options.consistency = spec.consistency.value;
  own.environment = EncodeFingerprint(options.environment);
}

Address CoordinatorOrRaise(const ClusterSpec& spec) {
  const std::optional<Address> coordinator = spec.coordinator();
  if (!coordinator) {
    RaiseIfError(InvalidArgument("the roll call needs a coordinator address; this ClusterSpec has "
                                 "none (num_processes=1?)"));
  }
  return *coordinator;
}

// Where process 0 binds: JAX_COORDINATOR_BIND_ADDRESS's endpoint, or nullopt
// (every interface, on the coordinator's port).
std::optional<Endpoint> BindEndpoint(const ClusterSpec& spec) {
  const std::optional<Address>& bind = spec.coordinator_bind_address.value;
  if (!bind) return std::nullopt;
  Result<Endpoint> endpoint = EndpointFromLiteral(bind->host, bind->port);
  RaiseIfError(endpoint.status());
  return *endpoint;
}

// The port process 0 listens on.
uint16_t BindPort(const ClusterSpec& spec, const Address& coordinator) {
  const std::optional<Address>& bind = spec.coordinator_bind_address.value;
  return bind ? bind->port : coordinator.port;
}

Listener BindCoordinatorPortPy(const ClusterSpec& spec) {
  const Address coordinator = CoordinatorOrRaise(spec);
  RollCallOptions options;
  options.listen_backlog = ListenBacklog(spec.num_processes.value);
  RealClock clock;
  Result<Listener> listener =
      BindCoordinatorPort(coordinator.port, options, clock, BindEndpoint(spec));
  RaiseIfError(listener.status());
  return std::move(listener).value();
}

RollCallSummary RunCoordinatorPy(const ClusterSpec& spec, const std::string& jax_version,
                                 const std::string& host, int64_t pid, const JobShared& shared,
                                 Listener* listener, const Deadline& deadline,
                                 std::optional<ProgressCallback> progress,
                                 double progress_interval, const EnvironmentEntries& environment) {
  const Address coordinator = CoordinatorOrRaise(spec);
  Hello own = MakeHello(spec, Identity{jax_version, host, pid});
  RollCallOptions options = Options(deadline, progress_interval);
  options.listen_backlog = ListenBacklog(spec.num_processes.value);
  ApplyEnvironment(spec, environment, options, own);
  options.process_hosts = spec.process_hosts.value;
  const uint16_t bind_port = BindPort(spec, coordinator);
  if (listener != nullptr && (!listener->fd.valid() || listener->port != bind_port)) {
    RaiseIfError(InvalidArgument("the listener passed to run_coordinator is closed or on port " +
                                 std::to_string(listener->port) + " instead of " +
                                 std::to_string(bind_port)));
  }
  PythonHooks hooks(std::move(progress));
  hooks.Install(options);
  RealClock clock;
  const std::optional<Endpoint> bind_at = BindEndpoint(spec);
  Result<RollCallSummary> result = Internal("not run");
  {
    nb::gil_scoped_release release;
    if (listener != nullptr) {
      result = RunCoordinatorOn(std::move(*listener), own, shared, options, clock);
    } else {
      Result<Listener> bound = BindCoordinatorPort(coordinator.port, options, clock, bind_at);
      result = bound.ok() ? RunCoordinatorOn(std::move(bound).value(), own, shared, options, clock)
                          : Result<RollCallSummary>(bound.status());
    }
  }
  hooks.Finish(result.status());
  return std::move(result).value();
}

WorkerResult RunWorkerPy(const ClusterSpec& spec, const std::string& jax_version,
                         const std::string& host, int64_t pid, const Deadline& deadline,
                         std::optional<ProgressCallback> progress, double progress_interval,
                         std::optional<uint64_t> seed, const EnvironmentEntries& environment) {
  const Address coordinator = CoordinatorOrRaise(spec);
  Hello own = MakeHello(spec, Identity{jax_version, host, pid});
  RollCallOptions options = Options(deadline, progress_interval);
  ApplyEnvironment(spec, environment, options, own);
  options.backoff = WorkerBackoff(own.num_processes);
  options.seed = seed ? *seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  PythonHooks hooks(std::move(progress));
  hooks.Install(options);
  RealClock clock;
  Result<WorkerResult> result = Internal("not run");
  {
    nb::gil_scoped_release release;
    result = RunWorker(own, coordinator, options, clock);
  }
  hooks.Finish(result.status());
  return std::move(result).value();
}

// JAX's service is where the roll call was answered: the endpoint run_worker connected
// to, as it is (never its text parsed again).
void WaitForServicePy(const WorkerResult& roll_call, int64_t num_processes,
                      const Deadline& deadline, std::optional<ProgressCallback> progress,
                      double progress_interval) {
  RollCallOptions options = Options(deadline, progress_interval);
  options.probe_interval = ServiceProbeInterval(num_processes);
  PythonHooks hooks(std::move(progress));
  hooks.Install(options);
  RealClock clock;
  Status status;
  {
    nb::gil_scoped_release release;
    status = WaitForCoordinatorService(roll_call.connected_to, options, clock);
  }
  hooks.Finish(status);
}

}  // namespace

namespace bindings {

void BindRollCall(nb::module_& m) {
  nb::class_<Deadline>(m, "Deadline",
                       "The deadline of a start: a budget of seconds from the moment it was "
                       "made, on the monotonic clock. initialize() makes one; every wait of the "
                       "start (the roll call, the service wait, JAX's initialize) takes it.")
      .def(
          "__init__",
          [](Deadline* self, double timeout_seconds) {
            RealClock clock;
            new (self) Deadline(Deadline::StartingNow(clock, SecondsToNanos(timeout_seconds)));
          },
          nb::arg("timeout_seconds"), "`timeout_seconds` from now.")
      .def_prop_ro(
          "budget", [](const Deadline& d) { return NanosToSeconds(d.budget()); },
          "The whole budget, in seconds.")
      .def(
          "remaining",
          [](const Deadline& d) {
            RealClock clock;
            return NanosToSeconds(d.Remaining(clock));
          },
          "Seconds left (0.0 once it passed).")
      .def(
          "elapsed",
          [](const Deadline& d) {
            RealClock clock;
            return NanosToSeconds(d.Elapsed(clock));
          },
          "Seconds since it was made.");

  nb::class_<Listener>(m, "CoordinatorListener",
                       "Process 0's listener on the coordinator port, bound and not yet used.")
      .def_prop_ro("port", [](const Listener& l) { return l.port; })
      .def_prop_ro("bound", [](const Listener& l) { return l.bound; },
                   "What was bound, e.g. '[::]:5000'.")
      .def_prop_ro("closed", [](const Listener& l) { return !l.fd.valid(); })
      .def("close", [](Listener& l) { l.fd.Close(); }, "Gives the port back.");

  m.def("bind_coordinator_port", &BindCoordinatorPortPy, nb::arg("spec"),
        "Binds the coordinator port as JAX will (every interface, never shared); raises "
        "PortInUseError naming the port and its holder when it is taken.");
  nb::class_<JobShared>(m, "JobShared",
                        "What process 0 decides for the whole job; the roll call's \"go\" "
                        "carries it to every process.")
      .def(nb::init<>())
      .def_rw("seed", &JobShared::seed,
              "The job-wide random seed, in [0, 2**32) (Keras's initialize agrees on one).")
      .def_rw("liveness_port", &JobShared::liveness_port,
              "Process 0's liveness channel port; 0: no channel.")
      .def_rw("liveness_nonce", &JobShared::liveness_nonce,
              "What a process presents to join the liveness channel (never printed).")
      .def_rw("consistency_notes", &JobShared::consistency_notes,
              "The differences between the processes' environments that process 0 let pass, "
              "one line each ('' when none): every process warns with them.")
      .def("__repr__", [](const JobShared& s) {
        return "JobShared(seed=" + std::to_string(s.seed) +
               ", liveness_port=" + std::to_string(s.liveness_port) + ")";
      });

  nb::class_<Hello>(m, "Hello",
                    "What a process said of itself in the roll call (its token is never shown).")
      .def_ro("process_id", &Hello::process_id)
      .def_ro("num_processes", &Hello::num_processes)
      .def_ro("fingerprint", &Hello::fingerprint, "Its ClusterSpec.fingerprint.")
      .def_ro("coordinator", &Hello::coordinator,
              "The coordinator address as this process wrote it.")
      .def_ro("num_processes_source", &Hello::num_processes_source)
      .def_ro("coordinator_source", &Hello::coordinator_source)
      .def_ro("jax_version", &Hello::jax_version)
      .def_ro("host", &Hello::host, "Its host name.")
      .def_ro("pid", &Hello::pid);

  nb::class_<RollCallSummary>(m, "RollCallSummary", "Process 0's roll call that ended in \"go\".")
      .def_ro("members", &RollCallSummary::members, "Every process but 0, by id.")
      .def_ro("dropped", &RollCallSummary::dropped,
              "Connections dropped because they did not speak the protocol.")
      .def_prop_ro(
          "seconds", [](const RollCallSummary& r) { return NanosToSeconds(r.elapsed); },
          "Seconds since initialize() began, when every process was told \"go\".")
      .def_ro("listened_on", &RollCallSummary::listened_on, "What was bound: '[::]:5000'.")
      .def_ro("consistency_notes", &RollCallSummary::consistency_notes,
              "The environment differences let pass (also in \"go\"), one line each.");

  nb::enum_<FrameType>(m, "FrameType", "The kind of a roll call frame.")
      .value("hello", FrameType::kHello, "A process to process 0: who it is.")
      .value("go", FrameType::kGo, "Process 0 to all: every process is present.")
      .value("reject", FrameType::kReject, "Process 0 to one or all: the roll call failed.")
      .value("status", FrameType::kStatus, "Process 0 to waiting processes: a progress line.")
      .value("challenge", FrameType::kChallenge,
             "Process 0 to a new connection, first: the nonce its hello's MAC covers.");

  nb::enum_<StatusCode>(m, "StatusCode", "The core's failure codes.")
      .value("ok", StatusCode::kOk)
      .value("invalid_argument", StatusCode::kInvalidArgument)
      .value("not_found", StatusCode::kNotFound)
      .value("already_exists", StatusCode::kAlreadyExists)
      .value("unavailable", StatusCode::kUnavailable)
      .value("deadline_exceeded", StatusCode::kDeadlineExceeded)
      .value("failed_precondition", StatusCode::kFailedPrecondition)
      .value("internal", StatusCode::kInternal);

  nb::class_<Reply>(m, "Reply", "One reply frame from process 0.")
      .def_ro("type", &Reply::type, "go, reject or status.")
      .def_ro("code", &Reply::code, "reject: the failure's code.")
      .def_ro("message", &Reply::message,
              "reject: what went wrong; status: a progress line.")
      .def_ro("host", &Reply::host, "Process 0's host name.")
      .def_ro("pid", &Reply::pid, "Process 0's pid.")
      .def_ro("jax_version", &Reply::jax_version, "Process 0's JAX version.")
      .def_ro("shared", &Reply::shared, "go: what the whole job shares.");

  nb::class_<WorkerResult>(m, "WorkerResult",
                           "Another process's roll call that ended in \"go\".")
      .def_ro("go", &WorkerResult::go, "Process 0's \"go\": its host, pid and JAX version.")
      .def_ro("attempts", &WorkerResult::attempts,
              "Connection attempts, the successful one included.")
      .def_prop_ro(
          "seconds", [](const WorkerResult& r) { return NanosToSeconds(r.elapsed); },
          "Seconds since initialize() began, when \"go\" arrived.")
      .def_prop_ro(
          "connected_to", [](const WorkerResult& r) { return r.connected_to.ToString(); },
          "The coordinator endpoint that answered, an IP literal host:port.");

  m.def("run_coordinator", &RunCoordinatorPy, nb::arg("spec"), nb::arg("jax_version"),
        nb::arg("host"), nb::arg("pid"), nb::kw_only(), nb::arg("shared"),
        nb::arg("listener").none() = nb::none(), nb::arg("deadline"),
        nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
        nb::arg("environment") = EnvironmentEntries{},
        "Process 0's roll call on the coordinator port (on `listener` when given, which it "
        "closes; else it binds the port), GIL released while it waits; its \"go\" carries "
        "`shared` to every process. `environment`: this process's fingerprint, (name, value, "
        "must_match) entries that every hello's is compared with under spec.consistency. It waits "
        "until `deadline`, counting its progress lines from the deadline's start. Raises PortInUseError, RendezvousError, "
        "RendezvousTimeoutError, or KeyboardInterrupt on Ctrl-C.");
  m.def("run_worker", &RunWorkerPy, nb::arg("spec"), nb::arg("jax_version"), nb::arg("host"),
        nb::arg("pid"), nb::kw_only(), nb::arg("deadline"),
        nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
        nb::arg("seed").none() = nb::none(), nb::arg("environment") = EnvironmentEntries{},
        "Another process's side of the roll call (GIL released while it waits). Raises "
        "CoordinatorUnreachableError, RendezvousError, RendezvousTimeoutError, or "
        "KeyboardInterrupt on Ctrl-C.");
  m.def("wait_for_coordinator_service", &WaitForServicePy, nb::arg("roll_call"), nb::kw_only(),
        nb::arg("num_processes"), nb::arg("deadline"), nb::arg("progress").none() = nb::none(),
        nb::arg("progress_interval") = 5.0,
        "Waits until JAX's service accepts TCP connections where `roll_call` (run_worker's "
        "result) was answered, probing every ServiceProbeInterval(num_processes); raises RendezvousTimeoutError at the deadline.");
  m.attr("PROTOCOL_VERSION") = kProtocolVersion;
}

}  // namespace bindings
}  // namespace kdist
