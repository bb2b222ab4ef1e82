// kdist._core: the core as the package sees it. Every result crosses as a
// bound class with read-only fields (its stub is generated from this file),
// every failed Status as a kdist exception (errors.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <unistd.h>

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "clock.h"
#include "cluster_spec.h"
#include "consistency.h"
#include "coordinator.h"
#include "detectors.h"
#include "environment.h"
#include "errors.h"
#include "roll_call_wire.h"
#include "liveness_book.h"
#include "liveness_connection.h"
#include "liveness_hub.h"
#include "liveness_spoke.h"
#include "liveness_wire.h"
#include "probe.h"
#include "roll_call_options.h"
#include "resolve.h"
#include "socket.h"
#include "status.h"
#include "text.h"
#include "worker.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::RaiseIfError;
using bindings::ValueOrRaise;

// A progress callback: called with one line at a time.
using ProgressCallback = nb::typed<nb::callable, void(std::string)>;

std::vector<std::string> AddressStrings(const std::vector<Address>& addresses) {
  std::vector<std::string> out;
  out.reserve(addresses.size());
  for (const Address& address : addresses) out.push_back(address.ToString());
  return out;
}

std::map<std::string, std::string> Sources(const ClusterSpec& spec) {
  std::map<std::string, std::string> sources = {
      {"job_addresses", spec.job_addresses.source.empty() ? "not set" : spec.job_addresses.source},
      {"num_processes", spec.num_processes.source},
      {"process_id", spec.process_id.source},
      {"timeout", spec.timeout_seconds.source},
      {"preflight", spec.preflight.source},
      {"cluster_detection", spec.cluster_detection.source},
      {"local_device_ids", spec.local_device_ids.source},
      {"coordinator_bind_address", spec.coordinator_bind_address.source},
      {"heartbeat_timeout", spec.heartbeat_timeout_seconds.source},
      {"shutdown_timeout", spec.shutdown_timeout_seconds.source},
      {"on_peer_failure", spec.on_peer_failure.source},
      {"consistency", spec.consistency.source}};
  if (spec.seed.value) sources["seed"] = spec.seed.source;
  return sources;
}

std::string IdList(const std::optional<std::vector<int64_t>>& ids) {
  if (!ids) return "None";
  std::string out = "[";
  for (size_t i = 0; i < ids->size(); ++i) out += (i ? ", " : "") + std::to_string((*ids)[i]);
  return out + "]";
}

// A detection's values, in the order of its fields, by setting name.
std::vector<std::pair<std::string, DetectedValue>> DetectedValues(const Detection& d) {
  std::vector<std::pair<std::string, DetectedValue>> values;
  const std::pair<const char*, const std::optional<DetectedValue>*> fields[] = {
      {"job_addresses", &d.job_addresses}, {"num_processes", &d.num_processes},
      {"process_id", &d.process_id},       {"local_rank", &d.local_rank},
      {"local_size", &d.local_size}};
  for (const auto& [name, value] : fields) {
    if (*value) values.emplace_back(name, **value);
  }
  return values;
}

// A detection's hints (what it cannot give and what to set), by setting name.
std::vector<std::pair<std::string, std::string>> DetectedHints(const Detection& d) {
  std::vector<std::pair<std::string, std::string>> hints;
  if (!d.job_addresses_hint.empty()) hints.emplace_back("job_addresses", d.job_addresses_hint);
  if (!d.num_processes_hint.empty()) hints.emplace_back("num_processes", d.num_processes_hint);
  if (!d.process_id_hint.empty()) hints.emplace_back("process_id", d.process_id_hint);
  return hints;
}

// The table entry of the detector that made `report`.
Detector DetectorOf(const DetectorReport& report) {
  const Detector* detector = FindDetector(report.name);
  if (detector == nullptr) RaiseIfError(Internal("no detector named " + Quote(report.name)));
  return *detector;
}

std::string Repr(const ClusterSpec& spec) {
  std::string addresses;
  for (const std::string& a : AddressStrings(spec.job_addresses.value)) {
    addresses += (addresses.empty() ? "'" : ", '") + a + "'";
  }
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", spec.timeout_seconds.value);
  return "ClusterSpec(job_addresses=[" + addresses +
         "], num_processes=" + std::to_string(spec.num_processes.value) +
         ", process_id=" + std::to_string(spec.process_id.value) + ", timeout=" + timeout +
         ", preflight=" + (spec.preflight.value ? "True" : "False") + ", cluster_detection='" +
         spec.cluster_detection.value + "', scheduler=" +
         (spec.scheduler ? "'" + *spec.scheduler + "'" : std::string("None")) +
         ", local_device_ids=" + IdList(spec.local_device_ids.value) + ")";
}

// The Python side of a roll call's hooks. The core calls them with the GIL
// released; each takes the GIL for the moment it runs Python. A Python
// exception raised inside (KeyboardInterrupt from a signal handler, an error
// from a logging handler) stops the roll call and is re-raised by Finish().
class PythonHooks {
 public:
  explicit PythonHooks(std::optional<ProgressCallback> progress)
      : progress_(std::move(progress)) {}

  void Install(RollCallOptions& options) {
    if (progress_) {
      options.progress = [this](const std::string& line) {
        if (error_) return;
        nb::gil_scoped_acquire gil;
        try {
          (*progress_)(line);
        } catch (nb::python_error& e) {
          error_.emplace(std::move(e));
        }
      };
    }
    options.interrupted = [this]() -> Status {
      if (error_) return Internal("stopped by a Python exception");
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        error_.emplace();  // takes the pending exception (KeyboardInterrupt)
        return Internal("interrupted by a signal");
      }
      return Status::Ok();
    };
  }

  // With the GIL held: re-raises a Python exception caught in a hook, else
  // raises the kdist exception for `status`.
  void Finish(const Status& status) {
    if (error_) {
      nb::python_error error = std::move(*error_);
      error_.reset();
      throw error;
    }
    RaiseIfError(status);
  }

 private:
  std::optional<ProgressCallback> progress_;
  std::optional<nb::python_error> error_;
};

// An environment fingerprint as Python passes it: (name, value, must_match) entries.
using EnvironmentEntries = std::vector<std::tuple<std::string, std::string, bool>>;

RollCallOptions Options(double timeout, double elapsed, double progress_interval) {
  RollCallOptions options;
  options.timeout = SecondsToNanos(timeout);
  options.already_elapsed = SecondsToNanos(elapsed);
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
  options.consistency = ValueOrRaise(ParseConsistencyPolicy(spec.consistency.value));
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
                                 Listener* listener, double timeout, double elapsed,
                                 std::optional<ProgressCallback> progress,
                                 double progress_interval, const EnvironmentEntries& environment) {
  const Address coordinator = CoordinatorOrRaise(spec);
  Hello own = MakeHello(spec, Identity{jax_version, host, pid});
  RollCallOptions options = Options(timeout, elapsed, progress_interval);
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
                         const std::string& host, int64_t pid, double timeout, double elapsed,
                         std::optional<ProgressCallback> progress, double progress_interval,
                         std::optional<uint64_t> seed, const EnvironmentEntries& environment) {
  const Address coordinator = CoordinatorOrRaise(spec);
  Hello own = MakeHello(spec, Identity{jax_version, host, pid});
  RollCallOptions options = Options(timeout, elapsed, progress_interval);
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

void WaitForServicePy(const std::string& endpoint_text, int64_t num_processes, double timeout,
                      double elapsed, std::optional<ProgressCallback> progress,
                      double progress_interval) {
  Result<Address> address = ParseAddress(endpoint_text);
  RaiseIfError(address.status());
  Result<Endpoint> endpoint = EndpointFromLiteral(address->host, address->port);
  RaiseIfError(endpoint.status());
  RollCallOptions options = Options(timeout, elapsed, progress_interval);
  options.probe_interval = ServiceProbeInterval(num_processes);
  PythonHooks hooks(std::move(progress));
  hooks.Install(options);
  RealClock clock;
  Status status;
  {
    nb::gil_scoped_release release;
    status = WaitForCoordinatorService(*endpoint, options, clock);
  }
  hooks.Finish(status);
}

// The address parsers and the connect probe, as the command line and `kdist
// doctor` use them. A failure is kdist.ConfigError with the core's reason.

Address ParseAddressPy(const std::string& text) { return ValueOrRaise(ParseAddress(text)); }

uint16_t ParsePortPy(const std::string& text) { return ValueOrRaise(ParsePort(text)); }

double ParseTimeoutSecondsPy(const std::string& text) {
  return ValueOrRaise(ParseTimeoutSeconds(text));
}

ProbeResult ProbeTcpPy(const std::string& address_text, double timeout) {
  const Address address = ValueOrRaise(ParseAddress(address_text));
  RealClock clock;
  nb::gil_scoped_release release;
  return ProbeTcp(address, SecondsToNanos(timeout), clock);
}

// A TCP port that was free a moment ago where the coordinator binds: the IPv6
// wildcard address, dual-stack (so every IPv4 and IPv6 address, loopback
// included), or 0.0.0.0 where there is no IPv6.
uint16_t FreePortPy() {
  Result<Listener> listener = ListenOnAllInterfaces(0, 1);
  RaiseIfError(listener.status());
  return listener->port;
}

// --- The liveness channel -----------------------------------------------------------------

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
}  // namespace kdist

NB_MODULE(_core, m) {
  using namespace kdist;
  m.doc() = "kdist's compiled core: configuration resolution, scheduler detection, the "
            "pre-flight roll call and the liveness channel.";

  nb::class_<ClusterSpec>(m, "ClusterSpec",
                          "The resolved configuration of this process; each value keeps its "
                          "source in `sources`.")
      .def_prop_ro("job_addresses",
                   [](const ClusterSpec& s) { return AddressStrings(s.job_addresses.value); },
                   "Every job address as host:port (IPv6 in brackets); the first is the "
                   "coordinator. Empty for a single process without a coordinator.")
      .def_prop_ro("coordinator_address",
                   [](const ClusterSpec& s) -> std::optional<std::string> {
                     if (auto c = s.coordinator()) return c->ToString();
                     return std::nullopt;
                   },
                   "The coordinator's host:port, or None.")
      .def_prop_ro("coordinator_bind_address",
                   [](const ClusterSpec& s) -> std::optional<std::string> {
                     if (const auto& b = s.coordinator_bind_address.value) return b->ToString();
                     return std::nullopt;
                   },
                   "Where process 0 binds the coordinator port (JAX_COORDINATOR_BIND_ADDRESS), "
                   "or None: every interface, on the coordinator's port.")
      .def_prop_ro("num_processes", [](const ClusterSpec& s) { return s.num_processes.value; })
      .def_prop_ro("process_id", [](const ClusterSpec& s) { return s.process_id.value; })
      .def_prop_ro("timeout", [](const ClusterSpec& s) { return s.timeout_seconds.value; },
                   "Deadline of initialize() in seconds.")
      .def_prop_ro("preflight", [](const ClusterSpec& s) { return s.preflight.value; })
      .def_prop_ro("heartbeat_timeout",
                   [](const ClusterSpec& s) { return s.heartbeat_timeout_seconds.value; },
                   "JAX's heartbeat timeout in whole seconds (KDIST_HEARTBEAT_TIMEOUT; JAX's "
                   "default 100): a process silent this long is declared dead by JAX.")
      .def_prop_ro("shutdown_timeout",
                   [](const ClusterSpec& s) { return s.shutdown_timeout_seconds.value; },
                   "JAX's shutdown timeout in whole seconds (KDIST_SHUTDOWN_TIMEOUT; JAX's "
                   "default 300): the bound of its shutdown barrier.")
      .def_prop_ro("on_peer_failure",
                   [](const ClusterSpec& s) { return s.on_peer_failure.value; },
                   "'exit' (default; KDIST_ON_PEER_FAILURE): this process stops when another "
                   "fails or dies; 'ignore': it prints the line and goes on.")
      .def_prop_ro("consistency", [](const ClusterSpec& s) { return s.consistency.value; },
                   "'warn' (default; KDIST_CONSISTENCY): the roll call stops the job when the "
                   "processes' environments differ in a way that crashes or corrupts it (jax, "
                   "jaxlib, device platform or count) and warns about other differences; "
                   "'strict': any difference stops it; 'off': nothing is compared.")
      .def_prop_ro("cluster_detection",
                   [](const ClusterSpec& s) { return s.cluster_detection.value; })
      .def_prop_ro("scheduler",
                   [](const ClusterSpec& s) { return s.scheduler; },
                   "The scheduler detector that recognised this environment ('slurm', "
                   "'torchrun', ...), even when explicit settings left it nothing to fill; "
                   "None when none did.")
      .def_prop_ro("local_device_ids",
                   [](const ClusterSpec& s) { return s.local_device_ids.value; },
                   "The local device ids handed to jax.distributed.initialize; None: every "
                   "device the process sees. Set by KDIST_LOCAL_DEVICE_IDS ('all', 'auto' for "
                   "the scheduler's suggestion, or ids '0,1').")
      .def_prop_ro("suggested_local_device_ids",
                   [](const ClusterSpec& s) { return s.suggested_local_device_ids; },
                   "What the detected scheduler suggests (one device per process, by local "
                   "rank), applied only with KDIST_LOCAL_DEVICE_IDS=auto; None: keep every "
                   "device.")
      .def_prop_ro("local_devices_reason",
                   [](const ClusterSpec& s) { return s.local_devices_reason; },
                   "Why the suggestion is what it is, in words.")
      .def_prop_ro("local_devices_suggestion_applied",
                   [](const ClusterSpec& s) { return s.local_devices_suggestion_applied; },
                   "Whether local_device_ids is the scheduler's suggestion "
                   "(KDIST_LOCAL_DEVICE_IDS=auto).")
      .def_prop_ro("seed", [](const ClusterSpec& s) { return s.seed.value; },
                   "The job-wide random seed initialize() agreed on (the same in every "
                   "process unless the program set its own), or None before initialize(); "
                   "sources['seed'] says where it came from.")
      .def(
          "with_seed",
          [](const ClusterSpec& s, int64_t seed, const std::string& source) {
            ClusterSpec copy = s;
            copy.seed = {seed, source};
            return copy;
          },
          nb::arg("seed"), nb::arg("source"),
          "A copy of this spec with the job seed set, and where it came from.")
      .def_ro("compared_environment", &ClusterSpec::compared_environment,
              "This process's environment fingerprint as the roll call compared it, (name, "
              "value) pairs; empty when nothing was compared (consistency 'off', no roll "
              "call, or before initialize()).")
      .def_ro("consistency_notes", &ClusterSpec::consistency_notes,
              "The differences between the processes' environments that the roll call let "
              "pass, one line each ('' when none).")
      .def(
          "with_consistency",
          [](const ClusterSpec& s, std::vector<std::pair<std::string, std::string>> compared,
             const std::string& notes) {
            ClusterSpec copy = s;
            copy.compared_environment = std::move(compared);
            copy.consistency_notes = notes;
            return copy;
          },
          nb::arg("compared"), nb::arg("notes"),
          "A copy of this spec with what the roll call compared and let pass.")
      .def_prop_ro("sources", &Sources,
                   "Where each value came from: 'argument', an environment variable's name, "
                   "a detector and its variables ('slurm (SLURM_PROCID)'), 'job_addresses' "
                   "(counted from the list) or 'default'.")
      .def_prop_ro("fingerprint", &ClusterSpec::Fingerprint,
                   "Digest of the settings every process of the job must share.")
      .def("same_job_and_process", &ClusterSpec::SameJobAndProcess, nb::arg("other"),
           "Whether `other` has the same addresses, process count and process id.")
      .def("__repr__", &Repr);

  m.def(
      "resolve",
      [](std::optional<std::string> job_addresses, std::optional<std::string> num_processes,
         std::optional<std::string> process_id, std::optional<std::string> timeout,
         std::optional<std::string> cluster_detection, std::optional<std::string> preflight,
         const std::map<std::string, std::string>& environment,
         std::optional<std::string> heartbeat_timeout,
         std::optional<std::string> shutdown_timeout,
         std::optional<std::string> on_peer_failure, std::optional<std::string> consistency) {
        Request request{std::move(job_addresses),     std::move(num_processes),
                        std::move(process_id),        std::move(timeout),
                        std::move(cluster_detection), std::move(preflight),
                        std::move(heartbeat_timeout), std::move(shutdown_timeout),
                        std::move(on_peer_failure),   std::move(consistency)};
        Environment env(environment.begin(), environment.end());
        return ValueOrRaise(Resolve(request, env));
      },
      nb::arg("job_addresses").none(), nb::arg("num_processes").none(),
      nb::arg("process_id").none(), nb::arg("timeout").none(),
      nb::arg("cluster_detection").none(), nb::arg("preflight").none(), nb::arg("environment"),
      nb::arg("heartbeat_timeout").none() = nb::none(),
      nb::arg("shutdown_timeout").none() = nb::none(),
      nb::arg("on_peer_failure").none() = nb::none(),
      nb::arg("consistency").none() = nb::none(),
      "Resolves initialize()'s settings (as text) against an environment snapshot; raises "
      "kdist.ConfigError naming the bad value and its source.");

  m.def("cluster_detection_modes", &ClusterDetectionModes,
        "The values cluster_detection accepts: 'auto', 'none', then every detector's name.");

  nb::class_<Detector>(m, "Detector", "One scheduler detector of the table 'auto' tries.")
      .def_ro("name", &Detector::name,
              "The public value of cluster_detection / KDIST_CLUSTER_DETECTION: 'slurm'.")
      .def_ro("summary", &Detector::summary, "What it reads, for help texts and `kdist doctor`.")
      .def_ro("presence", &Detector::presence,
              "The variables whose presence means this scheduler is here.")
      .def_ro("variables", &Detector::variables,
              "Every variable it reads, the coordinator port overrides included.");

  m.def(
      "cluster_detectors", [] { return Detectors(); },
      "The scheduler detectors, in the order 'auto' tries them.");

  nb::class_<DetectedValue>(m, "DetectedValue", "One value a detector found.")
      .def_ro("text", &DetectedValue::text,
              "The value as text, parsed by resolve() like any other setting: '3', "
              "'node01:61234'.")
      .def_ro("variables", &DetectedValue::variables,
              "Where it came from: 'SLURM_PROCID', 'SLURM_STEP_NODELIST, SLURM_JOB_ID'.")
      .def_ro("shown", &DetectedValue::shown,
              "How messages show it: SLURM_PROCID=\"3\".");

  nb::class_<Detection>(m, "Detection", "What a present detector found.")
      .def_ro("detector", &Detection::detector, "The detector's name: 'slurm'.")
      .def_ro("job_addresses", &Detection::job_addresses,
              "The coordinator's address, or every process's (the first: the coordinator).")
      .def_ro("num_processes", &Detection::num_processes)
      .def_ro("process_id", &Detection::process_id)
      .def_ro("local_rank", &Detection::local_rank,
              "This process's index among the job's processes on its host.")
      .def_ro("local_size", &Detection::local_size,
              "The number of the job's processes on its host.")
      .def_ro("job_addresses_hint", &Detection::job_addresses_hint,
              "Why job_addresses is left out and what to set instead; '' when found.")
      .def_ro("num_processes_hint", &Detection::num_processes_hint)
      .def_ro("process_id_hint", &Detection::process_id_hint)
      .def_prop_ro("values", &DetectedValues,
                   "The values found, as (setting, value) pairs in field order.")
      .def_prop_ro("hints", &DetectedHints,
                   "The hints, as (setting, hint) pairs in field order, for the values left "
                   "out.");

  nb::class_<DetectorReport>(m, "DetectorReport",
                             "What one detector makes of an environment snapshot.")
      .def_ro("name", &DetectorReport::name, "The detector's name.")
      .def_prop_ro("detector", &DetectorOf, "The detector's table entry.")
      .def_prop_ro(
          "present",
          [](const DetectorReport& r) { return !r.status.ok() || r.detection.has_value(); },
          "Whether its variables are set (even when they are partial or malformed).")
      .def_prop_ro(
          "error",
          [](const DetectorReport& r) -> std::optional<std::string> {
            if (r.status.ok()) return std::nullopt;
            return r.status.message();
          },
          "Why its variables cannot be used (partial or malformed), or None.")
      .def_ro("detection", &DetectorReport::detection,
              "What it found when present and valid, else None.");

  m.def(
      "detect_all",
      [](const std::map<std::string, std::string>& environment) {
        return DetectAll(Environment(environment.begin(), environment.end()));
      },
      nb::arg("environment"),
      "What every detector makes of an environment snapshot, in table order.");
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
        nb::arg("listener").none() = nb::none(), nb::arg("timeout"), nb::arg("elapsed") = 0.0,
        nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
        nb::arg("environment") = EnvironmentEntries{},
        "Process 0's roll call on the coordinator port (on `listener` when given, which it "
        "closes; else it binds the port), GIL released while it waits; its \"go\" carries "
        "`shared` to every process. `environment`: this process's fingerprint, (name, value, "
        "must_match) entries that every hello's is compared with under spec.consistency. It has `timeout` seconds in all of which `elapsed` were "
        "spent before the call. Raises PortInUseError, RendezvousError, "
        "RendezvousTimeoutError, or KeyboardInterrupt on Ctrl-C.");
  m.def("run_worker", &RunWorkerPy, nb::arg("spec"), nb::arg("jax_version"), nb::arg("host"),
        nb::arg("pid"), nb::kw_only(), nb::arg("timeout"), nb::arg("elapsed") = 0.0,
        nb::arg("progress").none() = nb::none(), nb::arg("progress_interval") = 5.0,
        nb::arg("seed").none() = nb::none(), nb::arg("environment") = EnvironmentEntries{},
        "Another process's side of the roll call (GIL released while it waits). Raises "
        "CoordinatorUnreachableError, RendezvousError, RendezvousTimeoutError, or "
        "KeyboardInterrupt on Ctrl-C.");
  m.def("wait_for_coordinator_service", &WaitForServicePy, nb::arg("endpoint"), nb::kw_only(),
        nb::arg("num_processes"), nb::arg("timeout"), nb::arg("elapsed") = 0.0, nb::arg("progress").none() = nb::none(),
        nb::arg("progress_interval") = 5.0,
        "Waits until `endpoint` (an IP literal host:port, WorkerResult.connected_to) accepts "
        "TCP connections, probing every ServiceProbeInterval(num_processes); raises RendezvousTimeoutError at the deadline.");
  m.attr("PROTOCOL_VERSION") = kProtocolVersion;

  nb::enum_<HostKind>(m, "HostKind", "What an address's host part is.")
      .value("ipv4", HostKind::kIPv4)
      .value("ipv6", HostKind::kIPv6)
      .value("host_name", HostKind::kName);

  nb::class_<Address>(m, "Address", "A parsed host:port address.")
      .def_ro("host", &Address::host, "The host, without brackets even for IPv6.")
      .def_ro("port", &Address::port)
      .def_ro("kind", &Address::kind)
      .def("__str__", &Address::ToString, "host:port, with an IPv6 host in brackets.");

  m.def("parse_address", &ParseAddressPy, nb::arg("text"),
        "Parses one address: '10.0.0.1:1234', '[fe80::1]:1234', 'node-7:1234'; raises "
        "kdist.ConfigError with the reason.");
  m.def("parse_port", &ParsePortPy, nb::arg("text"),
        "Parses a port, 1..65535 in decimal digits; raises kdist.ConfigError with the reason.");
  m.def("parse_timeout_seconds", &ParseTimeoutSecondsPy, nb::arg("text"),
        "Parses a duration as the command line's options take one: positive seconds, at "
        "most the longest timeout; raises kdist.ConfigError with the expected form.");

  nb::enum_<ProbeState>(m, "ProbeState", "What a connect probe found.")
      .value("listening", ProbeState::kListening, "A program accepts connections there.")
      .value("refused", ProbeState::kRefused, "Nothing listens there.")
      .value("timeout", ProbeState::kTimeout, "No answer before the timeout.")
      .value("unresolved", ProbeState::kUnresolved, "The host name does not resolve.")
      .value("unreachable", ProbeState::kUnreachable, "The network cannot reach the host.");

  nb::class_<ProbeResult>(m, "ProbeResult", "One TCP connect probe.")
      .def_ro("state", &ProbeResult::state)
      .def_ro("detail", &ProbeResult::detail,
              "unresolved: the resolver's message; unreachable: the error; else ''.")
      .def_prop_ro(
          "seconds", [](const ProbeResult& r) { return NanosToSeconds(r.elapsed); },
          "How long the probe took.");

  m.def("probe_tcp", &ProbeTcpPy, nb::arg("address"), nb::arg("timeout"),
        "Connects once to `address` (host:port; a host name is resolved) within `timeout` "
        "seconds, GIL released, and closes at once; raises kdist.ConfigError for a malformed "
        "address.");
  m.def("free_port", &FreePortPy,
        "A TCP port that was free a moment ago on every interface (IPv4 and IPv6, loopback "
        "included), checked as the coordinator binds it.");

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
