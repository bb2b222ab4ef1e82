// What the Cloud TPU detectors (gce_tpu, gke_tpu) share: the workers of a
// slice, the multislice values (MEGASCALE_*), and the process id, count and
// coordinator JAX computes from them (jax/_src/clusters/cloud_tpu_cluster.py):
//
//   process count = workers per slice * slices
//   process id    = slice id * workers per slice + worker id
//   coordinator   = MEGASCALE_COORDINATOR_ADDRESS's host, else the first worker's,
//                   on JAX's TPU port (8482) unless KDIST_COORDINATOR_PORT or
//                   JAX_COORDINATOR_PORT says otherwise.
#ifndef KDIST_CONFIG_CLUSTERS_TPU_SLICES_H_
#define KDIST_CONFIG_CLUSTERS_TPU_SLICES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/detection.h"

namespace kdist {

// The port JAX's TPU clusters use for the coordinator.
inline constexpr uint16_t kTpuCoordinatorPort = 8482;

inline constexpr std::string_view kEnvMegascaleCoordinator = "MEGASCALE_COORDINATOR_ADDRESS";
inline constexpr std::string_view kEnvMegascaleNumSlices = "MEGASCALE_NUM_SLICES";
inline constexpr std::string_view kEnvMegascaleSliceId = "MEGASCALE_SLICE_ID";

// Variables whose presence says this process runs on a Cloud TPU (set by
// GKE, by queued resources, or by the user from the metadata's tpu-env): with
// TPU chips, what lets "auto" ask the metadata server.
inline constexpr std::string_view kTpuVariables[] = {
    "TPU_WORKER_ID",          "TPU_WORKER_HOSTNAMES",   "TPU_PROCESS_ADDRESSES",
    "TPU_ACCELERATOR_TYPE",   kEnvMegascaleCoordinator, kEnvMegascaleNumSlices,
    kEnvMegascaleSliceId};

// Whether this machine shows TPU chips or any of kTpuVariables is set.
bool LooksLikeTpu(const Environment& env, const Machine& machine);

// One value read from a variable or a metadata attribute.
struct TpuValue {
  std::string text;
  std::string source;  // "MEGASCALE_SLICE_ID", "metadata agent-worker-number"
  std::string shown;   // MEGASCALE_SLICE_ID="1", metadata agent-worker-number="1"
};

// A TpuValue read from the variable `name`.
TpuValue FromVariable(std::string_view name, const std::string& value);

// What a TPU detector read, for TpuDetection to compute from.
struct TpuSlice {
  std::string detector;              // "gce_tpu", "gke_tpu"
  std::vector<std::string> workers;  // this slice's worker hosts, in worker id order
  TpuValue workers_value;            // the list as read
  TpuValue worker_id;                // this worker's id in its slice
  std::optional<TpuValue> num_slices;
  std::optional<TpuValue> slice_id;
  std::optional<TpuValue> megascale_coordinator;
};

// GCE's worker-network-endpoints in either format: host names ("w-0,w-1",
// the new format) or name:id:ip triples ("w-0:id0:10.0.0.2,...", the old
// one, whose ip is taken). Failure (kInvalidArgument) is the reason, to
// follow the value in a message.
Result<std::vector<std::string>> GceWorkerHosts(std::string_view text);

// GKE's TPU_WORKER_HOSTNAMES or TPU_PROCESS_ADDRESSES ("host" or
// "host:port" entries): the host of each entry, as JAX takes it.
Result<std::vector<std::string>> GkeWorkerHosts(std::string_view text);

// The value of `key` in the metadata's tpu-env ("KEY: 'value'" lines), as
// JAX reads it: the first colon splits, the value loses its spaces and quotes.
std::optional<std::string> TpuEnvValue(std::string_view tpu_env, std::string_view key);

// The process id, count and coordinator from a slice's values, checked
// (worker id below the number of workers, slice id below the number of
// slices); errors are kInvalidArgument naming the values.
DetectResult TpuDetection(const TpuSlice& slice, const Environment& env);

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_TPU_SLICES_H_
