#include "config_bindings.h"

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/environment.h"
#include "base/status.h"
#include "base/text.h"
#include "casters.h"
#include "base/clock.h"
#include "config/cluster_spec.h"
#include "config/clusters/gce_metadata.h"
#include "config/detectors.h"
#include "config/resolve.h"
#include "config/tls_settings.h"
#include "errors.h"
#include "stop/stop_signals.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::RaiseIfError;
using bindings::ValueOrRaise;

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
      {"collectives_address", spec.collectives_address.source},
      {"collectives_interface", spec.collectives_interface.source},
      {"heartbeat_timeout", spec.heartbeat_timeout_seconds.source},
      {"shutdown_timeout", spec.shutdown_timeout_seconds.source},
      {"unreachable_timeout", spec.unreachable_timeout.source},
      {"on_peer_failure", spec.on_peer_failure.source},
      {"consistency", spec.consistency.source},
      {"stop_signals", spec.stop_signals.source},
      {"stall_timeout", spec.stall_timeout.source},
      {"restart_count", spec.restart_count.source}};
  // Where a process of `kdist launch --nodes` sits: only what the agent set.
  for (const auto& [name, source] :
       {std::pair{"node_rank", &spec.node_rank.source},
        std::pair{"num_nodes", &spec.num_nodes.source},
        std::pair{"local_process_id", &spec.local_process_id.source},
        std::pair{"job_id", &spec.job_id.source},
        std::pair{"run_id", &spec.run_id.source},
        std::pair{"previous_num_processes", &spec.previous_num_processes.source},
        std::pair{"max_reforms", &spec.max_reforms.source},
        std::pair{"reform_window", &spec.reform_window.source},
        // TLS (KDIST_TLS) and the user's own mTLS settings in JAX's variables: only those set,
        // so a job that sets none keeps the sources it had.
        std::pair{"tls", &spec.tls.source},
        std::pair{"mtls_cert_file", &spec.mtls_cert_file.source},
        std::pair{"mtls_key_file", &spec.mtls_key_file.source},
        std::pair{"mtls_ca_file", &spec.mtls_ca_file.source},
        std::pair{"mtls_peer_uri_prefix", &spec.mtls_peer_uri_prefix.source}}) {
    if (!source->empty() && *source != "default") sources[name] = *source;
  }
  if (spec.seed.value) sources["seed"] = spec.seed.source;
  return sources;
}

std::optional<std::string> Optional(const std::string& value) {
  if (value.empty()) return std::nullopt;
  return value;
}

std::vector<std::string> StopSignalList(const ClusterSpec& spec) {
  std::vector<std::string> names;
  names.reserve(spec.stop_signals.value.size());
  for (int signal_number : spec.stop_signals.value) names.push_back(SignalName(signal_number));
  return names;
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
      {"local_size", &d.local_size},       {"restart_count", &d.restart_count}};
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

// This machine for the platform detectors: its TPU chips (device node names,
// read by kdist._start.accelerators) and its metadata server.
Machine MachineOf(const std::vector<std::string>& tpu_chips, InstanceMetadata& metadata) {
  Machine machine;
  machine.tpu_chips = !tpu_chips.empty();
  for (const std::string& chip : tpu_chips) {
    machine.tpu_chips_shown += (machine.tpu_chips_shown.empty() ? "/dev/" : ", /dev/") + chip;
  }
  machine.metadata = &metadata;
  return machine;
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

}  // namespace

namespace bindings {

void BindConfig(nb::module_& m) {
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
      .def_prop_ro("collectives_address",
                   [](const ClusterSpec& s) -> std::optional<std::string> {
                     if (s.collectives_address.value.empty()) return std::nullopt;
                     return s.collectives_address.value;
                   },
                   "The address JAX's CPU collectives advertise, as the user chose it "
                   "(KDIST_COLLECTIVES_ADDRESS), or None: the address this host reaches the "
                   "coordinator from.")
      .def_prop_ro("collectives_interface",
                   [](const ClusterSpec& s) -> std::optional<std::string> {
                     if (s.collectives_interface.value.empty()) return std::nullopt;
                     return s.collectives_interface.value;
                   },
                   "The network interface whose address JAX's CPU collectives advertise "
                   "(KDIST_COLLECTIVES_INTERFACE), or None.")
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
      .def_prop_ro("unreachable_timeout",
                   [](const ClusterSpec& s) { return NanosToSeconds(s.unreachable_timeout.value); },
                   "Seconds a process's host may answer nothing (it lost power or its "
                   "network) before the liveness channel names it unreachable and the job "
                   "ends (KDIST_UNREACHABLE_TIMEOUT; default 20); below heartbeat_timeout.")
      .def_prop_ro("on_peer_failure",
                   [](const ClusterSpec& s) {
                     return std::string(PeerFailurePolicyName(s.on_peer_failure.value));
                   },
                   "'exit' (default; KDIST_ON_PEER_FAILURE): this process stops when another "
                   "fails or dies; 'ignore': it prints the line and goes on.")
      .def_prop_ro("node_rank", [](const ClusterSpec& s) { return s.node_rank.value; },
                   "This machine's rank among the job's machines when `kdist launch --nodes` "
                   "started it (KDIST_NODE_RANK); None otherwise.")
      .def_prop_ro("num_nodes", [](const ClusterSpec& s) { return s.num_nodes.value; },
                   "How many machines run the job when `kdist launch --nodes` started it "
                   "(KDIST_NUM_NODES); None otherwise.")
      .def_prop_ro("local_process_id",
                   [](const ClusterSpec& s) { return s.local_process_id.value; },
                   "This process's index among its machine's processes "
                   "(KDIST_LOCAL_PROCESS_ID, else the scheduler's local rank); None when "
                   "nothing says.")
      .def_prop_ro("job_id", [](const ClusterSpec& s) { return s.job_id.value; },
                   "The job's id given to `kdist launch --nodes --job-id` (KDIST_JOB_ID); "
                   "'' otherwise.")
      .def_prop_ro("run_id", [](const ClusterSpec& s) { return s.run_id.value; },
                   "The job's run, the same in every attempt of one job (KDIST_RUN_ID, set by "
                   "`kdist launch`); '' otherwise.")
      .def_prop_ro("restart_count", [](const ClusterSpec& s) { return s.restart_count.value; },
                   "How many times this job was started again: KDIST_RESTART_COUNT, else the "
                   "detected scheduler's (SLURM_RESTART_COUNT after a requeue or preemption, "
                   "TORCHELASTIC_RESTART_COUNT), else 0; sources['restart_count'] says which.")
      .def_prop_ro(
          "previous_num_processes",
          [](const ClusterSpec& s) { return s.previous_num_processes.value; },
          "The process count of the job's previous attempt when `kdist launch --nodes` went "
          "on at another size (KDIST_PREVIOUS_NUM_PROCESSES), else None.")
      .def_prop_ro("max_reforms", [](const ClusterSpec& s) { return s.max_reforms.value; },
                   "The thrash guard of the job's agents: more than this many re-forms "
                   "without progress within reform_window end the job (KDIST_MAX_REFORMS, "
                   "which `kdist launch --nodes` sets; 4 by default).")
      .def_prop_ro("reform_window",
                   [](const ClusterSpec& s) { return NanosToSeconds(s.reform_window.value); },
                   "The thrash guard's window in seconds (KDIST_REFORM_WINDOW; 600 by "
                   "default).")
      .def_prop_ro("consistency",
                   [](const ClusterSpec& s) {
                     return std::string(ConsistencyPolicyName(s.consistency.value));
                   },
                   "'warn' (default; KDIST_CONSISTENCY): the roll call stops the job when the "
                   "processes' environments differ in a way that crashes or corrupts it (jax, "
                   "jaxlib, device platform or count) and warns about other differences; "
                   "'strict': any difference stops it; 'off': nothing is compared.")
      .def_prop_ro("stop_signals", &StopSignalList,
                   "The signals that are stop requests for the whole job, by name "
                   "(KDIST_STOP_SIGNALS; default ['SIGTERM']); empty: none.")
      .def_prop_ro("stop_signal_numbers",
                   [](const ClusterSpec& s) { return s.stop_signals.value; },
                   "The same signals as numbers, in the same order.")
      .def_prop_ro("stall_timeout",
                   [](const ClusterSpec& s) -> std::optional<double> {
                     if (!s.stall_timeout.value) return std::nullopt;
                     return NanosToSeconds(*s.stall_timeout.value);
                   },
                   "Seconds without reported progress after which a process ends the job "
                   "(KDIST_STALL_TIMEOUT), or None: no stall watchdog (the default).")
      .def_prop_ro("tls", [](const ClusterSpec& s) { return std::string(TlsPolicyName(s.tls.value)); },
                   "'auto' (default; KDIST_TLS): JAX's coordination service runs under mutual "
                   "TLS with certificates kdist makes from the job's token where the job has a "
                   "token and JAX can (0.12 or later); 'required': the start is refused "
                   "without it; 'off': never with kdist's certificates.")
      .def_prop_ro("mtls_cert_file",
                   [](const ClusterSpec& s) { return Optional(s.mtls_cert_file.value); },
                   "JAX_MTLS_CERT_FILE as the environment sets it (the user's own "
                   "certificate for JAX's mTLS), or None.")
      .def_prop_ro("mtls_key_file",
                   [](const ClusterSpec& s) { return Optional(s.mtls_key_file.value); },
                   "JAX_MTLS_KEY_FILE as the environment sets it, or None.")
      .def_prop_ro("mtls_ca_file",
                   [](const ClusterSpec& s) { return Optional(s.mtls_ca_file.value); },
                   "JAX_MTLS_CA_FILE as the environment sets it, or None.")
      .def_prop_ro("mtls_peer_uri_prefix",
                   [](const ClusterSpec& s) { return Optional(s.mtls_peer_uri_prefix.value); },
                   "JAX_MTLS_PEER_URI_PREFIX as the environment sets it, or None.")
      .def_prop_ro("has_token",
                   [](const ClusterSpec& s) { return !s.rendezvous_token.value.empty(); },
                   "Whether the job has a token (KDIST_ROLL_CALL_TOKEN); the token itself "
                   "never crosses into Python.")
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
      .def_ro("tls_state", &ClusterSpec::tls_state,
              "After initialize(): what the start did about TLS for JAX's coordination "
              "service, in words ('on: kdist's certificates for attempt 0 of job \"t57\"', "
              "'on: the user's jax_mtls_* settings: ...', 'off: the job has no token "
              "(KDIST_ROLL_CALL_TOKEN)'); '' before, and without a coordinator.")
      .def(
          "with_tls_state",
          [](const ClusterSpec& s, const std::string& state) {
            ClusterSpec copy = s;
            copy.tls_state = state;
            return copy;
          },
          nb::arg("state"), "A copy of this spec with what the start did about TLS.")
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

  nb::class_<Request>(m, "Request",
                      "initialize()'s settings as the caller passed them, in text form "
                      "(integers in decimal, booleans 'true'/'false', seconds as a number); "
                      "None: not passed.")
      .def(nb::init<>())
      .def_rw("job_addresses", &Request::job_addresses)
      .def_rw("num_processes", &Request::num_processes)
      .def_rw("process_id", &Request::process_id)
      .def_rw("timeout", &Request::timeout)
      .def_rw("cluster_detection", &Request::cluster_detection)
      .def_rw("preflight", &Request::preflight)
      .def_rw("heartbeat_timeout", &Request::heartbeat_timeout)
      .def_rw("shutdown_timeout", &Request::shutdown_timeout)
      .def_rw("on_peer_failure", &Request::on_peer_failure)
      .def_rw("consistency", &Request::consistency)
      .def_rw("stop_signals", &Request::stop_signals)
      .def_rw("stall_timeout", &Request::stall_timeout)
      .def_rw("unreachable_timeout", &Request::unreachable_timeout)
      .def_rw("tls", &Request::tls);

  nb::class_<TlsBinding>(m, "TlsBinding",
                         "What kdist's TLS certificates for this process derive from the job's "
                         "token (config/tls_settings.h).")
      .def_prop_ro("ca_seed",
                   [](const TlsBinding& b) { return nb::bytes(b.ca_seed.data(), b.ca_seed.size()); },
                   "48 bytes, the same in every process of one attempt of one job: HKDF-SHA-256 "
                   "of the token bound to the job id, attempt, coordinator and process count. "
                   "A secret: the job's certificate authority key derives from it.")
      .def_ro("peer_uri_prefix", &TlsBinding::peer_uri_prefix,
              "The URI prefix every certificate of this job's attempt carries, and JAX's peer "
              "check requires: 'kdist://job-<16 hex digits>/attempt-<n>/'.")
      .def_ro("process_uri", &TlsBinding::process_uri,
              "This process's URI: the prefix, then 'process-<id>'.")
      .def_ro("described", &TlsBinding::described,
              "The job and attempt in words: 'attempt 0 of job \"t57\"'.");

  m.def(
      "tls_binding", [](const ClusterSpec& spec) { return ValueOrRaise(DeriveTlsBinding(spec)); },
      nb::arg("spec"),
      "What kdist's TLS certificates for `spec`'s process derive from; raises "
      "kdist.ConfigError when the job has no token.");

  m.def(
      "resolve",
      [](const Request& request, const std::map<std::string, std::string>& environment,
         const std::vector<std::string>& tpu_chips) {
        Environment env(environment.begin(), environment.end());
        RealClock clock;
        GceMetadataServer metadata(env, clock);
        Result<ClusterSpec> spec = [&] {
          nb::gil_scoped_release release;
          return Resolve(request, env, MachineOf(tpu_chips, metadata));
        }();
        return ValueOrRaise(std::move(spec));
      },
      nb::arg("request"), nb::arg("environment"), nb::arg("tpu_chips") = std::vector<std::string>(),
      "Resolves initialize()'s settings (as text) against an environment snapshot and this "
      "machine's TPU chips (device node names: the gce_tpu detector is asked under 'auto' only "
      "where there are some, or TPU variables); raises kdist.ConfigError naming the bad value "
      "and its source.");

  m.def("jax_job_variables", &JaxJobVariables,
        "JAX's variables that place a process in a job, and KDIST_COORDINATOR_PORT: what "
        "kdist.testing.run_job leaves out of a fresh job's environment.");

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
      .def_ro("restart_count", &Detection::restart_count,
              "How many times the scheduler started this job again, when it says "
              "(SLURM_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT).")
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
      [](const std::map<std::string, std::string>& environment,
         const std::vector<std::string>& tpu_chips) {
        Environment env(environment.begin(), environment.end());
        RealClock clock;
        GceMetadataServer metadata(env, clock);
        nb::gil_scoped_release release;
        return DetectAll(env, MachineOf(tpu_chips, metadata));
      },
      nb::arg("environment"), nb::arg("tpu_chips") = std::vector<std::string>(),
      "What every detector makes of an environment snapshot and this machine's TPU chips, in "
      "table order; one 'auto' would not ask here (gce_tpu off a TPU machine) is absent.");
}

}  // namespace bindings
}  // namespace kdist
