// The "kubernetes" detector: Kubernetes Indexed Jobs (JOB_COMPLETION_INDEX,
// HOSTNAME, KDIST_K8S_SUBDOMAIN) and JobSets of several jobs
// (KDIST_K8S_JOB_GLOBAL_INDEX, KDIST_K8S_JOB_COMPLETIONS and
// KDIST_K8S_GLOBAL_REPLICAS).
#ifndef KDIST_CLUSTERS_KUBERNETES_H_
#define KDIST_CLUSTERS_KUBERNETES_H_

#include "detectors.h"

namespace kdist {

// The detector's entry in the table of detectors.h: its name, what it reads
// and its detection function.
Detector KubernetesDetector();

}  // namespace kdist

#endif  // KDIST_CLUSTERS_KUBERNETES_H_
