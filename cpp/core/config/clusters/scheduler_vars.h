// What every detector (clusters/<scheduler>.h) does with a scheduler's
// variables: show them in messages, say that they are malformed or
// incomplete, and turn a host and port into the coordinator's address, with
// the coordinator port overrides (KDIST_COORDINATOR_PORT, JAX_COORDINATOR_PORT)
// applied in one place.
#ifndef KDIST_CONFIG_CLUSTERS_SCHEDULER_VARS_H_
#define KDIST_CONFIG_CLUSTERS_SCHEDULER_VARS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/detection.h"
#include "net/address.h"

namespace kdist {

// Overrides the port of a coordinator whose port a detector derives (Slurm,
// Open MPI 4, Kubernetes) or takes from MASTER_PORT (torchrun).
inline constexpr std::string_view kEnvCoordinatorPort = "KDIST_COORDINATOR_PORT";
// JAX's own variable for the same purpose, honoured after kdist's.
inline constexpr std::string_view kEnvJaxCoordinatorPort = "JAX_COORDINATOR_PORT";

// The first port of the range JAX derives coordinator ports in: 61440..65535.
inline constexpr uint64_t kDerivedPortBase = 65535 - 4096 + 1;

// The end of a detector's error: how to configure the job without it.
inline constexpr std::string_view kExplicitWay =
    "Otherwise configure the job explicitly (KERAS_DISTRIBUTION_JOB_ADDRESSES, "
    "KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID), or set "
    "KDIST_CLUSTER_DETECTION=none to turn scheduler detection off.";

// NAME="value", as messages show a variable.
std::string Shown(std::string_view name, std::string_view value);

// A value taken as it is from one variable.
DetectedValue Copy(std::string_view name, const std::string& value);

// "A", "A and B", "A, B and C".
std::string Listed(const std::vector<std::string>& items);

// "scheduler detection (slurm): ", the start of every detector's message.
std::string Prefix(std::string_view detector);

// A variable that is present but unusable: the prefix, NAME="value", then `reason`.
Status Malformed(std::string_view detector, std::string_view name, std::string_view value,
                 std::string_view reason);

// Some of `wanted` are set, others are missing: names both, then `advice`
// and how to configure the job without the detector.
Status Incomplete(std::string_view detector, const Environment& env,
                  const std::vector<std::string_view>& wanted, std::string_view advice);

// Whether every one of `names` is set.
bool HasAll(const Environment& env, const std::vector<std::string_view>& names);

// The coordinator's port and the variable(s) it came from.
struct PortChoice {
  uint16_t port = 0;
  std::string variable;
};

// KDIST_COORDINATOR_PORT, else JAX_COORDINATOR_PORT, when set, replaces
// `port` (the one the detector derived) and, when `shown` is given, is added
// to it (", KDIST_COORDINATOR_PORT=\"1234\""). Returns whether an override
// applied; a malformed override is an error that names it.
Result<bool> ApplyPortOverride(std::string_view detector, const Environment& env,
                               PortChoice& port, std::string* shown);

// The coordinator at `host` as a scheduler writes it: an IPv4 address, a host
// name, or an IPv6 address with or without brackets. Failure is ParseHost's.
Result<Address> HostPort(std::string_view host, uint16_t port);

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_SCHEDULER_VARS_H_
