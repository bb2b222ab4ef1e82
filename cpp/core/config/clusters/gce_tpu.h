// The "gce_tpu" detector: a Cloud TPU VM (a pod slice, or several slices of
// a multislice job), read from the GCE metadata server as JAX's GceTpuCluster
// reads it: agent-worker-number (this worker's id), worker-network-endpoints
// (the slice's workers) and, for MEGASCALE_* values the environment lacks,
// tpu-env. TPU_SKIP_MDS_QUERY, when set, keeps "auto" from asking it (as JAX's
// own detection; JAX sets it itself once its backend found no TPU chip); the
// detector named (cluster_detection="gce_tpu") asks the server anyway.
#ifndef KDIST_CONFIG_CLUSTERS_GCE_TPU_H_
#define KDIST_CONFIG_CLUSTERS_GCE_TPU_H_

#include <string_view>

#include "config/clusters/detection.h"

namespace kdist {

inline constexpr std::string_view kEnvTpuSkipMdsQuery = "TPU_SKIP_MDS_QUERY";

// The detector's entry in the table of config/detectors.h. "auto" asks it only
// where the machine shows TPU chips or a TPU variable is set (LooksLikeTpu) and
// TPU_SKIP_MDS_QUERY is not: elsewhere no DNS lookup or HTTP request is made.
Detector GceTpuDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_GCE_TPU_H_
