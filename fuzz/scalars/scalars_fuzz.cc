// libFuzzer target: integer, seconds and boolean parsing.
// Properties: a parsed integer prints to text that parses back to itself; a
// text ParseDigits accepts is 1..kMaxDigits ASCII digits that ParseInteger
// reads as the same value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/scalars.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kdist::Result<int64_t> integer = kdist::ParseInteger(text);
  if (integer.ok()) {
    kdist::Result<int64_t> again = kdist::ParseInteger(std::to_string(*integer));
    if (!again.ok() || *again != *integer) __builtin_trap();
  }
  kdist::Result<uint64_t> digits = kdist::ParseDigits(text);
  if (digits.ok()) {
    if (text.empty() || text.size() > kdist::kMaxDigits) __builtin_trap();
    for (char c : text) {
      if (c < '0' || c > '9') __builtin_trap();
    }
    if (!integer.ok() || *integer < 0 || static_cast<uint64_t>(*integer) != *digits) {
      __builtin_trap();
    }
  }
  kdist::Result<double> seconds = kdist::ParseSeconds(text);
  if (seconds.ok() && !(*seconds >= 0)) __builtin_trap();
  (void)kdist::ParseBool(text);
  return 0;
}
