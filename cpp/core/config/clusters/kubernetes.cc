#include "config/clusters/kubernetes.h"

#include <utility>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {
namespace {

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

DetectResult Detect(const Environment& env) {
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
  // Every pod's host name is <job name>-<index>, and the index is the process id.
  d.process_host_prefix = hostname->substr(0, hostname->size() - suffix.size()) + "-";
  d.process_hosts_source = "kubernetes (HOSTNAME, JOB_COMPLETION_INDEX: Indexed Job pod names)";
  const std::string* subdomain = Lookup(env, kEnvK8sSubdomain);
  const std::string pod0 = d.process_host_prefix + "0";
  if (subdomain == nullptr) {
    d.job_addresses_hint =
        "Kubernetes does not publish the pods' subdomain in the environment, and pod 0 (" +
        pod0 + ") is reachable by name only through it; set KDIST_K8S_SUBDOMAIN to the name "
        "of the headless Service that the pod template names as `subdomain` (the coordinator "
        "is then " + pod0 + ".<subdomain>:" + std::to_string(kKubernetesCoordinatorPort) +
        "), or set KERAS_DISTRIBUTION_JOB_ADDRESSES";
    return std::optional<Detection>(std::move(d));
  }
  PortChoice port{kKubernetesCoordinatorPort, ""};
  KDIST_RETURN_IF_ERROR(ApplyPortOverride(kName, env, port, nullptr).status());
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

Detector KubernetesDetector() {
  return {"kubernetes", "Kubernetes Indexed Jobs (no process count; coordinator needs "
          "KDIST_K8S_SUBDOMAIN)",
          "JOB_COMPLETION_INDEX",
          {"JOB_COMPLETION_INDEX", "HOSTNAME", kEnvK8sSubdomain, kEnvK8sJobGlobalIndex,
           kEnvK8sJobCompletions, kEnvK8sGlobalReplicas, kEnvCoordinatorPort,
           kEnvJaxCoordinatorPort},
          &Detect};
}

}  // namespace kdist
