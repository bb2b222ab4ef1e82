#include "config/clusters/slurm.h"

#include <algorithm>
#include <utility>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "config/clusters/slurm_hostlist.h"
#include "net/address.h"

namespace kdist {
namespace {

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

// The step's layout under Slurm's default block distribution: each node's
// tasks in turn ("2(x2)" on node-[1-2]: tasks 0-1 on node-1, 2-3 on node-2),
// as runs of (host, task count). Empty where the layout is another
// (SLURM_DISTRIBUTION=cyclic, plane, arbitrary) or the variables do not add
// up: never a guess.
std::vector<std::pair<std::string, int64_t>> BlockLayout(const Environment& env,
                                                         const std::vector<std::string>& hosts,
                                                         std::string_view count_name) {
  const std::string* distribution = Lookup(env, "SLURM_DISTRIBUTION");
  if (distribution != nullptr && distribution->rfind("block", 0) != 0) return {};
  const std::string* per_node = Lookup(env, "SLURM_STEP_TASKS_PER_NODE");
  if (per_node == nullptr) return {};
  Result<std::vector<int64_t>> counts = ExpandTasksPerNode(*per_node);
  Result<int64_t> tasks = ParseInteger(*Lookup(env, count_name));
  if (!counts.ok() || !tasks.ok() || counts->size() != hosts.size()) return {};
  std::vector<std::pair<std::string, int64_t>> runs;
  int64_t total = 0;
  for (size_t node = 0; node < hosts.size(); ++node) {
    if ((*counts)[node] > *tasks - total) return {};  // more than the step's tasks
    runs.emplace_back(hosts[node], (*counts)[node]);
    total += (*counts)[node];
  }
  if (total != *tasks) return {};
  return runs;
}

DetectResult Detect(const Environment& env) {
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

  PortChoice port{static_cast<uint16_t>(kDerivedPortBase + *job_number % 4096), "SLURM_JOB_ID"};
  std::string shown = Shown("SLURM_STEP_NODELIST", *nodelist);
  KDIST_ASSIGN_OR_RETURN(const bool overridden, ApplyPortOverride(kName, env, port, &shown));
  if (!overridden) shown += ", " + Shown("SLURM_JOB_ID", *job_id);
  Result<Address> coordinator = HostPort(hosts->front(), port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "SLURM_STEP_NODELIST", *nodelist,
                     "starts with host " + Quote(hosts->front()) + ", which " +
                         coordinator.status().message());
  }

  Detection d;
  d.detector = std::string(kName);
  d.job_addresses =
      DetectedValue{coordinator->ToString(), "SLURM_STEP_NODELIST, " + port.variable, shown};
  d.num_processes = Copy(count_name, *Lookup(env, count_name));
  d.process_id = Copy("SLURM_PROCID", *Lookup(env, "SLURM_PROCID"));
  if (const std::string* v = Lookup(env, "SLURM_LOCALID")) d.local_rank = Copy("SLURM_LOCALID", *v);
  KDIST_ASSIGN_OR_RETURN(const std::optional<DetectedValue> local_size, SlurmLocalSize(env));
  d.local_size = local_size;
  // Set from the first requeue on (absent in a job's first run).
  if (const std::string* v = Lookup(env, "SLURM_RESTART_COUNT")) {
    d.restart_count = Copy("SLURM_RESTART_COUNT", *v);
  }
  d.process_host_runs = BlockLayout(env, *hosts, count_name);
  if (!d.process_host_runs.empty()) {
    d.process_hosts_source =
        "slurm (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE: block distribution)";
  }
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector SlurmDetector() {
  return {"slurm", "Slurm job steps started by srun", "SLURM_JOB_ID",
          {"SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS",
           "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE",
           "SLURM_NODEID", "SLURM_DISTRIBUTION", "SLURM_RESTART_COUNT", kEnvCoordinatorPort,
           kEnvJaxCoordinatorPort},
          &Detect};
}

Result<std::optional<SlurmAllocation>> ReadSlurmAllocation(const Environment& env) {
  const std::string* job_id = Lookup(env, "SLURM_JOB_ID");
  if (job_id == nullptr) return std::optional<SlurmAllocation>();
  SlurmAllocation allocation;
  allocation.job_id = *job_id;
  if (const std::string* name = Lookup(env, "SLURMD_NODENAME")) allocation.node_name = *name;
  allocation.nodelist_variable = "SLURM_JOB_NODELIST";
  const std::string* nodelist = Lookup(env, "SLURM_JOB_NODELIST");
  if (nodelist == nullptr) {
    allocation.nodelist_variable = "SLURM_NODELIST";
    nodelist = Lookup(env, "SLURM_NODELIST");
  }
  if (nodelist == nullptr) return std::optional<SlurmAllocation>(std::move(allocation));
  Result<std::vector<std::string>> hosts = ExpandHostList(*nodelist);
  if (!hosts.ok() || hosts->empty()) {
    return InvalidArgument(allocation.nodelist_variable + "=" + Quote(*nodelist) + " lists no host" +
                           (hosts.ok() ? std::string() : " (" + hosts.status().message() + ")"));
  }
  allocation.first_host = hosts->front();
  return std::optional<SlurmAllocation>(std::move(allocation));
}

}  // namespace kdist
