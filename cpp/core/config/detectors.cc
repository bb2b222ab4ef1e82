#include "config/detectors.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/gce_tpu.h"
#include "config/clusters/gke_tpu.h"
#include "config/clusters/kubernetes.h"
#include "config/clusters/mpich.h"
#include "config/clusters/open_mpi.h"
#include "config/clusters/skypilot.h"
#include "config/clusters/slurm.h"
#include "config/clusters/tf_config.h"
#include "config/clusters/torchrun.h"

namespace kdist {

const std::vector<Detector>& Detectors() {
  // The order "auto" tries them in (see config/detectors.h): launchers (SkyPilot
  // runs the task on each node itself), then Slurm, then the static descriptions,
  // then the TPU platforms (GKE's before GCE's, as in JAX), then Kubernetes.
  static const std::vector<Detector> kTable = {
      TorchrunDetector(), OpenMpiDetector(), MpichDetector(),  SkyPilotDetector(),
      SlurmDetector(),    TfConfigDetector(), GkeTpuDetector(), GceTpuDetector(),
      KubernetesDetector(),
  };
  return kTable;
}

const Detector* FindDetector(std::string_view name) {
  for (const Detector& detector : Detectors()) {
    if (detector.name == name) return &detector;
  }
  return nullptr;
}

namespace {

bool WorthAsking(const Detector& detector, const Environment& env, const Machine& machine) {
  return detector.worth_asking == nullptr || detector.worth_asking(env, machine);
}

}  // namespace

DetectResult DetectCluster(std::string_view mode, const Environment& env) {
  return DetectCluster(mode, env, Machine{});
}

DetectResult DetectCluster(std::string_view mode, const Environment& env, const Machine& machine) {
  if (mode == "none") return std::optional<Detection>();
  if (mode == "auto") {
    for (const Detector& detector : Detectors()) {
      if (!WorthAsking(detector, env, machine)) continue;
      DetectResult result = RunDetector(detector, env, machine);
      if (!result.ok() || result->has_value()) return result;
    }
    return std::optional<Detection>();
  }
  const Detector* detector = FindDetector(mode);
  if (detector == nullptr) {
    return Internal("unknown cluster detection mode " + Quote(mode));
  }
  DetectResult result = RunDetector(*detector, env, machine);
  if (result.ok() && !result->has_value()) {
    return NotFound("the " + std::string(detector->name) + " detector found none of its variables (" +
                    std::string(detector->presence) + ") in the environment");
  }
  return result;
}

std::vector<DetectorReport> DetectAll(const Environment& env) {
  return DetectAll(env, Machine{});
}

std::vector<DetectorReport> DetectAll(const Environment& env, const Machine& machine) {
  std::vector<DetectorReport> reports;
  for (const Detector& detector : Detectors()) {
    DetectResult result = WorthAsking(detector, env, machine)
                              ? RunDetector(detector, env, machine)
                              : DetectResult(std::optional<Detection>());
    DetectorReport report{std::string(detector.name), result.status(), std::nullopt};
    if (result.ok()) report.detection = *result;
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace kdist
