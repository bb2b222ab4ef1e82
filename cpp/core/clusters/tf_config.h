// The "tf_config" detector: TensorFlow's TF_CONFIG (the cluster's "chief"
// and "worker" tasks and this process's task, as JSON).
#ifndef KDIST_CLUSTERS_TF_CONFIG_H_
#define KDIST_CLUSTERS_TF_CONFIG_H_

#include "clusters/detection.h"

namespace kdist {

// The detector's entry in the table of detectors.h: its name, what it reads
// and its detection function.
Detector TfConfigDetector();

}  // namespace kdist

#endif  // KDIST_CLUSTERS_TF_CONFIG_H_
