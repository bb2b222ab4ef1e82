#include "config/detectors.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/kubernetes.h"
#include "config/clusters/mpich.h"
#include "config/clusters/open_mpi.h"
#include "config/clusters/slurm.h"
#include "config/clusters/tf_config.h"
#include "config/clusters/torchrun.h"

namespace kdist {

const std::vector<Detector>& Detectors() {
  // The order "auto" tries them in (see config/detectors.h): launchers, then Slurm,
  // then the static descriptions.
  static const std::vector<Detector> kTable = {
      TorchrunDetector(), OpenMpiDetector(),  MpichDetector(),
      SlurmDetector(),    TfConfigDetector(), KubernetesDetector(),
  };
  return kTable;
}

const Detector* FindDetector(std::string_view name) {
  for (const Detector& detector : Detectors()) {
    if (detector.name == name) return &detector;
  }
  return nullptr;
}

DetectResult DetectCluster(std::string_view mode, const Environment& env) {
  if (mode == "none") return std::optional<Detection>();
  if (mode == "auto") {
    for (const Detector& detector : Detectors()) {
      DetectResult result = detector.detect(env);
      if (!result.ok() || result->has_value()) return result;
    }
    return std::optional<Detection>();
  }
  const Detector* detector = FindDetector(mode);
  if (detector == nullptr) {
    return Internal("unknown cluster detection mode " + Quote(mode));
  }
  DetectResult result = detector->detect(env);
  if (result.ok() && !result->has_value()) {
    return NotFound("the " + std::string(detector->name) + " detector found none of its variables (" +
                    std::string(detector->presence) + ") in the environment");
  }
  return result;
}

std::vector<DetectorReport> DetectAll(const Environment& env) {
  std::vector<DetectorReport> reports;
  for (const Detector& detector : Detectors()) {
    DetectResult result = detector.detect(env);
    DetectorReport report{std::string(detector.name), result.status(), std::nullopt};
    if (result.ok()) report.detection = *result;
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace kdist
