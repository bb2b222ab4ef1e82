// libFuzzer target: the whole resolution, arguments and environment from fuzz bytes.
// The input is split on '\n' into fields: six optional arguments (a field starting
// with '\x01' means "not passed"), then KEY=VALUE environment entries.
// Property: a resolved spec is consistent (id in range, address count rules).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "config/resolve.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> fields = kdist::Split(text, '\n');
  auto argument = [&](size_t i) -> std::optional<std::string> {
    if (i >= fields.size() || (!fields[i].empty() && fields[i][0] == '\x01')) return std::nullopt;
    return std::string(fields[i]);
  };
  kdist::Request request{argument(0), argument(1), argument(2),
                         argument(3), argument(4), argument(5)};
  kdist::Environment env;
  for (size_t i = 6; i < fields.size(); ++i) {
    const size_t eq = fields[i].find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(fields[i].substr(0, eq))] = std::string(fields[i].substr(eq + 1));
  }
  kdist::Result<kdist::ClusterSpec> spec = kdist::Resolve(request, env);
  if (spec.ok()) {
    const int64_t n = spec->num_processes.value;
    const int64_t id = spec->process_id.value;
    if (n < 1 || id < 0 || id >= n) __builtin_trap();
    if (n > 1 && spec->job_addresses.value.empty()) __builtin_trap();
    const size_t count = spec->job_addresses.value.size();
    if (count > 1 && static_cast<int64_t>(count) != n) __builtin_trap();
    if (!(spec->timeout_seconds.value > 0)) __builtin_trap();
    (void)spec->Fingerprint();
  } else if (spec.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
