// libFuzzer target: every scheduler detector over environments built from fuzz bytes.
// Input: "NAME=VALUE" lines, like tests/fixtures/schedulers/*.env (the seed corpus).
// Properties: detection never crashes; a failure explains itself; "auto" agrees with
// DetectAll on which detector answers first.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "config/detectors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kdist::Environment env;
  for (std::string_view line : kdist::Split(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  const kdist::DetectResult automatic = kdist::DetectCluster("auto", env);
  if (!automatic.ok() && automatic.status().message().empty()) __builtin_trap();
  const std::vector<kdist::DetectorReport> reports = kdist::DetectAll(env);
  for (const kdist::DetectorReport& report : reports) {
    if (!report.status.ok() && report.status.message().empty()) __builtin_trap();
    (void)kdist::DetectCluster(report.name, env);
  }
  for (const kdist::DetectorReport& report : reports) {  // the first present one answers "auto"
    if (!report.status.ok() || report.detection) {
      const bool same = automatic.ok() == report.status.ok() &&
                        (!automatic.ok() || (automatic->has_value() &&
                                             (*automatic)->detector == report.name));
      if (!same) __builtin_trap();
      break;
    }
  }
  return 0;
}
