// Small string helpers shared by the parsers and the messages they write.
#ifndef KDIST_BASE_TEXT_H_
#define KDIST_BASE_TEXT_H_

#include <string>
#include <string_view>
#include <vector>

namespace kdist {

// `text` in double quotes, safe to print whatever it holds: quotes and
// backslashes are escaped, bytes outside printable ASCII become \xNN, and text
// longer than `max_chars` is cut with "..." after the closing quote.
std::string Quote(std::string_view text, size_t max_chars = 200);

// Text that came off the wire, fit for a message: as is when it is all
// printable ASCII and line breaks (process 0's tables span lines), otherwise
// Quote()d, cut at `max_chars` (base/wire.h's kMaxMessageBytes by default).
std::string RelayText(std::string_view text, size_t max_chars = 8192);

// `text` as is when it is non-empty and made only of letters, digits and
// `allowed`; otherwise Quote(text). For names that come off the wire.
std::string SafeText(std::string_view text, std::string_view allowed = "._-");

// Each byte of `bytes` as two lower-case hex digits: "\x01\xab" gives "01ab".
std::string HexText(std::string_view bytes);

// strerror(error) in lower case, e.g. "connection refused".
std::string ErrorText(int error);

// `text` without leading and trailing ASCII whitespace.
std::string_view Trim(std::string_view text);

// Splits on every `separator`; "a,,b" gives {"a", "", "b"}, "" gives {""}.
std::vector<std::string_view> Split(std::string_view text, char separator);

std::string Join(const std::vector<std::string>& parts, std::string_view separator);

// Rows as a table, one line each ("\n"-terminated), every column as wide as its widest
// cell and two spaces apart; the last column is not padded.
std::string AlignedTable(const std::vector<std::vector<std::string>>& rows);

// ASCII lower-case and upper-case copies.
std::string Lower(std::string_view text);
std::string Upper(std::string_view text);

// Whether `c` is an ASCII decimal digit (unlike std::isdigit, independent of
// the locale and safe for any char value).
constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }
// Whether `c` is an ASCII letter or decimal digit (locale independent, as IsDigit).
constexpr bool IsAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace kdist

#endif  // KDIST_BASE_TEXT_H_
