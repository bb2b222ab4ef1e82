#include "config/cluster_spec.h"

#include <cstdio>

#include "stop/stop_signals.h"

namespace kdist {
namespace {

std::string Seconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", seconds);
  return buffer;
}

}  // namespace

std::optional<Address> ClusterSpec::coordinator() const {
  if (job_addresses.value.empty()) return std::nullopt;
  return job_addresses.value.front();
}

std::string ClusterSpec::Fingerprint() const {
  const std::optional<Address> coord = coordinator();
  const std::string canonical = "kdist-job-v1;coordinator=" + (coord ? coord->ToString() : "") +
                                ";num_processes=" + std::to_string(num_processes.value) +
                                ";heartbeat_timeout=" +
                                std::to_string(heartbeat_timeout_seconds.value) +
                                ";shutdown_timeout=" +
                                std::to_string(shutdown_timeout_seconds.value) +
                                ";unreachable_timeout=" +
                                Seconds(NanosToSeconds(unreachable_timeout.value)) +
                                ";consistency=" + std::string(ConsistencyPolicyName(consistency.value)) +
                                ";stop_signals=" + FormatStopSignals(stop_signals.value) +
                                ";stall_timeout=" +
                                (stall_timeout.value
                                     ? Seconds(NanosToSeconds(*stall_timeout.value))
                                     : std::string("off"));
  return HexDigest(canonical);
}

bool ClusterSpec::SameJobAndProcess(const ClusterSpec& other) const {
  return job_addresses.value == other.job_addresses.value &&
         num_processes.value == other.num_processes.value &&
         process_id.value == other.process_id.value &&
         local_device_ids.value == other.local_device_ids.value;
}

std::string HexDigest(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kHex[hash & 0xf];
    hash >>= 4;
  }
  return out;
}

}  // namespace kdist
