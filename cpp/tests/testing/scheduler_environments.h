// Environments modelled on what each scheduler sets, and helpers to read what
// detection makes of them, for the detector tests (detectors_test.cc,
// clusters/<scheduler>_test.cc).
#ifndef KDIST_TESTING_SCHEDULER_ENVIRONMENTS_H_
#define KDIST_TESTING_SCHEDULER_ENVIRONMENTS_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/environment.h"
#include "config/detectors.h"

namespace kdist::testing {

// Environments modelled on what each system sets (trimmed of unrelated
// variables but keeping the neighbours a detector must ignore).

// srun --nodes=2 --ntasks-per-node=4, task 5 (second node, local id 1).
inline Environment SlurmStep() {
  return {{"SLURM_JOB_ID", "4242424"},      {"SLURM_JOBID", "4242424"},
          {"SLURM_JOB_NODELIST", "gpu-a[01-02]"}, {"SLURM_NODELIST", "gpu-a[01-02]"},
          {"SLURM_NNODES", "2"},            {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NODELIST", "gpu-a[01-02]"}, {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_NUM_TASKS", "8"},    {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_NTASKS", "8"},            {"SLURM_NPROCS", "8"},
          {"SLURM_TASKS_PER_NODE", "4(x2)"}, {"SLURM_PROCID", "5"},
          {"SLURM_LOCALID", "1"},           {"SLURM_NODEID", "1"},
          {"SLURM_GTIDS", "4,5,6,7"},       {"SLURM_SRUN_COMM_HOST", "10.1.0.5"},
          {"SLURMD_NODENAME", "gpu-a02"},   {"SLURM_CLUSTER_NAME", "hpc"}};
}

// The shell of `salloc -N2 -n8`: an allocation, no job step.
inline Environment SlurmAllocationShell() {
  return {{"SLURM_JOB_ID", "4242425"}, {"SLURM_JOB_NODELIST", "gpu-a[01-02]"},
          {"SLURM_NODELIST", "gpu-a[01-02]"}, {"SLURM_NNODES", "2"},
          {"SLURM_NTASKS", "8"},       {"SLURM_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_SUBMIT_DIR", "/home/u"}};
}

// torchrun --nnodes=2 --nproc-per-node=4 --master-addr=10.0.0.1, worker 6.
inline Environment Torchrun() {
  return {{"MASTER_ADDR", "10.0.0.1"},         {"MASTER_PORT", "29500"},
          {"WORLD_SIZE", "8"},                 {"RANK", "6"},
          {"LOCAL_RANK", "2"},                 {"LOCAL_WORLD_SIZE", "4"},
          {"GROUP_RANK", "1"},                 {"GROUP_WORLD_SIZE", "2"},
          {"ROLE_RANK", "6"},                  {"ROLE_WORLD_SIZE", "8"},
          {"ROLE_NAME", "default"},            {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"TORCHELASTIC_MAX_RESTARTS", "0"},  {"TORCHELASTIC_RUN_ID", "none"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"OMP_NUM_THREADS", "1"}};
}

// mpirun -np 4 under Open MPI 4.1, rank 3 on the second host.
inline Environment OpenMpi4() {
  return {{"OMPI_MCA_orte_hnp_uri", "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911"},
          {"OMPI_COMM_WORLD_SIZE", "4"},       {"OMPI_COMM_WORLD_RANK", "3"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
          {"OMPI_COMM_WORLD_NODE_RANK", "1"},  {"OMPI_UNIVERSE_SIZE", "4"},
          {"OMPI_MCA_orte_ess_num_procs", "4"}, {"OMPI_MCA_ess", "^singleton"}};
}

// mpirun -np 4 under Open MPI 5 (PRRTE): no HNP URI.
inline Environment OpenMpi5() {
  return {{"OMPI_COMM_WORLD_SIZE", "4"},       {"OMPI_COMM_WORLD_RANK", "1"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
          {"OMPI_UNIVERSE_SIZE", "4"},         {"PMIX_RANK", "1"},
          {"PMIX_NAMESPACE", "prterun-node01-12345@1"},
          {"PMIX_SERVER_URI41", "prterun-node01-12345@0.0;tcp4://10.0.0.1:45123"}};
}

// mpiexec -n 4 -ppn 2 under MPICH's Hydra (Intel MPI sets the same), rank 2.
inline Environment Hydra() {
  return {{"PMI_RANK", "2"},        {"PMI_SIZE", "4"},        {"PMI_FD", "6"},
          {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}, {"I_MPI_ROOT", "/opt/intel/mpi"}};
}

inline Environment TfConfig() {
  return {{"TF_CONFIG",
           R"({"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]},
               "task": {"type": "worker", "index": 1}, "environment": "cloud"})"}};
}

// Pod 2 of an Indexed Job "train" whose template names subdomain "train-svc".
inline Environment KubernetesIndexedJob() {
  return {{"JOB_COMPLETION_INDEX", "2"},        {"HOSTNAME", "train-2"},
          {"KDIST_K8S_SUBDOMAIN", "train-svc"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
          {"KUBERNETES_SERVICE_PORT", "443"},   {"KUBERNETES_PORT", "tcp://10.96.0.1:443"}};
}

inline Environment Merged(Environment a, const Environment& b) {
  for (const auto& [k, v] : b) a[k] = v;
  return a;
}

inline Detection Detect(std::string_view mode, const Environment& env) {
  DetectResult result = DetectCluster(mode, env);
  if (!result.ok()) return Detection{"error: " + result.status().message()};
  if (!result->has_value()) return Detection{"nothing"};
  return **result;
}

inline std::string Text(const std::optional<DetectedValue>& value) {
  return value ? value->text : "<none>";
}
inline std::string Vars(const std::optional<DetectedValue>& value) {
  return value ? value->variables : "<none>";
}

}  // namespace kdist::testing

#endif  // KDIST_TESTING_SCHEDULER_ENVIRONMENTS_H_
