// The "slurm" detector: Slurm job steps started by srun, from SLURM_JOB_ID,
// SLURM_STEP_NODELIST (config/clusters/slurm_hostlist.h), SLURM_STEP_NUM_TASKS (or
// SLURM_NTASKS), SLURM_PROCID and SLURM_LOCALID; the restart count from
// SLURM_RESTART_COUNT.
#ifndef KDIST_CONFIG_CLUSTERS_SLURM_H_
#define KDIST_CONFIG_CLUSTERS_SLURM_H_

#include "config/clusters/detection.h"

namespace kdist {

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector SlurmDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_SLURM_H_
