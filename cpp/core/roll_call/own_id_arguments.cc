#include "roll_call/own_id_arguments.h"

#include <string>
#include <vector>

#include "base/hmac_sha256.h"
#include "base/scalars.h"
#include "base/text.h"

namespace kdist {
namespace {

struct Described {
  std::string_view shape;
  std::vector<std::string_view> codes;
};

// "sha256:<shape> <code> ..." with at least one code; false otherwise.
bool Split(std::string_view value, Described& out) {
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) return false;
  out.shape = value.substr(0, space);
  std::string_view rest = value.substr(space + 1);
  while (!rest.empty()) {
    const size_t next = rest.find(' ');
    const std::string_view code = rest.substr(0, next);
    if (code.empty()) return false;
    out.codes.push_back(code);
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  }
  return !out.codes.empty();
}

// "=<width>": the process's own id, written with that many digits.
bool IsOwnId(std::string_view code) { return !code.empty() && code.front() == '='; }

// The code a run of digits gets when it is not the process's own id.
std::string CodeOf(std::string_view run) {
  return HexText(DigestBytes(ComputeSha256(run)).substr(0, 4));
}

// The text behind an own-id code of process `id` ("=4" in process 3: "0003"); ""
// for a malformed width.
std::string OwnIdText(std::string_view code, int64_t id) {
  Result<int64_t> width = ParseInteger(code.substr(1));
  if (!width.ok() || *width < 1 || *width > 64) return "";
  std::string text = std::to_string(id);
  if (static_cast<int64_t>(text.size()) < *width) {
    text.insert(0, static_cast<size_t>(*width) - text.size(), '0');
  }
  return text;
}

// Whether one run of digits is the same text in both processes, or each one's own id.
bool SameRunOrOwnIds(std::string_view x, int64_t x_id, std::string_view y, int64_t y_id) {
  if (IsOwnId(x) && IsOwnId(y)) return true;
  if (IsOwnId(x)) return CodeOf(OwnIdText(x, x_id)) == y;  // the same number in both
  if (IsOwnId(y)) return CodeOf(OwnIdText(y, y_id)) == x;
  return x == y;
}

}  // namespace

bool DifferOnlyByOwnIds(std::string_view a, int64_t a_id, std::string_view b, int64_t b_id) {
  Described first, second;
  if (!Split(a, first) || !Split(b, second)) return false;
  if (first.shape != second.shape || first.codes.size() != second.codes.size()) return false;
  for (size_t i = 0; i < first.codes.size(); ++i) {
    if (!SameRunOrOwnIds(first.codes[i], a_id, second.codes[i], b_id)) return false;
  }
  return true;
}

}  // namespace kdist
