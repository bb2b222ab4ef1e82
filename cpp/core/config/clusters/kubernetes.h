// The "kubernetes" detector: Kubernetes Indexed Jobs (JOB_COMPLETION_INDEX,
// HOSTNAME, KDIST_K8S_SUBDOMAIN) and JobSets of several jobs
// (KDIST_K8S_JOB_GLOBAL_INDEX, KDIST_K8S_JOB_COMPLETIONS and
// KDIST_K8S_GLOBAL_REPLICAS).
#ifndef KDIST_CONFIG_CLUSTERS_KUBERNETES_H_
#define KDIST_CONFIG_CLUSTERS_KUBERNETES_H_

#include <cstdint>
#include <string_view>

#include "config/clusters/detection.h"

namespace kdist {

// The subdomain (headless Service name) of a Kubernetes Indexed Job's pods.
inline constexpr std::string_view kEnvK8sSubdomain = "KDIST_K8S_SUBDOMAIN";
// A JobSet's pods, exposed through the downward API in the pod template:
// the job's index among all jobs of the JobSet (the pod label
// jobset.sigs.k8s.io/job-global-index), the pods of each job (the Job
// template's spec.completions, written as a literal) and, optionally, the
// number of jobs (the annotation jobset.sigs.k8s.io/global-replicas).
inline constexpr std::string_view kEnvK8sJobGlobalIndex = "KDIST_K8S_JOB_GLOBAL_INDEX";
inline constexpr std::string_view kEnvK8sJobCompletions = "KDIST_K8S_JOB_COMPLETIONS";
inline constexpr std::string_view kEnvK8sGlobalReplicas = "KDIST_K8S_GLOBAL_REPLICAS";
// The port JAX uses for Kubernetes jobs.
inline constexpr uint16_t kKubernetesCoordinatorPort = 55527;

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector KubernetesDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_KUBERNETES_H_
