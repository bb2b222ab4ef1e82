#include "base/text.h"

#include <algorithm>
#include <cstring>

namespace kdist {
namespace {

// strerror_r comes in a GNU (char*) and an XSI (int) flavour.
[[maybe_unused]] const char* PickMessage(int result, const char* buffer) {
  return result == 0 ? buffer : nullptr;
}
[[maybe_unused]] const char* PickMessage(const char* result, const char*) { return result; }

}  // namespace

std::string Quote(std::string_view text, size_t max_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  const bool cut = text.size() > max_chars;
  if (cut) text = text.substr(0, max_chars);
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += '"';
  if (cut) out += "...";
  return out;
}

std::string_view Trim(std::string_view text) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string RelayText(std::string_view text, size_t max_chars) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n') || c > 0x7e) return Quote(text, max_chars);
  }
  return std::string(text);
}

std::string ErrorText(int error) {
  char buffer[128] = {};
  const char* message = PickMessage(strerror_r(error, buffer, sizeof buffer), buffer);
  std::string text = message != nullptr ? message : "error " + std::to_string(error);
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z' &&
      !(text.size() > 1 && text[1] >= 'A' && text[1] <= 'Z')) {
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  }
  return text;
}

std::string SafeText(std::string_view text, std::string_view allowed) {
  if (text.empty() || text.size() > 255) return Quote(text);
  for (char c : text) {
    if (!IsAlnum(c) && allowed.find(c) == std::string_view::npos) return Quote(text);
  }
  return std::string(text);
}

std::string AlignedTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += "\n";
  }
  return out;
}

std::string HexText(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

}  // namespace kdist
