#include "config/clusters/slurm_hostlist.h"

#include <optional>

#include "base/scalars.h"
#include "base/text.h"

namespace kdist {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-' ||
         c == '_' || c == '.';
}

std::string At(size_t offset) { return "at byte " + std::to_string(offset); }

std::string TooMany(size_t max_items) {
  return "expands to more than " + std::to_string(max_items) + " entries";
}

// ParseDigits on a run of digits starting at `offset` within the whole text,
// with the problem's byte offset in the message.
Result<uint64_t> ParseDigitsAt(std::string_view digits, size_t offset) {
  Result<uint64_t> value = ParseDigits(digits);
  if (value.ok()) return value;
  if (digits.empty()) return InvalidArgument("has a missing number " + At(offset));
  for (size_t i = 0; i < digits.size(); ++i) {
    if (!IsDigit(digits[i])) {
      return InvalidArgument("has " + Quote(digits.substr(i, 1)) + " " + At(offset + i) +
                             " where a digit was expected");
    }
  }
  return InvalidArgument("has a number longer than " + std::to_string(kMaxDigits) +
                         " digits " + At(offset));
}

std::string Padded(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// The values of one bracket group's body, e.g. "01-04,07" (without brackets)
// starting at `offset` in the whole text.
Result<std::vector<std::string>> ExpandGroup(std::string_view body, size_t offset,
                                             size_t max_items) {
  std::vector<std::string> values;
  size_t item_offset = offset;
  for (std::string_view item : Split(body, ',')) {
    const size_t dash = item.find('-');
    const std::string_view low_text = item.substr(0, dash);
    KDIST_ASSIGN_OR_RETURN(const uint64_t low, ParseDigitsAt(low_text, item_offset));
    uint64_t high = low;
    if (dash != std::string_view::npos) {
      KDIST_ASSIGN_OR_RETURN(const uint64_t parsed,
                             ParseDigitsAt(item.substr(dash + 1), item_offset + dash + 1));
      high = parsed;
      if (high < low) {
        return InvalidArgument("has the range " + Quote(item) + " " + At(item_offset) +
                               ", which runs backwards");
      }
    }
    if (high - low >= max_items - values.size()) return InvalidArgument(TooMany(max_items));
    for (uint64_t v = low;; ++v) {
      values.push_back(Padded(v, low_text.size()));
      if (v == high) break;
    }
    item_offset += item.size() + 1;
  }
  return values;
}

// One comma-separated entry of a host list: literal runs and bracket groups.
Status ExpandEntry(std::string_view entry, size_t offset, size_t max_items,
                   std::vector<std::string>& hosts) {
  if (entry.empty()) return InvalidArgument("has an empty host name " + At(offset));
  // The entry as a sequence of choices: a literal is a choice of one.
  std::vector<std::vector<std::string>> parts;
  size_t combinations = 1;
  size_t i = 0;
  while (i < entry.size()) {
    if (entry[i] == '[') {
      const size_t close = entry.find(']', i);
      if (close == std::string_view::npos) {
        return InvalidArgument("has an unclosed '[' " + At(offset + i));
      }
      const std::string_view body = entry.substr(i + 1, close - i - 1);
      if (body.find('[') != std::string_view::npos) {
        return InvalidArgument("has a '[' inside brackets " +
                               At(offset + i + 1 + body.find('[')));
      }
      if (body.empty()) return InvalidArgument("has empty brackets " + At(offset + i));
      KDIST_ASSIGN_OR_RETURN(std::vector<std::string> values,
                             ExpandGroup(body, offset + i + 1, max_items));
      if (values.size() > max_items / combinations) return InvalidArgument(TooMany(max_items));
      combinations *= values.size();
      parts.push_back(std::move(values));
      i = close + 1;
    } else if (entry[i] == ']') {
      return InvalidArgument("has a ']' without a '[' " + At(offset + i));
    } else {
      size_t end = i;
      while (end < entry.size() && entry[end] != '[' && entry[end] != ']') {
        if (!IsNameChar(entry[end])) {
          return InvalidArgument("has " + Quote(entry.substr(end, 1)) + " " +
                                 At(offset + end) +
                                 ", which is not allowed in a host name (letters, digits, "
                                 "'-', '_' and '.' are)");
        }
        ++end;
      }
      parts.push_back({std::string(entry.substr(i, end - i))});
      i = end;
    }
  }
  if (combinations > max_items - hosts.size()) return InvalidArgument(TooMany(max_items));

  // The product, leftmost part varying slowest.
  std::vector<size_t> index(parts.size(), 0);
  for (size_t n = 0; n < combinations; ++n) {
    std::string host;
    for (size_t p = 0; p < parts.size(); ++p) host += parts[p][index[p]];
    hosts.push_back(std::move(host));
    for (size_t p = parts.size(); p-- > 0;) {
      if (++index[p] < parts[p].size()) break;
      index[p] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view text, size_t max_items) {
  if (text.empty()) return InvalidArgument("is empty");
  if (max_items == 0) return InvalidArgument(TooMany(max_items));
  std::vector<std::string> hosts;
  size_t start = 0;
  bool in_brackets = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size()) {
      if (text[i] == '[') in_brackets = true;
      if (text[i] == ']') in_brackets = false;
      if (text[i] != ',' || in_brackets) continue;
    }
    KDIST_RETURN_IF_ERROR(ExpandEntry(text.substr(start, i - start), start, max_items, hosts));
    start = i + 1;
  }
  return hosts;
}

Result<std::vector<int64_t>> ExpandTasksPerNode(std::string_view text, size_t max_items) {
  if (text.empty()) return InvalidArgument("is empty");
  std::vector<int64_t> counts;
  size_t offset = 0;
  for (std::string_view item : Split(text, ',')) {
    std::string_view count_text = item;
    uint64_t repeat = 1;
    const size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      count_text = item.substr(0, paren);
      const std::string_view suffix = item.substr(paren);  // "(x3)"
      if (suffix.size() < 4 || suffix.substr(0, 2) != "(x" || suffix.back() != ')') {
        return InvalidArgument("has " + Quote(item) + " " + At(offset) +
                               "; expected a count, or a count and a repeat such as 2(x3)");
      }
      const std::string_view repeat_text = suffix.substr(2, suffix.size() - 3);
      KDIST_ASSIGN_OR_RETURN(repeat, ParseDigitsAt(repeat_text, offset + paren + 2));
      if (repeat == 0) return InvalidArgument("repeats a count 0 times " + At(offset + paren));
    }
    KDIST_ASSIGN_OR_RETURN(const uint64_t count, ParseDigitsAt(count_text, offset));
    if (count == 0) return InvalidArgument("has a task count of 0 " + At(offset));
    if (repeat > max_items - counts.size()) return InvalidArgument(TooMany(max_items));
    counts.insert(counts.end(), repeat, static_cast<int64_t>(count));
    offset += item.size() + 1;
  }
  return counts;
}

}  // namespace kdist
