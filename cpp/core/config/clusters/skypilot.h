// The "skypilot" detector: a SkyPilot cluster's task, one process per node,
// read from the variables SkyPilot sets on every node: SKYPILOT_NODE_IPS (one
// IP a line, the head node first), SKYPILOT_NODE_RANK (this node's index in
// that list) and SKYPILOT_NUM_NODES. The coordinator is the head node, on
// JAX's TPU port (8482; SkyPilot names none) unless KDIST_COORDINATOR_PORT or
// JAX_COORDINATOR_PORT says otherwise. JAX has no SkyPilot cluster class.
#ifndef KDIST_CONFIG_CLUSTERS_SKYPILOT_H_
#define KDIST_CONFIG_CLUSTERS_SKYPILOT_H_

#include <cstdint>

#include "config/clusters/detection.h"

namespace kdist {

inline constexpr uint16_t kSkyPilotCoordinatorPort = 8482;

// The detector's entry in the table of config/detectors.h.
Detector SkyPilotDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_SKYPILOT_H_
