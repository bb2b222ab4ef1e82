#include "detectors.h"

#include <algorithm>
#include <utility>

#include "address.h"
#include "json.h"
#include "ompi_uri.h"
#include "scalars.h"
#include "slurm_hostlist.h"
#include "text.h"

namespace kdist {
namespace {

// The first port of the range JAX derives coordinator ports in: 61440..65535.
constexpr uint64_t kDerivedPortBase = 65535 - 4096 + 1;

constexpr std::string_view kExplicitWay =
    "Otherwise configure the job explicitly (KERAS_DISTRIBUTION_JOB_ADDRESSES, "
    "KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID), or set "
    "KDIST_CLUSTER_DETECTION=none to turn scheduler detection off.";

std::string Shown(std::string_view name, std::string_view value) {
  return std::string(name) + "=" + Quote(value);
}

DetectedValue Copy(std::string_view name, const std::string& value) {
  return {value, std::string(name), Shown(name, value)};
}

// "A", "A and B", "A, B and C".
std::string Listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

std::string Prefix(std::string_view detector) {
  return "scheduler detection (" + std::string(detector) + "): ";
}

// A variable that is present but unusable.
Status Malformed(std::string_view detector, std::string_view name, std::string_view value,
                 std::string_view reason) {
  return InvalidArgument(Prefix(detector) + Shown(name, value) + " " + std::string(reason));
}

// Some of a scheduler's variables are set, others are missing.
Status Incomplete(std::string_view detector, const Environment& env,
                  const std::vector<std::string_view>& wanted, std::string_view advice) {
  std::vector<std::string> present, missing;
  for (std::string_view name : wanted) {
    if (const std::string* value = Lookup(env, name)) {
      present.push_back(Shown(name, *value));
    } else {
      missing.push_back(std::string(name));
    }
  }
  return InvalidArgument(Prefix(detector) + Listed(present) +
                         (present.size() == 1 ? " is" : " are") + " set but " + Listed(missing) +
                         (missing.size() == 1 ? " is not. " : " are not. ") +
                         std::string(advice) + std::string(kExplicitWay));
}

bool HasAll(const Environment& env, const std::vector<std::string_view>& names) {
  return std::all_of(names.begin(), names.end(),
                     [&](std::string_view name) { return Lookup(env, name) != nullptr; });
}

struct PortChoice {
  uint16_t port = 0;
  std::string variable;
};

// KDIST_COORDINATOR_PORT, else JAX_COORDINATOR_PORT, when set.
Result<std::optional<PortChoice>> PortOverride(std::string_view detector,
                                               const Environment& env) {
  for (std::string_view name : {kEnvCoordinatorPort, kEnvJaxCoordinatorPort}) {
    const std::string* value = Lookup(env, name);
    if (value == nullptr) continue;
    Result<uint16_t> port = ParsePort(*value);
    if (!port.ok()) return Malformed(detector, name, *value, port.status().message());
    return std::optional<PortChoice>(PortChoice{*port, std::string(name)});
  }
  return std::optional<PortChoice>();
}

// The coordinator at `host` as a scheduler writes it: an IPv4 address, a host
// name, or an IPv6 address with or without brackets. Failure is ParseHost's.
Result<Address> HostPort(std::string_view host, uint16_t port) {
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  KDIST_ASSIGN_OR_RETURN(const HostKind kind, ParseHost(host));
  if (bracketed && kind != HostKind::kIPv6) {
    return InvalidArgument("has brackets around a host that is not an IPv6 address");
  }
  return Address{std::string(host), port, kind};
}

// ---------------------------------------------------------------- torchrun

DetectResult DetectTorchrun(const Environment& env) {
  constexpr std::string_view kName = "torchrun";
  if (!Lookup(env, "WORLD_SIZE") && !Lookup(env, "RANK")) return std::optional<Detection>();
  const std::vector<std::string_view> wanted = {"WORLD_SIZE", "RANK", "MASTER_ADDR",
                                                "MASTER_PORT"};
  if (!HasAll(env, wanted)) {
    return Incomplete(kName, env, wanted,
                      "torchrun, torch.distributed.launch and Kubeflow's PyTorchJob set all "
                      "four; set the missing ones. ");
  }
  const std::string& master_addr = *Lookup(env, "MASTER_ADDR");
  const std::string& master_port = *Lookup(env, "MASTER_PORT");

  KDIST_ASSIGN_OR_RETURN(const std::optional<PortChoice> port_override, PortOverride(kName, env));
  PortChoice port;
  std::string shown = Shown("MASTER_ADDR", master_addr);
  if (port_override.has_value()) {
    port = *port_override;
    shown += ", " + Shown(port.variable, std::to_string(port.port));
  } else {
    Result<uint16_t> parsed = ParsePort(master_port);
    if (!parsed.ok()) return Malformed(kName, "MASTER_PORT", master_port, parsed.status().message());
    port = {*parsed, "MASTER_PORT"};
    shown += ", " + Shown("MASTER_PORT", master_port);
    const std::string* agent_store = Lookup(env, "TORCHELASTIC_USE_AGENT_STORE");
    if (agent_store != nullptr && *agent_store == "True") {
      // torchrun's agent serves its TCPStore on MASTER_PORT: take the next port.
      port.port = *parsed == 65535 ? 65534 : static_cast<uint16_t>(*parsed + 1);
      port.variable = "MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE";
      shown += " (port " + std::to_string(port.port) +
               ": torchrun's agent serves its store on MASTER_PORT)";
    }
  }
  if (master_addr.empty()) return Malformed(kName, "MASTER_ADDR", master_addr, "is empty");
  Result<Address> coordinator = HostPort(master_addr, port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "MASTER_ADDR", master_addr, coordinator.status().message());
  }

  Detection d;
  d.detector = std::string(kName);
  d.job_addresses =
      DetectedValue{coordinator->ToString(), "MASTER_ADDR, " + port.variable, shown};
  d.num_processes = Copy("WORLD_SIZE", *Lookup(env, "WORLD_SIZE"));
  d.process_id = Copy("RANK", *Lookup(env, "RANK"));
  if (const std::string* v = Lookup(env, "LOCAL_RANK")) d.local_rank = Copy("LOCAL_RANK", *v);
  if (const std::string* v = Lookup(env, "LOCAL_WORLD_SIZE")) {
    d.local_size = Copy("LOCAL_WORLD_SIZE", *v);
  }
  return std::optional<Detection>(std::move(d));
}

// ---------------------------------------------------------------- Open MPI

// "node01" of "node01.cluster.example": host names compared as short names.
std::string_view ShortName(std::string_view host) { return host.substr(0, host.find('.')); }

// Open MPI 5 (PRRTE): mpirun's host name and pid, from PMIX_NAMESPACE. Rank 0
// runs on mpirun's host unless a host file or --map-by says otherwise; rank 0
// checks that with PMIX_HOSTNAME, so a job whose rank 0 runs elsewhere stops
// with the hint instead of waiting for a coordinator nobody serves.
DetectResult OmpiFromPmixNamespace(const Environment& env, std::string_view rank,
                                   Detection d) {
  constexpr std::string_view kName = "ompi";
  const std::string explicit_way =
      "set KERAS_DISTRIBUTION_JOB_ADDRESSES to the host of rank 0 and a free port in every "
      "process, e.g. `mpirun -x KERAS_DISTRIBUTION_JOB_ADDRESSES=node01:12345 ...`";
  const std::string* ns_text = Lookup(env, "PMIX_NAMESPACE");
  Result<PrrteNamespace> ns =
      ns_text ? ParsePrrteNamespace(*ns_text) : Result<PrrteNamespace>(NotFound(""));
  if (!ns.ok()) {
    d.job_addresses_hint =
        "Open MPI 5 (PRRTE) does not publish the address of mpirun's host (Open MPI 4 did, in "
        "OMPI_MCA_orte_hnp_uri), and " +
        (ns_text ? Shown("PMIX_NAMESPACE", *ns_text) + " is not in mpirun's form "
                                                       "prterun-<host>-<pid>@<job>"
                 : std::string("PMIX_NAMESPACE is not set")) +
        "; " + explicit_way;
    return std::optional<Detection>(std::move(d));
  }
  const std::string* own_host = Lookup(env, "PMIX_HOSTNAME");
  if (rank == "0" && own_host != nullptr && ShortName(*own_host) != ShortName(ns->host)) {
    d.job_addresses_hint = "rank 0 runs on " + Shown("PMIX_HOSTNAME", *own_host) +
                           ", not on mpirun's host " + Quote(ns->host) + " (" +
                           Shown("PMIX_NAMESPACE", *ns_text) +
                           "), so the coordinator cannot be derived; " + explicit_way;
    return std::optional<Detection>(std::move(d));
  }
  KDIST_ASSIGN_OR_RETURN(const std::optional<PortChoice> port_override, PortOverride(kName, env));
  // A port in JAX's derived range, from mpirun's pid and job number: every
  // process of the job computes the same one.
  PortChoice port{static_cast<uint16_t>(kDerivedPortBase + (ns->pid * 16 + ns->job) % 4096),
                  "PMIX_NAMESPACE"};
  std::string shown = Shown("PMIX_NAMESPACE", *ns_text);
  if (port_override.has_value()) {
    port = *port_override;
    shown += ", " + Shown(port.variable, std::to_string(port.port));
  }
  Result<Address> coordinator = HostPort(ns->host, port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "PMIX_NAMESPACE", *ns_text,
                     "names host " + Quote(ns->host) + ", which " +
                         coordinator.status().message());
  }
  const std::string variables =
      port.variable == "PMIX_NAMESPACE" ? port.variable : "PMIX_NAMESPACE, " + port.variable;
  d.job_addresses = DetectedValue{coordinator->ToString(), variables, shown};
  return std::optional<Detection>(std::move(d));
}

DetectResult DetectOmpi(const Environment& env) {
  constexpr std::string_view kName = "ompi";
  const std::string* size = Lookup(env, "OMPI_COMM_WORLD_SIZE");
  const std::string* rank = Lookup(env, "OMPI_COMM_WORLD_RANK");
  const std::string* hnp_uri = Lookup(env, "OMPI_MCA_orte_hnp_uri");
  if (!size && !rank && !hnp_uri) return std::optional<Detection>();
  std::string_view rank_name = "OMPI_COMM_WORLD_RANK";
  if (!rank && (rank = Lookup(env, "PMIX_RANK"))) rank_name = "PMIX_RANK";
  if (!size || !rank) {
    std::vector<std::string_view> wanted = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"};
    if (hnp_uri) wanted.insert(wanted.begin(), "OMPI_MCA_orte_hnp_uri");
    return Incomplete(kName, env, wanted,
                      "Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK in "
                      "every process it starts. ");
  }

  Detection d;
  d.detector = std::string(kName);
  d.num_processes = Copy("OMPI_COMM_WORLD_SIZE", *size);
  d.process_id = Copy(rank_name, *rank);
  if (const std::string* v = Lookup(env, "OMPI_COMM_WORLD_LOCAL_RANK")) {
    d.local_rank = Copy("OMPI_COMM_WORLD_LOCAL_RANK", *v);
  }
  if (const std::string* v = Lookup(env, "OMPI_COMM_WORLD_LOCAL_SIZE")) {
    d.local_size = Copy("OMPI_COMM_WORLD_LOCAL_SIZE", *v);
  }
  if (hnp_uri == nullptr) return OmpiFromPmixNamespace(env, *rank, std::move(d));
  Result<OmpiHnpUri> uri = ParseOmpiHnpUri(*hnp_uri);
  if (!uri.ok()) {
    return Malformed(kName, "OMPI_MCA_orte_hnp_uri", *hnp_uri, uri.status().message());
  }
  KDIST_ASSIGN_OR_RETURN(const std::optional<PortChoice> port_override, PortOverride(kName, env));
  // As JAX: ORTE job ids are multiples of 2^12; the port comes from the job family.
  PortChoice port{static_cast<uint16_t>(kDerivedPortBase + (uri->job_id >> 12) % 4096),
                  "OMPI_MCA_orte_hnp_uri"};
  std::string shown = Shown("OMPI_MCA_orte_hnp_uri", *hnp_uri);
  if (port_override.has_value()) {
    port = *port_override;
    shown += ", " + Shown(port.variable, std::to_string(port.port));
  }
  Address coordinator = uri->addresses.front();
  coordinator.port = port.port;
  const std::string variables = port.variable == "OMPI_MCA_orte_hnp_uri"
                                    ? port.variable
                                    : "OMPI_MCA_orte_hnp_uri, " + port.variable;
  d.job_addresses = DetectedValue{coordinator.ToString(), variables, shown};
  return std::optional<Detection>(std::move(d));
}

// ---------------------------------------------------------------- MPICH / Hydra

DetectResult DetectMpich(const Environment& env) {
  constexpr std::string_view kName = "mpich";
  const std::string* local_rank = Lookup(env, "MPI_LOCALRANKID");
  if (!local_rank && !Lookup(env, "PMI_RANK") && !Lookup(env, "PMI_SIZE")) {
    return std::optional<Detection>();
  }
  // Slurm's PMI plugins (srun --mpi=pmi2) set PMI_RANK and PMI_SIZE too, but
  // not Hydra's MPI_LOCALRANKID: there the slurm detector applies.
  if (!local_rank && Lookup(env, "SLURM_STEP_NODELIST")) return std::optional<Detection>();
  std::vector<std::string_view> wanted = {"PMI_SIZE", "PMI_RANK"};
  if (!HasAll(env, wanted)) {
    if (local_rank) wanted.insert(wanted.begin(), "MPI_LOCALRANKID");
    return Incomplete(kName, env, wanted,
                      "MPICH's and Intel MPI's mpiexec (Hydra) set PMI_SIZE and PMI_RANK in "
                      "every process they start. ");
  }
  Detection d;
  d.detector = std::string(kName);
  d.num_processes = Copy("PMI_SIZE", *Lookup(env, "PMI_SIZE"));
  d.process_id = Copy("PMI_RANK", *Lookup(env, "PMI_RANK"));
  if (local_rank) d.local_rank = Copy("MPI_LOCALRANKID", *local_rank);
  if (const std::string* v = Lookup(env, "MPI_LOCALNRANKS")) {
    d.local_size = Copy("MPI_LOCALNRANKS", *v);
  }
  d.job_addresses_hint =
      "MPICH's and Intel MPI's mpiexec (Hydra) do not publish a coordinator address; set "
      "KERAS_DISTRIBUTION_JOB_ADDRESSES to the host of rank 0 and a free port in every "
      "process, e.g. `mpiexec -genv KERAS_DISTRIBUTION_JOB_ADDRESSES node01:12345 ...`";
  return std::optional<Detection>(std::move(d));
}

// ---------------------------------------------------------------- Slurm

// The number of tasks of this step on this node, when Slurm says.
Result<std::optional<DetectedValue>> SlurmLocalSize(const Environment& env) {
  constexpr std::string_view kName = "slurm";
  const std::string* per_node = Lookup(env, "SLURM_STEP_TASKS_PER_NODE");
  if (per_node == nullptr) return std::optional<DetectedValue>();
  Result<std::vector<int64_t>> counts = ExpandTasksPerNode(*per_node);
  if (!counts.ok()) {
    return Malformed(kName, "SLURM_STEP_TASKS_PER_NODE", *per_node, counts.status().message());
  }
  const std::vector<int64_t>& c = *counts;
  std::string shown = Shown("SLURM_STEP_TASKS_PER_NODE", *per_node);
  if (std::all_of(c.begin(), c.end(), [&](int64_t n) { return n == c.front(); })) {
    return std::optional<DetectedValue>(
        DetectedValue{std::to_string(c.front()), "SLURM_STEP_TASKS_PER_NODE", shown});
  }
  const std::string* node_id = Lookup(env, "SLURM_NODEID");
  if (node_id == nullptr) return std::optional<DetectedValue>();
  Result<uint64_t> index = ParseDigits(*node_id);
  if (!index.ok() || *index >= c.size()) {
    return Malformed(kName, "SLURM_NODEID", *node_id,
                     "is not a node index of the step; expected an integer in [0, " +
                         std::to_string(c.size()) + ") because " + shown + " lists " +
                         std::to_string(c.size()) + " nodes");
  }
  return std::optional<DetectedValue>(
      DetectedValue{std::to_string(c[static_cast<size_t>(*index)]),
                    "SLURM_STEP_TASKS_PER_NODE, SLURM_NODEID",
                    shown + ", " + Shown("SLURM_NODEID", *node_id)});
}

DetectResult DetectSlurm(const Environment& env) {
  constexpr std::string_view kName = "slurm";
  const std::string* job_id = Lookup(env, "SLURM_JOB_ID");
  if (job_id == nullptr) return std::optional<Detection>();
  const std::string_view count_name =
      Lookup(env, "SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  const std::string* nodelist = Lookup(env, "SLURM_STEP_NODELIST");
  if (nodelist == nullptr) {
    std::vector<std::string> missing = {"SLURM_STEP_NODELIST"};
    if (!Lookup(env, "SLURM_PROCID")) missing.push_back("SLURM_PROCID");
    if (!Lookup(env, "SLURM_STEP_NUM_TASKS")) missing.push_back("SLURM_STEP_NUM_TASKS");
    return InvalidArgument(
        Prefix(kName) + Shown("SLURM_JOB_ID", *job_id) + " is set but " + Listed(missing) +
        (missing.size() == 1 ? " is not" : " are not") +
        ": this process runs inside a Slurm allocation (an sbatch script, an salloc shell, or "
        "an ssh session on an allocated node) but srun did not start it as a task of a job "
        "step, so Slurm does not say how many processes the job has or which one this is. "
        "Start every process with srun, e.g. `srun --ntasks=4 python train.py`, or pass "
        "num_processes=1 to run a single process. " +
        std::string(kExplicitWay));
  }
  if (!Lookup(env, "SLURM_PROCID") || !Lookup(env, count_name)) {
    return Incomplete(kName, env,
                      {"SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_PROCID", count_name},
                      "srun sets all of them in every task of a job step. ");
  }

  Result<uint64_t> job_number = ParseDigits(*job_id);
  if (!job_number.ok()) {
    return Malformed(kName, "SLURM_JOB_ID", *job_id,
                     "is not a job id (" + job_number.status().message() +
                         "); expected a non-negative integer (the coordinator's port is derived "
                         "from it)");
  }
  Result<std::vector<std::string>> hosts = ExpandHostList(*nodelist);
  if (!hosts.ok()) {
    return Malformed(kName, "SLURM_STEP_NODELIST", *nodelist, hosts.status().message());
  }
  if (const std::string* nodes = Lookup(env, "SLURM_STEP_NUM_NODES")) {
    Result<int64_t> count = ParseInteger(*nodes);
    if (!count.ok() || *count != static_cast<int64_t>(hosts->size())) {
      return Malformed(kName, "SLURM_STEP_NUM_NODES", *nodes,
                       "does not match " + Shown("SLURM_STEP_NODELIST", *nodelist) +
                           ", which lists " + std::to_string(hosts->size()) + " host" +
                           (hosts->size() == 1 ? "" : "s"));
    }
  }

  KDIST_ASSIGN_OR_RETURN(const std::optional<PortChoice> port_override, PortOverride(kName, env));
  PortChoice port{static_cast<uint16_t>(kDerivedPortBase + *job_number % 4096), "SLURM_JOB_ID"};
  if (port_override.has_value()) port = *port_override;
  Result<Address> coordinator = HostPort(hosts->front(), port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "SLURM_STEP_NODELIST", *nodelist,
                     "starts with host " + Quote(hosts->front()) + ", which " +
                         coordinator.status().message());
  }

  Detection d;
  d.detector = std::string(kName);
  d.job_addresses = DetectedValue{
      coordinator->ToString(), "SLURM_STEP_NODELIST, " + port.variable,
      Shown("SLURM_STEP_NODELIST", *nodelist) + ", " +
          (port.variable == "SLURM_JOB_ID" ? Shown("SLURM_JOB_ID", *job_id)
                                           : Shown(port.variable, std::to_string(port.port)))};
  d.num_processes = Copy(count_name, *Lookup(env, count_name));
  d.process_id = Copy("SLURM_PROCID", *Lookup(env, "SLURM_PROCID"));
  if (const std::string* v = Lookup(env, "SLURM_LOCALID")) d.local_rank = Copy("SLURM_LOCALID", *v);
  KDIST_ASSIGN_OR_RETURN(const std::optional<DetectedValue> local_size, SlurmLocalSize(env));
  d.local_size = local_size;
  return std::optional<Detection>(std::move(d));
}

// ---------------------------------------------------------------- TF_CONFIG

DetectResult DetectTfConfig(const Environment& env) {
  constexpr std::string_view kName = "tf_config";
  const std::string* text = Lookup(env, "TF_CONFIG");
  if (text == nullptr) return std::optional<Detection>();
  const auto bad = [&](const std::string& reason) {
    return InvalidArgument(Prefix(kName) + "TF_CONFIG=" + Quote(*text) + " " + reason);
  };
  Result<JsonValue> json = ParseJson(*text);
  if (!json.ok()) return bad(json.status().message());
  if (!json->is_object()) {
    return bad(std::string("is ") + JsonKindName(json->kind()) +
               "; expected an object with \"cluster\" and \"task\"");
  }
  const JsonValue* cluster = json->Find("cluster");
  const JsonValue* task = json->Find("task");
  if (cluster == nullptr || !cluster->is_object()) {
    return bad("has no \"cluster\" object; expected {\"cluster\": {\"worker\": [\"host:port\", "
               "...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  }
  if (task == nullptr || !task->is_object()) {
    return bad("has no \"task\" object; expected \"task\": {\"type\": \"worker\", \"index\": 0}");
  }

  // Processes: the chief (if any) first, then the workers, in list order.
  std::vector<std::string> addresses;
  size_t chiefs = 0, workers = 0;
  for (const std::string_view job : {std::string_view("chief"), std::string_view("worker")}) {
    const JsonValue* list = cluster->Find(job);
    if (list == nullptr) continue;
    if (!list->is_array()) {
      return bad("has cluster." + std::string(job) + " of type " + JsonKindName(list->kind()) +
                 "; expected a list of \"host:port\" strings");
    }
    for (size_t i = 0; i < list->items().size(); ++i) {
      const JsonValue& item = list->items()[i];
      const std::string where = "cluster." + std::string(job) + "[" + std::to_string(i) + "]";
      if (!item.is_string()) {
        return bad("has " + where + " of type " + JsonKindName(item.kind()) +
                   "; expected a \"host:port\" string");
      }
      Result<Address> address = ParseAddress(item.text());
      if (!address.ok()) return bad("has " + where + "=" + Quote(item.text()) + ", which " +
                                    address.status().message());
      addresses.push_back(address->ToString());
    }
    (job == "chief" ? chiefs : workers) = list->items().size();
  }
  for (const JsonValue::Member& member : cluster->members()) {
    if (member.first != "chief" && member.first != "worker") {
      return bad("has cluster." + member.first +
                 ": kdist runs the \"chief\" and \"worker\" tasks as one JAX job; parameter "
                 "servers, evaluators and other task types are not part of it");
    }
  }
  if (chiefs > 1) return bad("lists " + std::to_string(chiefs) + " chiefs; expected at most one");
  if (addresses.empty()) return bad("lists no \"chief\" or \"worker\" tasks");

  const JsonValue* type = task->Find("type");
  const JsonValue* index = task->Find("index");
  if (type == nullptr || !type->is_string() || (type->text() != "chief" && type->text() != "worker")) {
    return bad("has a task type that is not \"chief\" or \"worker\"; this process must be one of "
               "the job's tasks");
  }
  const std::optional<int64_t> i = index == nullptr ? std::nullopt : index->AsInteger();
  const size_t of_type = type->text() == "chief" ? chiefs : workers;
  if (!i || *i < 0 || static_cast<size_t>(*i) >= of_type) {
    return bad("has a task index that is not an integer in [0, " + std::to_string(of_type) +
               ") (the number of \"" + type->text() + "\" tasks in the cluster)");
  }
  const int64_t process_id = (type->text() == "worker" ? static_cast<int64_t>(chiefs) : 0) + *i;
  const std::string task_text = "{\"type\": \"" + type->text() + "\", \"index\": " +
                                std::to_string(*i) + "}";

  Detection d;
  d.detector = std::string(kName);
  d.job_addresses = DetectedValue{Join(addresses, ","), "TF_CONFIG cluster",
                                  "TF_CONFIG cluster " + Quote(Join(addresses, ","))};
  d.num_processes = DetectedValue{std::to_string(addresses.size()), "TF_CONFIG cluster",
                                  "TF_CONFIG cluster (" + std::to_string(chiefs) + " chief, " +
                                      std::to_string(workers) + " workers)"};
  d.process_id = DetectedValue{std::to_string(process_id), "TF_CONFIG task",
                               "TF_CONFIG task " + task_text};
  return std::optional<Detection>(std::move(d));
}

// ---------------------------------------------------------------- Kubernetes

// A JobSet of several jobs: JOB_COMPLETION_INDEX restarts at 0 in each job,
// so the process id is job_global_index * completions + completion index.
// Fills the process id (and the count, when the number of jobs is given);
// the coordinator is left to KERAS_DISTRIBUTION_JOB_ADDRESSES.
Result<bool> DetectJobSet(const Environment& env, const std::string& index, uint64_t completion,
                          Detection& d) {
  constexpr std::string_view kName = "kubernetes";
  const std::string* global = Lookup(env, kEnvK8sJobGlobalIndex);
  const std::string* completions = Lookup(env, kEnvK8sJobCompletions);
  const std::string* replicas = Lookup(env, kEnvK8sGlobalReplicas);
  if (!global && !completions && !replicas) return false;
  if (!global || !completions) {
    return Incomplete(kName, env,
                      {kEnvK8sJobGlobalIndex, kEnvK8sJobCompletions, "JOB_COMPLETION_INDEX"},
                      "In a JobSet of several jobs, JOB_COMPLETION_INDEX restarts at 0 in each "
                      "job: set KDIST_K8S_JOB_GLOBAL_INDEX from the pod label "
                      "jobset.sigs.k8s.io/job-global-index (downward API) and "
                      "KDIST_K8S_JOB_COMPLETIONS to each job's spec.completions. ");
  }
  Result<uint64_t> job = ParseDigits(*global);
  if (!job.ok()) {
    return Malformed(kName, kEnvK8sJobGlobalIndex, *global,
                     "is not a job index (" + job.status().message() +
                         "); expected a non-negative integer");
  }
  Result<uint64_t> per_job = ParseDigits(*completions);
  if (!per_job.ok() || *per_job == 0 || *per_job > (uint64_t{1} << 20)) {
    return Malformed(kName, kEnvK8sJobCompletions, *completions,
                     "is not a number of pods per job; expected a positive integer (each "
                     "job's spec.completions)");
  }
  if (completion >= *per_job) {
    return Malformed(kName, "JOB_COMPLETION_INDEX", index,
                     "is not below " + Shown(kEnvK8sJobCompletions, *completions) +
                         "; every job of the JobSet must have that many completions");
  }
  std::optional<uint64_t> jobs;
  if (replicas) {
    Result<uint64_t> count = ParseDigits(*replicas);
    if (!count.ok() || *count == 0 || *count > (uint64_t{1} << 20)) {
      return Malformed(kName, kEnvK8sGlobalReplicas, *replicas,
                       "is not a number of jobs; expected a positive integer (the annotation "
                       "jobset.sigs.k8s.io/global-replicas)");
    }
    if (*job >= *count) {
      return Malformed(kName, kEnvK8sJobGlobalIndex, *global,
                       "is not below " + Shown(kEnvK8sGlobalReplicas, *replicas) +
                           ", the number of jobs of the JobSet");
    }
    jobs = *count;
  }
  if (*job > (uint64_t{1} << 20)) {
    return Malformed(kName, kEnvK8sJobGlobalIndex, *global, "is too large");
  }
  const std::string shown = Shown(kEnvK8sJobGlobalIndex, *global) + ", " +
                            Shown(kEnvK8sJobCompletions, *completions) + ", " +
                            Shown("JOB_COMPLETION_INDEX", index);
  d.process_id = DetectedValue{
      std::to_string(*job * *per_job + completion),
      std::string(kEnvK8sJobGlobalIndex) + ", " + std::string(kEnvK8sJobCompletions) +
          ", JOB_COMPLETION_INDEX",
      shown};
  if (jobs) {
    d.num_processes = DetectedValue{
        std::to_string(*jobs * *per_job),
        std::string(kEnvK8sGlobalReplicas) + ", " + std::string(kEnvK8sJobCompletions),
        Shown(kEnvK8sGlobalReplicas, *replicas) + ", " +
            Shown(kEnvK8sJobCompletions, *completions)};
  } else {
    d.num_processes_hint =
        "set KDIST_K8S_GLOBAL_REPLICAS from the annotation jobset.sigs.k8s.io/global-replicas "
        "(downward API), or KERAS_DISTRIBUTION_NUM_PROCESSES to the JobSet's total number of "
        "pods";
  }
  d.job_addresses_hint =
      "in a JobSet of several jobs the coordinator is pod 0 of the first job, whose name this "
      "pod cannot derive; set KERAS_DISTRIBUTION_JOB_ADDRESSES to "
      "<jobset>-<first replicated job>-0-0.<subdomain>:<port> in the pod template (the "
      "subdomain is the JobSet's name unless its network section says otherwise)";
  return true;
}

DetectResult DetectKubernetes(const Environment& env) {
  constexpr std::string_view kName = "kubernetes";
  const std::string* index = Lookup(env, "JOB_COMPLETION_INDEX");
  if (index == nullptr) return std::optional<Detection>();
  Result<uint64_t> parsed = ParseDigits(*index);
  if (!parsed.ok()) {
    return Malformed(kName, "JOB_COMPLETION_INDEX", *index,
                     "is not a completion index (" + parsed.status().message() +
                         "); expected a non-negative integer");
  }
  Detection d;
  d.detector = std::string(kName);
  KDIST_ASSIGN_OR_RETURN(const bool jobset, DetectJobSet(env, *index, *parsed, d));
  if (jobset) return std::optional<Detection>(std::move(d));
  d.process_id = Copy("JOB_COMPLETION_INDEX", *index);
  d.num_processes_hint =
      "Kubernetes does not publish the size of an Indexed Job in the pod's environment; set "
      "KERAS_DISTRIBUTION_NUM_PROCESSES to the Job's spec.completions in the pod template";

  // An Indexed Job's pods are named <job name>-<index>; pod 0 is the coordinator.
  const std::string* hostname = Lookup(env, "HOSTNAME");
  const std::string suffix = "-" + std::to_string(*parsed);
  if (hostname == nullptr || hostname->size() <= suffix.size() ||
      hostname->compare(hostname->size() - suffix.size(), suffix.size(), suffix) != 0) {
    d.job_addresses_hint =
        "the pod's host name " +
        (hostname ? Shown("HOSTNAME", *hostname) : std::string("(HOSTNAME is not set)")) +
        " is not <job name>-" + std::to_string(*parsed) +
        " as Kubernetes names Indexed Job pods, so the coordinator's (pod 0's) name is "
        "unknown; set KERAS_DISTRIBUTION_JOB_ADDRESSES=<job name>-0.<subdomain>:<port>";
    return std::optional<Detection>(std::move(d));
  }
  const std::string* subdomain = Lookup(env, kEnvK8sSubdomain);
  const std::string pod0 = hostname->substr(0, hostname->size() - suffix.size()) + "-0";
  if (subdomain == nullptr) {
    d.job_addresses_hint =
        "Kubernetes does not publish the pods' subdomain in the environment, and pod 0 (" +
        pod0 + ") is reachable by name only through it; set KDIST_K8S_SUBDOMAIN to the name "
        "of the headless Service that the pod template names as `subdomain` (the coordinator "
        "is then " + pod0 + ".<subdomain>:" + std::to_string(kKubernetesCoordinatorPort) +
        "), or set KERAS_DISTRIBUTION_JOB_ADDRESSES";
    return std::optional<Detection>(std::move(d));
  }
  KDIST_ASSIGN_OR_RETURN(const std::optional<PortChoice> port_override, PortOverride(kName, env));
  PortChoice port{kKubernetesCoordinatorPort, ""};
  if (port_override.has_value()) port = *port_override;
  Result<Address> coordinator = HostPort(pod0 + "." + *subdomain, port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "HOSTNAME", *hostname,
                     "and " + Shown(kEnvK8sSubdomain, *subdomain) + " give the coordinator " +
                         Quote(pod0 + "." + *subdomain) + ", which " +
                         coordinator.status().message());
  }
  std::string variables = "HOSTNAME, JOB_COMPLETION_INDEX, " + std::string(kEnvK8sSubdomain);
  if (!port.variable.empty()) variables += ", " + port.variable;
  d.job_addresses = DetectedValue{
      coordinator->ToString(), variables,
      Shown("HOSTNAME", *hostname) + ", " + Shown(kEnvK8sSubdomain, *subdomain)};
  return std::optional<Detection>(std::move(d));
}

}  // namespace

const std::vector<Detector>& Detectors() {
  static const std::vector<Detector> kTable = {
      {"torchrun", "torchrun-style launchers (torchrun, torch.distributed.launch, Kubeflow)",
       "WORLD_SIZE or RANK",
       {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "TORCHELASTIC_USE_AGENT_STORE", kEnvCoordinatorPort, kEnvJaxCoordinatorPort},
       &DetectTorchrun},
      {"ompi", "Open MPI's mpirun (coordinator on mpirun's host: 4 from OMPI_MCA_orte_hnp_uri, "
       "5 from PMIX_NAMESPACE)",
       "OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK or OMPI_MCA_orte_hnp_uri",
       {"OMPI_MCA_orte_hnp_uri", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK",
        "PMIX_NAMESPACE", "PMIX_HOSTNAME", kEnvCoordinatorPort, kEnvJaxCoordinatorPort},
       &DetectOmpi},
      {"mpich", "MPICH, Intel MPI and MVAPICH mpiexec (Hydra; no coordinator)",
       "MPI_LOCALRANKID, or PMI_RANK or PMI_SIZE outside a Slurm step",
       {"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
       &DetectMpich},
      {"slurm", "Slurm job steps started by srun", "SLURM_JOB_ID",
       {"SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS",
        "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_NODEID", kEnvCoordinatorPort, kEnvJaxCoordinatorPort},
       &DetectSlurm},
      {"tf_config", "TensorFlow's TF_CONFIG (chief and worker tasks)", "TF_CONFIG",
       {"TF_CONFIG"},
       &DetectTfConfig},
      {"kubernetes", "Kubernetes Indexed Jobs (no process count; coordinator needs "
       "KDIST_K8S_SUBDOMAIN)",
       "JOB_COMPLETION_INDEX",
       {"JOB_COMPLETION_INDEX", "HOSTNAME", kEnvK8sSubdomain, kEnvK8sJobGlobalIndex,
        kEnvK8sJobCompletions, kEnvK8sGlobalReplicas, kEnvCoordinatorPort,
        kEnvJaxCoordinatorPort},
       &DetectKubernetes},
  };
  return kTable;
}

const Detector* FindDetector(std::string_view name) {
  for (const Detector& detector : Detectors()) {
    if (detector.name == name) return &detector;
  }
  return nullptr;
}

DetectResult DetectCluster(std::string_view mode, const Environment& env) {
  if (mode == "none") return std::optional<Detection>();
  if (mode == "auto") {
    for (const Detector& detector : Detectors()) {
      DetectResult result = detector.detect(env);
      if (!result.ok() || result->has_value()) return result;
    }
    return std::optional<Detection>();
  }
  const Detector* detector = FindDetector(mode);
  if (detector == nullptr) {
    return Internal("unknown cluster detection mode " + Quote(mode));
  }
  DetectResult result = detector->detect(env);
  if (result.ok() && !result->has_value()) {
    return NotFound("the " + std::string(detector->name) + " detector found none of its variables (" +
                    std::string(detector->presence) + ") in the environment");
  }
  return result;
}

std::vector<DetectorReport> DetectAll(const Environment& env) {
  std::vector<DetectorReport> reports;
  for (const Detector& detector : Detectors()) {
    DetectResult result = detector.detect(env);
    DetectorReport report{std::string(detector.name), result.status(), std::nullopt};
    if (result.ok()) report.detection = *result;
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace kdist
