// libFuzzer target: the JSON parser behind TF_CONFIG.
// Properties: failures explain themselves; objects have unique keys; depth is bounded.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "json.h"

namespace {

size_t CheckValue(const kdist::JsonValue& value) {  // returns the depth
  size_t deepest = 0;
  if (value.is_array()) {
    for (const kdist::JsonValue& item : value.items()) {
      const size_t depth = CheckValue(item);
      if (depth > deepest) deepest = depth;
    }
  } else if (value.is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, member] : value.members()) {
      if (!keys.insert(key).second) __builtin_trap();
      const size_t depth = CheckValue(member);
      if (depth > deepest) deepest = depth;
    }
  } else if (value.is_number()) {
    (void)value.AsInteger();
  }
  return deepest + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kdist::JsonLimits limits;
  limits.max_depth = 16;
  kdist::Result<kdist::JsonValue> value = kdist::ParseJson(text, limits);
  if (value.ok()) {
    if (CheckValue(*value) > limits.max_depth + 1) __builtin_trap();
  } else if (value.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
