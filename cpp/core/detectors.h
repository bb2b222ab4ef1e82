// Scheduler detection: what the launcher or scheduler that started this
// process says about the job, read from the environment snapshot.
//
// The detectors sit in one explicit table, in the order "auto" tries them.
// Process launchers come first, because they run inside allocations and
// their own variables describe the processes they start (torchrun inside an
// srun step, mpirun whose daemons Slurm started: there SLURM_PROCID numbers
// the daemons, not the processes). Slurm comes next, then the static
// descriptions (TF_CONFIG) and Kubernetes, which publishes the least:
//
//   torchrun    MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK
//   ompi        Open MPI 4: OMPI_MCA_orte_hnp_uri; Open MPI 4 and 5 (PRRTE):
//               OMPI_COMM_WORLD_SIZE/RANK/LOCAL_RANK/LOCAL_SIZE, PMIX_RANK
//   mpich       MPICH / Intel MPI / MVAPICH (Hydra): PMI_SIZE, PMI_RANK,
//               MPI_LOCALRANKID, MPI_LOCALNRANKS
//   slurm       SLURM_JOB_ID, SLURM_STEP_NODELIST, SLURM_STEP_NUM_TASKS
//               (or SLURM_NTASKS), SLURM_PROCID, SLURM_LOCALID
//   tf_config   TF_CONFIG (cluster + task JSON)
//   kubernetes  JOB_COMPLETION_INDEX, HOSTNAME, KDIST_K8S_SUBDOMAIN; in a JobSet
//               of several jobs, KDIST_K8S_JOB_GLOBAL_INDEX and
//               KDIST_K8S_JOB_COMPLETIONS (and KDIST_K8S_GLOBAL_REPLICAS)
//
// Each detector lives in clusters/<scheduler>.{h,cc} (what they share: in
// clusters/scheduler_vars.h); this file holds the table and its users.
//
// Every detector is a pure function of the snapshot: no network, no files,
// no Kubernetes API. It reports nothing when its variables are absent, an
// error (kInvalidArgument, naming the variables) when they are present but
// partial or malformed, and otherwise the values it can give, each with the
// variables it came from. A value the scheduler does not publish (MPICH's
// coordinator, Kubernetes' process count) is left out with a hint that says
// what to set instead.
#ifndef KDIST_DETECTORS_H_
#define KDIST_DETECTORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "environment.h"
#include "status.h"

namespace kdist {

// Overrides the port of a coordinator whose port a detector derives (Slurm,
// Open MPI 4, Kubernetes) or takes from MASTER_PORT (torchrun).
inline constexpr std::string_view kEnvCoordinatorPort = "KDIST_COORDINATOR_PORT";
// JAX's own variable for the same purpose, honoured after kdist's.
inline constexpr std::string_view kEnvJaxCoordinatorPort = "JAX_COORDINATOR_PORT";
// The subdomain (headless Service name) of a Kubernetes Indexed Job's pods.
inline constexpr std::string_view kEnvK8sSubdomain = "KDIST_K8S_SUBDOMAIN";
// A JobSet's pods, exposed through the downward API in the pod template:
// the job's index among all jobs of the JobSet (the pod label
// jobset.sigs.k8s.io/job-global-index), the pods of each job (the Job
// template's spec.completions, written as a literal) and, optionally, the
// number of jobs (the annotation jobset.sigs.k8s.io/global-replicas).
inline constexpr std::string_view kEnvK8sJobGlobalIndex = "KDIST_K8S_JOB_GLOBAL_INDEX";
inline constexpr std::string_view kEnvK8sJobCompletions = "KDIST_K8S_JOB_COMPLETIONS";
inline constexpr std::string_view kEnvK8sGlobalReplicas = "KDIST_K8S_GLOBAL_REPLICAS";
// The port JAX uses for Kubernetes jobs.
inline constexpr uint16_t kKubernetesCoordinatorPort = 55527;

// One value a detector found.
struct DetectedValue {
  std::string text;       // parsed by the resolver like any other setting: "3", "node01:61234"
  std::string variables;  // where it came from: "SLURM_PROCID", "SLURM_STEP_NODELIST, SLURM_JOB_ID"
  std::string shown;      // how messages show it: SLURM_PROCID="3"
};

struct Detection {
  std::string detector;  // the detector's name: "slurm"
  std::optional<DetectedValue> job_addresses;  // the coordinator's, or every process's (first: coordinator)
  std::optional<DetectedValue> num_processes;
  std::optional<DetectedValue> process_id;
  std::optional<DetectedValue> local_rank;  // this process's index among those on its host
  std::optional<DetectedValue> local_size;  // the number of the job's processes on its host
  // Where each process runs, when the scheduler's layout says: runs of
  // consecutive ids on one host, in id order ({"node-1", 4}, {"node-2", 4}:
  // ids 0-3 on node-1, 4-7 on node-2), or a prefix that the id completes
  // ("train-" gives train-0, train-1, ...). Process 0 spells them out
  // (ClusterSpec::process_hosts) to name processes that never arrived.
  std::vector<std::pair<std::string, int64_t>> process_host_runs;
  std::string process_host_prefix;
  std::string process_hosts_source;  // the variables they come from
  // For each value left out: why, and what to set instead.
  std::string job_addresses_hint;
  std::string num_processes_hint;
  std::string process_id_hint;
};

using DetectResult = Result<std::optional<Detection>>;

struct Detector {
  std::string_view name;        // the public value of cluster_detection / KDIST_CLUSTER_DETECTION
  std::string_view summary;     // what it reads, for help texts and `kdist doctor`
  std::string_view presence;    // the variables whose presence means "this scheduler is here"
  // Every variable it reads, the coordinator port overrides included; for
  // help texts and tests. Presence is decided by `detect` alone (see
  // `presence`): a variable here does not make the detector present.
  std::vector<std::string_view> variables;
  DetectResult (*detect)(const Environment& env);
};

// The detectors, in the order "auto" tries them.
const std::vector<Detector>& Detectors();

// The detector named `name`, or nullptr.
const Detector* FindDetector(std::string_view name);

// Detection as `mode` asks: "none" finds nothing; "auto" asks each detector
// in table order and returns the first that is present (its values, or its
// error when its variables are partial or malformed); a detector's name asks
// that one only, and its absence is a kNotFound error naming its variables.
// `mode` must be "auto", "none" or a detector's name.
DetectResult DetectCluster(std::string_view mode, const Environment& env);

// What every detector makes of the environment, in table order (for `kdist
// doctor`): absent ones have ok() status and no detection.
struct DetectorReport {
  std::string name;
  Status status;
  std::optional<Detection> detection;
};
std::vector<DetectorReport> DetectAll(const Environment& env);

}  // namespace kdist

#endif  // KDIST_DETECTORS_H_
