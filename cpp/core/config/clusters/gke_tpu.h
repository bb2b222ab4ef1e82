// The "gke_tpu" detector: TPU node pools on GKE, read from the variables GKE
// sets in each TPU pod, as JAX's GkeTpuCluster reads them:
// TPU_PROCESS_ADDRESSES, else TPU_WORKER_HOSTNAMES (the slice's workers),
// TPU_WORKER_ID (this worker's id) and, for a multislice JobSet,
// MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID.
// A pure function of the snapshot: no metadata server.
#ifndef KDIST_CONFIG_CLUSTERS_GKE_TPU_H_
#define KDIST_CONFIG_CLUSTERS_GKE_TPU_H_

#include "config/clusters/detection.h"

namespace kdist {

// The detector's entry in the table of config/detectors.h.
Detector GkeTpuDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_GKE_TPU_H_
