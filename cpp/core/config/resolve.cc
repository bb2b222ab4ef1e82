#include "config/resolve.h"

#include <cstdio>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "config/detectors.h"
#include "config/job_settings.h"
#include "config/local_devices.h"
#include "config/node_place.h"
#include "config/raw_setting.h"

namespace kdist {
namespace {

// The most processes whose hosts a name pattern spells out for messages.
constexpr int64_t kMaxNamedProcessHosts = int64_t{1} << 20;

Result<Sourced<int64_t>> ParseCount(const Raw& raw) {
  Result<int64_t> value = ParseInteger(raw.text);
  const std::string expected = "expected a positive integer (at most " +
                               std::to_string(kMaxProcesses) + ")";
  if (!value.ok()) return Invalid(raw, value.status().message() + "; " + expected);
  if (*value < 1 || *value > kMaxProcesses) return Invalid(raw, expected);
  return Sourced<int64_t>{*value, raw.source};
}

// "cluster_detection=\"slurm\" (argument)", "KDIST_CLUSTER_DETECTION=\"none\" (from the
// environment)", "cluster_detection=\"auto\" (default)".
std::string DescribeMode(const Sourced<std::string>& mode) {
  if (mode.source == "argument") return "cluster_detection=" + Quote(mode.value) + " (argument)";
  if (mode.source == "default") return "cluster_detection=" + Quote(mode.value) + " (default)";
  return mode.source + "=" + Quote(mode.value) + " (from the environment)";
}

// The scheduler detection step. `needed`: whether explicit settings leave
// something for a detector to fill. A present but broken scheduler
// environment is an error when a value is needed from it or when the mode
// names that detector; otherwise explicit settings cover it and it is ignored.
// Under "auto" with nothing needed, the machine is not asked (no metadata request).
Result<std::optional<Detection>> DetectScheduler(const Sourced<std::string>& mode, bool needed,
                                                 const Environment& env, const Machine& machine) {
  const bool named = mode.value != "auto";
  Machine asked = machine;
  if (!needed && !named) asked.metadata = nullptr;
  DetectResult result = DetectCluster(mode.value, env, asked);
  if (result.ok()) return *result;
  if (!needed && !named) return std::optional<Detection>();
  if (result.status().code() == StatusCode::kNotFound) {
    return InvalidArgument(DescribeMode(mode) + ": " + result.status().message() +
                           "; use \"auto\" to detect whichever scheduler is present, or \"none\"");
  }
  return result.status();
}

std::string DetectorNames() {
  std::vector<std::string> names;
  for (const Detector& detector : Detectors()) names.emplace_back(detector.name);
  return Join(names, ", ");
}

Status NothingConfigured(const Sourced<std::string>& mode) {
  const std::string detection =
      mode.value == "none"
          ? "scheduler detection is off: " + DescribeMode(mode)
          : "none was found; " + DescribeMode(mode) + " looked for " + DetectorNames();
  return InvalidArgument(
      "kdist.initialize() found no cluster configuration. Configure it in one of these ways:\n"
      "  - pass job_addresses=\"10.0.0.1:1234\", num_processes=2, process_id=0 "
      "(the coordinator's address, the number of processes, this process's id);\n"
      "  - set KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES and "
      "KERAS_DISTRIBUTION_PROCESS_ID (or JAX's JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and "
      "JAX_PROCESS_ID) in each process's environment;\n"
      "  - start the processes with `kdist launch -n 2 -- python your_script.py`, which sets "
      "those variables;\n"
      "  - start them under a launcher or scheduler kdist detects (torchrun, Open MPI's mpirun, "
      "MPICH or Intel MPI mpiexec, Slurm's srun, SkyPilot, TF_CONFIG, a GKE TPU node pool, a "
      "Cloud TPU VM, a Kubernetes Indexed Job); " +
      detection +
      ";\n"
      "  - or pass num_processes=1 to run a single process.");
}

// The host of each process id, where the configuration says (see
// ClusterSpec::process_hosts): the job's addresses when they name every
// process, else the scheduler's layout when it covers exactly this job.
Sourced<std::vector<std::string>> ProcessHosts(const ClusterSpec& spec,
                                              const Detection* detection) {
  const int64_t n = spec.num_processes.value;
  const std::vector<Address>& addresses = spec.job_addresses.value;
  Sourced<std::vector<std::string>> out;
  if (n > 1 && static_cast<int64_t>(addresses.size()) == n) {
    for (const Address& address : addresses) out.value.push_back(address.host);
    out.source = spec.job_addresses.source;
    return out;
  }
  if (detection == nullptr || n <= 1 || n > kMaxNamedProcessHosts) return out;
  int64_t in_runs = 0;
  for (const auto& [host, count] : detection->process_host_runs) in_runs += count;
  if (in_runs == n) {
    for (const auto& [host, count] : detection->process_host_runs) {
      out.value.insert(out.value.end(), static_cast<size_t>(count), host);
    }
  } else if (!detection->process_host_prefix.empty()) {
    for (int64_t id = 0; id < n; ++id) {
      out.value.push_back(detection->process_host_prefix + std::to_string(id));
    }
  }
  if (!out.value.empty()) out.source = detection->process_hosts_source;
  return out;
}

// How to take an explicit setting away: "unset KERAS_DISTRIBUTION_NUM_PROCESSES",
// "do not pass num_processes".
std::string TakeAway(const Raw& raw) {
  if (raw.source == "argument") return "do not pass " + raw.label;
  return "unset " + raw.source;
}

// One explicit setting that contradicts the detected scheduler's value for it.
struct Contradiction {
  std::string described;  // the explicit side, as messages show it
  std::string detected;   // the scheduler's side
  std::string remedy;     // how to take the explicit side away
};

// An explicit process count or id against the value of the scheduler that
// fills the job's other settings (`filled`, by name). The processes of such a
// job take their ids, count and coordinator from the scheduler; one that
// counts or numbers itself otherwise can never form a job with them, and
// would wait out the roll call's deadline to learn it. Every process knows
// both values, so each says so at once. Explicit settings that describe the
// whole job never get here: the scheduler fills nothing for them.
Status CheckAgainstScheduler(const Detection& detection, const std::vector<std::string>& filled,
                             const std::vector<Contradiction>& contradictions) {
  if (contradictions.empty()) return Status::Ok();
  std::vector<std::string> sides;
  std::vector<std::string> remedies;
  for (const Contradiction& c : contradictions) {
    sides.push_back(c.described + " contradicts " + c.detected);
    remedies.push_back(c.remedy);
  }
  const std::string& name = detection.detector;
  return InvalidArgument(
      Join(sides, "; ") + ": this process takes its other settings (" + Join(filled, ", ") +
      ") from " + name + ", the scheduler that started it, so its processes would never form "
      "one job. To use " + name + "'s values, " + Join(remedies, " and ") +
      "; to describe a job of your own instead, give job_addresses, num_processes and "
      "process_id all explicitly (" + name + "'s are then not used)");
}

// The restart count: KDIST_RESTART_COUNT, else the detected scheduler's, else 0.
Result<Sourced<int64_t>> ResolveRestartCount(const Environment& env,
                                             const std::optional<Detection>& detection) {
  std::optional<Raw> raw = Pick(std::nullopt, "", env, kEnvRestartCount);
  if (!raw && detection) raw = FromDetection(detection->restart_count, detection->detector);
  if (!raw) return Sourced<int64_t>{0, "default"};
  const std::string expected =
      "expected a non-negative integer (how many times the job was started again)";
  Result<int64_t> value = ParseInteger(raw->text);
  if (!value.ok()) return Invalid(*raw, value.status().message() + "; " + expected);
  if (*value < 0) return Invalid(*raw, expected);
  return Sourced<int64_t>{*value, raw->source};
}

// JAX_COORDINATOR_BIND_ADDRESS: process 0 binds there instead of every interface.
Status ResolveBindAddress(const Environment& env, ClusterSpec& spec) {
  spec.coordinator_bind_address = {std::nullopt, "default"};
  const std::optional<Raw> raw = Pick(std::nullopt, "", env, kEnvJaxCoordinatorBindAddress);
  if (!raw) return Status::Ok();
  const std::string expected =
      "expected an IP address and port to bind, such as \"0.0.0.0:1234\" or \"[::]:1234\"";
  Result<Address> address = ParseAddress(raw->text);
  if (!address.ok()) return Invalid(*raw, address.status().message() + "; " + expected);
  if (address->kind == HostKind::kName) {
    return Invalid(*raw, "names a host, not an IP address; " + expected);
  }
  if (!spec.coordinator()) {
    return Invalid(*raw, "applies to a job with a coordinator, and this process has none "
                         "(a single process); unset it or configure the job");
  }
  spec.coordinator_bind_address = {*address, raw->source};
  return Status::Ok();
}

// KDIST_COLLECTIVES_ADDRESS / KDIST_COLLECTIVES_INTERFACE: what JAX's CPU
// collectives (Gloo) advertise to the other hosts, when the user chooses it
// (else initialize() takes the address this host reaches the coordinator from).
// Whether the address is this host's, or the interface exists, is checked at the
// start (that is I/O); here only the form.
Status ResolveCollectives(const Environment& env, ClusterSpec& spec) {
  spec.collectives_address = {"", "default"};
  spec.collectives_interface = {"", "default"};
  const std::optional<Raw> address = Pick(std::nullopt, "", env, kEnvCollectivesAddress);
  const std::optional<Raw> interface = Pick(std::nullopt, "", env, kEnvCollectivesInterface);
  if (address && interface) {
    return InvalidArgument(Describe(*address) + " and " + Describe(*interface) +
                           " both choose the address JAX's CPU collectives advertise; set one");
  }
  if (address) {
    const Result<HostKind> kind = ParseHost(address->text);
    if (!kind.ok() || *kind == HostKind::kName) {
      return Invalid(*address, "expected an IP address of this host that the other hosts reach, "
                               "such as \"10.0.0.2\" or \"fd00::2\" (without a port)");
    }
    spec.collectives_address = {address->text, address->source};
  }
  if (interface) {
    const std::string& name = interface->text;
    const bool valid = !name.empty() && name.size() < 16 &&
                       name.find_first_of("/ \t\n:") == std::string::npos;
    if (!valid) {
      return Invalid(*interface, "expected a network interface's name, such as \"eth0\" "
                                 "(1 to 15 characters, no '/', ':' or space)");
    }
    spec.collectives_interface = {name, interface->source};
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> ClusterDetectionModes() {
  std::vector<std::string> modes = {"auto", "none"};
  for (const Detector& detector : Detectors()) modes.emplace_back(detector.name);
  return modes;
}

std::vector<std::string> JaxJobVariables() {
  return {std::string(kEnvJaxCoordinatorAddress), std::string(kEnvJaxNumProcesses),
          std::string(kEnvJaxProcessId),          std::string(kEnvJaxCoordinatorBindAddress),
          std::string(kEnvJaxLocalDeviceIds),     std::string(kEnvJaxCoordinatorPort),
          std::string(kEnvCoordinatorPort)};
}

namespace {

// The three cluster settings as text with their sources: the job's addresses,
// the process count and this process's id.
struct ClusterTexts {
  std::optional<Raw> addresses;
  std::optional<Raw> count;
  std::optional<Raw> id;
};

// Each cluster setting from the argument, else its KERAS_DISTRIBUTION_*
// variable, else JAX's own.
Result<ClusterTexts> PickClusterTexts(const Request& request, const Environment& env) {
  ClusterTexts texts;
  texts.addresses = PickWithJax(request.job_addresses, "job_addresses", env, kEnvJobAddresses,
                                kEnvJaxCoordinatorAddress);
  texts.count = PickWithJax(request.num_processes, "num_processes", env, kEnvNumProcesses,
                            kEnvJaxNumProcesses, false);
  texts.id = PickWithJax(request.process_id, "process_id", env, kEnvProcessId, kEnvJaxProcessId,
                         false);
  if (texts.addresses && texts.addresses->source == kEnvJaxCoordinatorAddress &&
      Split(texts.addresses->text, ',').size() > 1) {
    return Invalid(*texts.addresses,
                   "names more than one address; JAX's variable holds only the coordinator's "
                   "\"host:port\" (list every process's address in "
                   "KERAS_DISTRIBUTION_JOB_ADDRESSES instead)");
  }
  return texts;
}

// What a detected scheduler brought: the detection (even when it filled
// nothing), whether it fills settings, which, and the explicit texts as they
// were before it filled any.
struct SchedulerFill {
  std::optional<Detection> detected;
  bool fills = false;  // the detector fills the settings the explicit ones leave out
  std::vector<std::string> filled;
  ClusterTexts given;
  const Detection& Hints() const {
    static const Detection kNone;
    return fills ? *detected : kNone;
  }
};

// A detector fills only what explicit settings leave out. An explicit single
// process needs nothing from it: no coordinator, and id 0.
Result<SchedulerFill> FillFromScheduler(const ClusterSpec& spec, const Environment& env,
                                        const Machine& machine, ClusterTexts& texts) {
  SchedulerFill fill;
  fill.given = texts;
  const size_t explicit_addresses = texts.addresses ? Split(texts.addresses->text, ',').size() : 0;
  const Result<int64_t> explicit_count = ParseInteger(texts.count ? texts.count->text : "");
  const bool single_process = explicit_count.ok() && *explicit_count == 1;
  const bool needed = !single_process && !(texts.addresses && texts.id &&
                                           (texts.count || explicit_addresses > 1));
  KDIST_ASSIGN_OR_RETURN(fill.detected, DetectScheduler(spec.cluster_detection, needed, env, machine));
  fill.fills = fill.detected && !single_process;
  if (!fill.fills) return fill;
  const Detection& filler = *fill.detected;
  const std::string& name = filler.detector;
  if (!texts.addresses && filler.job_addresses) {
    texts.addresses = FromDetection(filler.job_addresses, name);
    fill.filled.emplace_back("job_addresses");
  }
  if (!texts.count && explicit_addresses <= 1 && filler.num_processes) {
    texts.count = FromDetection(filler.num_processes, name);
    fill.filled.emplace_back("num_processes");
  }
  if (!texts.id && filler.process_id) {
    texts.id = FromDetection(filler.process_id, name);
    fill.filled.emplace_back("process_id");
  }
  return fill;
}

// The process count: given, else the length of the address list; an address
// list of several addresses must name one per process.
Status ResolveProcessCount(const ClusterTexts& texts, const Detection& hints, ClusterSpec& spec) {
  const size_t address_count = spec.job_addresses.value.size();
  if (texts.count) {
    KDIST_ASSIGN_OR_RETURN(spec.num_processes, ParseCount(*texts.count));
    if (address_count > 1 && static_cast<int64_t>(address_count) != spec.num_processes.value) {
      return InvalidArgument(
          Describe(*texts.addresses) + " lists " + std::to_string(address_count) +
          " addresses but " + Describe(*texts.count) +
          "; list one address per process (the coordinator first), or only the coordinator's");
    }
    return Status::Ok();
  }
  if (address_count > 1) {
    spec.num_processes = {static_cast<int64_t>(address_count), "job_addresses"};
    return Status::Ok();
  }
  if (texts.addresses) {
    return InvalidArgument(Describe(*texts.addresses) +
                           " names the coordinator but the number of processes is not set; pass "
                           "num_processes=..., set KERAS_DISTRIBUTION_NUM_PROCESSES, or list one "
                           "address per process" +
                           Hint(hints.num_processes_hint));
  }
  return InvalidArgument(Describe(*texts.id) +
                         " is set but the number of processes is not; pass num_processes=... "
                         "or set KERAS_DISTRIBUTION_NUM_PROCESSES (and a coordinator address)" +
                         Hint(hints.num_processes_hint));
}

// When the scheduler filled any setting, the explicit count and id must agree
// with its values (a job taken half from the scheduler and half from
// elsewhere cannot form).
Status CheckExplicitAgainstScheduler(const SchedulerFill& fill, const ClusterTexts& texts,
                                     const ClusterSpec& spec) {
  if (fill.filled.empty()) return Status::Ok();
  const Detection& filler = *fill.detected;
  const size_t address_count = spec.job_addresses.value.size();
  std::vector<Contradiction> contradictions;
  const std::optional<DetectedValue>& their_count = filler.num_processes;
  Result<int64_t> theirs = ParseInteger(their_count ? their_count->text : "");
  // Explicit: an argument or variable, or the length of an explicit address list.
  if (theirs.ok() && *theirs != spec.num_processes.value &&
      (fill.given.count || address_count > 1)) {
    Contradiction c;
    if (fill.given.count) {
      c.described = Describe(*fill.given.count);
      c.remedy = TakeAway(*fill.given.count);
    } else {
      c.described = Describe(*texts.addresses) + ", which lists " +
                    std::to_string(address_count) + " addresses,";
      c.remedy = "list only the coordinator's address in " + texts.addresses->label;
    }
    c.detected = Describe(*FromDetection(their_count, filler.detector));
    contradictions.push_back(std::move(c));
  }
  const std::optional<DetectedValue>& their_id = filler.process_id;
  Result<int64_t> mine = ParseInteger(fill.given.id ? fill.given.id->text : "");
  Result<int64_t> their_id_value = ParseInteger(their_id ? their_id->text : "");
  if (fill.given.id && mine.ok() && their_id_value.ok() && *mine != *their_id_value) {
    contradictions.push_back({Describe(*fill.given.id),
                              Describe(*FromDetection(their_id, filler.detector)),
                              TakeAway(*fill.given.id)});
  }
  return CheckAgainstScheduler(filler, fill.filled, contradictions);
}

// This process's id, in [0, num_processes); 0 for a single process.
Status ResolveProcessId(const ClusterTexts& texts, const Detection& hints, ClusterSpec& spec) {
  const int64_t n = spec.num_processes.value;
  const std::string id_expected = "expected an integer in [0, " + std::to_string(n) +
                                  ") because num_processes=" + std::to_string(n) + " (" +
                                  spec.num_processes.source + ")";
  if (texts.id) {
    Result<int64_t> id = ParseInteger(texts.id->text);
    if (!id.ok()) return Invalid(*texts.id, id.status().message() + "; " + id_expected);
    if (*id < 0 || *id >= n) return Invalid(*texts.id, id_expected);
    spec.process_id = {*id, texts.id->source};
    return Status::Ok();
  }
  if (n == 1) {
    spec.process_id = {0, "default"};
    return Status::Ok();
  }
  return InvalidArgument("process_id is not set for a job of " + std::to_string(n) +
                         " processes; pass process_id=... or set KERAS_DISTRIBUTION_PROCESS_ID (" +
                         id_expected + ")" + Hint(hints.process_id_hint));
}

}  // namespace

Result<ClusterSpec> Resolve(const Request& request, const Environment& env) {
  return Resolve(request, env, Machine{});
}

Result<ClusterSpec> Resolve(const Request& request, const Environment& env,
                            const Machine& machine) {
  ClusterSpec spec;
  KDIST_RETURN_IF_ERROR(ResolveJobSettings(request, env, spec));
  KDIST_ASSIGN_OR_RETURN(ClusterTexts texts, PickClusterTexts(request, env));
  KDIST_ASSIGN_OR_RETURN(const SchedulerFill fill, FillFromScheduler(spec, env, machine, texts));
  if (fill.detected) spec.scheduler = fill.detected->detector;
  if (!texts.addresses && !texts.count && !texts.id) {
    return NothingConfigured(spec.cluster_detection);
  }
  const Detection& hints = fill.Hints();

  if (texts.addresses) {
    Result<std::vector<Address>> list = ParseAddressList(texts.addresses->text);
    if (!list.ok()) return Invalid(*texts.addresses, list.status().message());
    spec.job_addresses = {std::move(list).value(), texts.addresses->source};
  }
  KDIST_RETURN_IF_ERROR(ResolveProcessCount(texts, hints, spec));
  KDIST_RETURN_IF_ERROR(CheckExplicitAgainstScheduler(fill, texts, spec));
  if (spec.num_processes.value > 1 && spec.job_addresses.value.empty()) {
    return InvalidArgument(
        Describe(*texts.count) +
        " needs the coordinator's address: pass job_addresses=\"host:port\" or set "
        "KERAS_DISTRIBUTION_JOB_ADDRESSES (use num_processes=1 for a single process)" +
        Hint(hints.job_addresses_hint));
  }
  KDIST_RETURN_IF_ERROR(ResolveProcessId(texts, hints, spec));

  // Only process 0 names missing processes: the others skip building N names.
  const Detection* filler = fill.fills ? &*fill.detected : nullptr;
  if (spec.process_id.value == 0) spec.process_hosts = ProcessHosts(spec, filler);
  KDIST_RETURN_IF_ERROR(ResolveLocalDevices(env, fill.detected, spec));
  KDIST_RETURN_IF_ERROR(ResolveBindAddress(env, spec));
  KDIST_RETURN_IF_ERROR(ResolveCollectives(env, spec));
  KDIST_ASSIGN_OR_RETURN(spec.restart_count, ResolveRestartCount(env, fill.detected));
  KDIST_RETURN_IF_ERROR(ResolveNodePlace(env, spec));
  return spec;
}

Result<double> ParseTimeoutSeconds(std::string_view text) {
  char most[32];
  std::snprintf(most, sizeof most, "%.0f", kMaxTimeoutSeconds);
  const std::string expected =
      "expected a positive number of seconds (at most " + std::string(most) + ")";
  Result<double> value = ParseSeconds(text);
  if (!value.ok() || *value <= 0 || *value > kMaxTimeoutSeconds) return InvalidArgument(expected);
  return *value;
}

}  // namespace kdist
