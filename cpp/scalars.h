// Parsers for the scalar settings: integers, seconds and booleans.
//
// Each takes the whole text (surrounding whitespace allowed, nothing else) and
// returns kInvalidArgument with a short reason ("is empty", "is not an
// integer") that the caller places after the setting's name and source.
#ifndef KDIST_SCALARS_H_
#define KDIST_SCALARS_H_

#include <cstdint>
#include <string_view>

#include "status.h"

namespace kdist {

// Decimal integer with an optional leading '-'; no '+', no radix prefix.
Result<int64_t> ParseInteger(std::string_view text);

// A finite, non-negative number of seconds: "30", "2.5", "1e3".
Result<double> ParseSeconds(std::string_view text);

// 1/0, true/false, yes/no, on/off, in any letter case.
Result<bool> ParseBool(std::string_view text);

}  // namespace kdist

#endif  // KDIST_SCALARS_H_
