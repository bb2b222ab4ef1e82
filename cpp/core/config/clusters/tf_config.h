// The "tf_config" detector: TensorFlow's TF_CONFIG (the cluster's "chief"
// and "worker" tasks and this process's task, as JSON).
#ifndef KDIST_CONFIG_CLUSTERS_TF_CONFIG_H_
#define KDIST_CONFIG_CLUSTERS_TF_CONFIG_H_

#include "config/clusters/detection.h"

namespace kdist {

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector TfConfigDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_TF_CONFIG_H_
