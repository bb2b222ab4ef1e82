// The "torchrun" detector: torchrun-style launchers (torchrun,
// torch.distributed.launch, Kubeflow's PyTorchJob) set MASTER_ADDR,
// MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK and LOCAL_WORLD_SIZE; torchrun's
// elastic agent sets TORCHELASTIC_RESTART_COUNT, the restart count.
#ifndef KDIST_CONFIG_CLUSTERS_TORCHRUN_H_
#define KDIST_CONFIG_CLUSTERS_TORCHRUN_H_

#include "config/clusters/detection.h"

namespace kdist {

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector TorchrunDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_TORCHRUN_H_
