// Parsers for the scalar settings: integers, seconds and booleans.
//
// Each takes the whole text (surrounding whitespace allowed, nothing else) and
// returns kInvalidArgument with a short reason ("is empty", "is not an
// integer") that the caller places after the setting's name and source.
#ifndef KDIST_BASE_SCALARS_H_
#define KDIST_BASE_SCALARS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace kdist {

// Decimal integer with an optional leading '-'; no '+', no radix prefix.
Result<int64_t> ParseInteger(std::string_view text);

// The most digits ParseDigits takes: every such number is below 10^18, so it
// fits in int64_t and uint64_t alike.
inline constexpr size_t kMaxDigits = 18;

// A non-negative decimal integer as schedulers write ids and indices: ASCII
// digits only, 1..kMaxDigits of them. Unlike the other parsers here it allows
// no surrounding whitespace and no sign. Reasons: "is empty", "has more than
// 18 digits", "has \"x\" at index 2 where a digit was expected".
Result<uint64_t> ParseDigits(std::string_view text);

// A finite, non-negative number of seconds: "30", "2.5", "1e3".
Result<double> ParseSeconds(std::string_view text);

// 1/0, true/false, yes/no, on/off, in any letter case.
Result<bool> ParseBool(std::string_view text);

}  // namespace kdist

#endif  // KDIST_BASE_SCALARS_H_
