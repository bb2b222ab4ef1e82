// Which of its host's accelerators a process uses.
//
// Schedulers that start several processes per host publish each process's
// local rank (SLURM_LOCALID, LOCAL_RANK, ...). JAX turns that into "one
// device per process" by itself under Slurm and Open MPI, which is wrong when
// one process per host should drive every device, or when the scheduler has
// already narrowed CUDA_VISIBLE_DEVICES (device 0 is then the only one, not
// device <local rank>). kdist only suggests: the suggestion is reported in
// cluster_spec() and applied when KDIST_LOCAL_DEVICE_IDS=auto asks for it.
#ifndef KDIST_CONFIG_LOCAL_DEVICES_H_
#define KDIST_CONFIG_LOCAL_DEVICES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"
#include "config/clusters/detection.h"

namespace kdist {

// "all" (every device the process sees; the default), "auto" (the detected
// scheduler's suggestion), or device ids "0,1".
inline constexpr std::string_view kEnvLocalDeviceIds = "KDIST_LOCAL_DEVICE_IDS";
// JAX's own variable ("0,1"), read after kdist's.
inline constexpr std::string_view kEnvJaxLocalDeviceIds = "JAX_LOCAL_DEVICE_IDS";
inline constexpr size_t kMaxLocalDeviceIds = 4096;

// Variables through which a scheduler or user already limits what a process sees.
inline constexpr std::string_view kVisibilityVariables[] = {
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS"};

struct LocalDeviceSuggestion {
  std::optional<std::vector<int64_t>> ids;  // nullopt: keep every device
  std::string source;                       // "slurm (SLURM_LOCALID)" when there are ids
  std::string reason;                       // why, in words, always set
};

// What the detected scheduler suggests: one device per process, chosen by
// local rank, when several of the job's processes share a host and nothing
// already limits what this process sees. Fails (kInvalidArgument, naming the
// variable) when the local rank or size is malformed.
Result<LocalDeviceSuggestion> SuggestLocalDevices(const std::optional<Detection>& detection,
                                                  const Environment& env);

struct LocalDeviceSetting {
  enum class Kind { kAll, kAuto, kList };
  Kind kind = Kind::kAll;
  std::vector<int64_t> ids;  // for kList: distinct, non-negative
};

// Parses KDIST_LOCAL_DEVICE_IDS's text; failure is kInvalidArgument with a
// reason to be placed after the variable's name.
Result<LocalDeviceSetting> ParseLocalDeviceSetting(std::string_view text);

// The local device ids of `spec` (KDIST_LOCAL_DEVICE_IDS, else JAX_LOCAL_DEVICE_IDS)
// against the detected scheduler's suggestion, which "auto" applies; resolve's step for
// them, once the job's coordinator is known. kInvalidArgument naming the variable.
Status ResolveLocalDevices(const Environment& env, const std::optional<Detection>& detection,
                           ClusterSpec& spec);

}  // namespace kdist

#endif  // KDIST_CONFIG_LOCAL_DEVICES_H_
