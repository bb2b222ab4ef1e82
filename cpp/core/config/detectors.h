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
//   skypilot    SKYPILOT_NODE_IPS, SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES
//   tf_config   TF_CONFIG (cluster + task JSON)
//   gke_tpu     TPU_PROCESS_ADDRESSES or TPU_WORKER_HOSTNAMES, TPU_WORKER_ID,
//               MEGASCALE_* (multislice)
//   gce_tpu     the GCE metadata server: agent-worker-number,
//               worker-network-endpoints, tpu-env (MEGASCALE_*)
//   kubernetes  JOB_COMPLETION_INDEX, HOSTNAME, KDIST_K8S_SUBDOMAIN; in a JobSet
//               of several jobs, KDIST_K8S_JOB_GLOBAL_INDEX and
//               KDIST_K8S_JOB_COMPLETIONS (and KDIST_K8S_GLOBAL_REPLICAS)
//
// SkyPilot runs its task on every node itself (inside a Slurm allocation too),
// so its variables describe the processes: it comes before Slurm. The TPU
// platforms come after the static descriptions and before Kubernetes: a GKE
// TPU pod is also an Indexed Job's pod, and gke_tpu publishes more; gce_tpu
// follows gke_tpu as in JAX (a GKE TPU node is a GCE VM too).
//
// Each detector lives in clusters/<scheduler>.{h,cc} (what a detector is and
// returns: config/clusters/detection.h; what they share: config/clusters/scheduler_vars.h);
// this file holds the table and its users.
//
// Every detector is a pure function of the snapshot (no network, no files,
// no Kubernetes API), except gce_tpu, which also asks the machine
// (config/clusters/detection.h's Machine: its TPU chips, its metadata
// server); "auto" and DetectAll ask gce_tpu only where the machine shows TPU
// chips or a TPU variable is set, so elsewhere nothing leaves the process. It reports nothing when its variables are absent, an
// error (kInvalidArgument, naming the variables) when they are present but
// partial or malformed, and otherwise the values it can give, each with the
// variables it came from. A value the scheduler does not publish (MPICH's
// coordinator, Kubernetes' process count) is left out with a hint that says
// what to set instead.
#ifndef KDIST_CONFIG_DETECTORS_H_
#define KDIST_CONFIG_DETECTORS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/detection.h"

namespace kdist {

// The detectors, in the order "auto" tries them.
const std::vector<Detector>& Detectors();

// The detector named `name`, or nullptr.
const Detector* FindDetector(std::string_view name);

// Detection as `mode` asks: "none" finds nothing; "auto" asks each detector
// in table order and returns the first that is present (its values, or its
// error when its variables are partial or malformed); a detector's name asks
// that one only, and its absence is a kNotFound error naming its variables.
// `mode` must be "auto", "none" or a detector's name.
// `machine`: what the platform detectors may read; without it, a machine that
// shows nothing (no TPU chips, no metadata server).
DetectResult DetectCluster(std::string_view mode, const Environment& env);
DetectResult DetectCluster(std::string_view mode, const Environment& env, const Machine& machine);

// What every detector makes of the environment, in table order (for `kdist
// doctor`): absent ones have ok() status and no detection.
struct DetectorReport {
  std::string name;
  Status status;
  std::optional<Detection> detection;
};
// A detector "auto" would not ask on this machine is reported absent.
std::vector<DetectorReport> DetectAll(const Environment& env);
std::vector<DetectorReport> DetectAll(const Environment& env, const Machine& machine);

}  // namespace kdist

#endif  // KDIST_CONFIG_DETECTORS_H_
