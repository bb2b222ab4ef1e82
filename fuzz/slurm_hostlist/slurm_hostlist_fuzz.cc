// libFuzzer target: Slurm host-list and tasks-per-node expansion.
// Properties: the expansion respects its size bound; no name is empty; counts are positive.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/clusters/slurm_hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr size_t kBound = 4096;
  auto hosts = kdist::ExpandHostList(text, kBound);
  if (hosts.ok()) {
    if (hosts->empty() || hosts->size() > kBound) __builtin_trap();
    for (const auto& host : *hosts) {
      if (host.empty()) __builtin_trap();
    }
  } else if (hosts.status().message().empty()) {
    __builtin_trap();
  }
  auto tasks = kdist::ExpandTasksPerNode(text, kBound);
  if (tasks.ok()) {
    if (tasks->size() > kBound) __builtin_trap();
    for (int64_t count : *tasks) {
      if (count < 1) __builtin_trap();
    }
  }
  return 0;
}
