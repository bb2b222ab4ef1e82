// Slurm's environment, read here only: the "slurm" detector (Slurm job steps started
// by srun, from SLURM_JOB_ID, SLURM_STEP_NODELIST (config/clusters/slurm_hostlist.h),
// SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_PROCID and SLURM_LOCALID; the restart
// count from SLURM_RESTART_COUNT), and the allocation a machine's agent runs in
// (`kdist launch --nodes`: its job id, first host and this node's name).
#ifndef KDIST_CONFIG_CLUSTERS_SLURM_H_
#define KDIST_CONFIG_CLUSTERS_SLURM_H_

#include <optional>
#include <string>

#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/detection.h"

namespace kdist {

// The Slurm allocation this machine is part of, each value with the variable it came from.
struct SlurmAllocation {
  std::string job_id;          // SLURM_JOB_ID
  std::string first_host;      // of SLURM_JOB_NODELIST, else SLURM_NODELIST ("" when neither)
  std::string nodelist_variable;
  std::string node_name;       // SLURMD_NODENAME ("" when unset)
};

// nullopt outside Slurm (no SLURM_JOB_ID); kInvalidArgument naming the variable when the
// node list is malformed.
Result<std::optional<SlurmAllocation>> ReadSlurmAllocation(const Environment& env);

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector SlurmDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_SLURM_H_
