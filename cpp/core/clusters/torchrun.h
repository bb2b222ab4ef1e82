// The "torchrun" detector: torchrun-style launchers (torchrun,
// torch.distributed.launch, Kubeflow's PyTorchJob) set MASTER_ADDR,
// MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK and LOCAL_WORLD_SIZE; torchrun's
// elastic agent sets TORCHELASTIC_RESTART_COUNT, the restart count.
#ifndef KDIST_CLUSTERS_TORCHRUN_H_
#define KDIST_CLUSTERS_TORCHRUN_H_

#include "clusters/detection.h"

namespace kdist {

// The detector's entry in the table of detectors.h: its name, what it reads
// and its detection function.
Detector TorchrunDetector();

}  // namespace kdist

#endif  // KDIST_CLUSTERS_TORCHRUN_H_
