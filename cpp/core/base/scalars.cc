#include "base/scalars.h"

#include <charconv>
#include <cmath>
#include <string>

#include "base/text.h"

namespace kdist {

Result<int64_t> ParseInteger(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return InvalidArgument("is empty");
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range) return InvalidArgument("is out of the 64-bit range");
  if (ec != std::errc() || ptr != end) return InvalidArgument("is not an integer");
  return value;
}

Result<uint64_t> ParseDigits(std::string_view text) {
  if (text.empty()) return InvalidArgument("is empty");
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsDigit(text[i])) {
      return InvalidArgument("has " + Quote(text.substr(i, 1)) + " at index " + std::to_string(i) +
                             " where a digit was expected");
    }
  }
  if (text.size() > kMaxDigits) {
    return InvalidArgument("has more than " + std::to_string(kMaxDigits) + " digits");
  }
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);  // cannot overflow
  return value;
}

Result<double> ParseSeconds(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return InvalidArgument("is empty");
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return InvalidArgument("is not a number");
  if (!std::isfinite(value)) return InvalidArgument("is not finite");
  if (value < 0) return InvalidArgument("is negative");
  return value;
}

Result<bool> ParseBool(std::string_view text) {
  const std::string word = Lower(Trim(text));
  if (word == "1" || word == "true" || word == "yes" || word == "on") return true;
  if (word == "0" || word == "false" || word == "no" || word == "off") return false;
  if (word.empty()) return InvalidArgument("is empty");
  return InvalidArgument("is not a boolean");
}

}  // namespace kdist
