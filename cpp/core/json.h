// A small, strict JSON parser (RFC 8259), enough to read TF_CONFIG.
//
// Strict: no comments, no trailing commas, no NaN, no leading '+' or zeros,
// no duplicate object keys, no unpaired surrogates, valid UTF-8 only, nothing
// after the value but whitespace. Bounded: the input size and the nesting
// depth are limited, so any byte sequence is safe to pass (recursion is at
// most `max_depth` deep). Numbers keep their text; integers are read from it
// on demand.
#ifndef KDIST_JSON_H_
#define KDIST_JSON_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "status.h"

namespace kdist {

struct JsonLimits {
  size_t max_bytes = size_t{1} << 20;
  size_t max_depth = 64;
};

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;
  static JsonValue Null() { return JsonValue(); }
  static JsonValue Bool(bool value);
  static JsonValue Number(std::string text);
  static JsonValue String(std::string text);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<Member> members);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool bool_value() const { return bool_; }
  // The number's text as written, or the string's decoded UTF-8 bytes.
  const std::string& text() const { return text_; }
  const std::vector<JsonValue>& items() const { return items_; }
  // Members in the order written; keys are unique.
  const std::vector<Member>& members() const { return members_; }

  // The member named `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
  // A number written as an integer ("3", "-1"; not "3.0" or "3e0") that fits
  // in 64 bits, or nullopt.
  std::optional<int64_t> AsInteger() const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<Member> members_;
};

// "null", "a boolean", "a number", "a string", "an array", "an object".
const char* JsonKindName(JsonValue::Kind kind);

// Parses one JSON document. Failure is kInvalidArgument with a reason such
// as "is not valid JSON: expected ',' or '}' at byte 17".
Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits = {});

}  // namespace kdist

#endif  // KDIST_JSON_H_
