#include "json.h"

#include <set>

#include "scalars.h"
#include "text.h"

namespace kdist {

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.kind_ = Kind::kBool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::Number(std::string text) {
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.text_ = std::move(text);
  return v;
}

JsonValue JsonValue::String(std::string text) {
  JsonValue v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(text);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::kArray;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::Object(std::vector<Member> members) {
  JsonValue v;
  v.kind_ = Kind::kObject;
  v.members_ = std::move(members);
  return v;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const Member& member : members_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

std::optional<int64_t> JsonValue::AsInteger() const {
  if (kind_ != Kind::kNumber || text_.find_first_of(".eE") != std::string::npos) {
    return std::nullopt;
  }
  Result<int64_t> value = ParseInteger(text_);
  if (!value.ok()) return std::nullopt;
  return *value;
}

const char* JsonKindName(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "a boolean";
    case JsonValue::Kind::kNumber: return "a number";
    case JsonValue::Kind::kString: return "a string";
    case JsonValue::Kind::kArray: return "an array";
    case JsonValue::Kind::kObject: return "an object";
  }
  return "a value";
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// The length of the well-formed UTF-8 sequence at the start of `text`, or 0.
size_t Utf8SequenceLength(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // bounds of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;  // no UTF-16 surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

class Parser {
 public:
  Parser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  Result<JsonValue> Document() {
    if (text_.size() > limits_.max_bytes) {
      return InvalidArgument("is not valid JSON here: it is " + std::to_string(text_.size()) +
                             " bytes long, more than the " + std::to_string(limits_.max_bytes) +
                             " allowed");
    }
    SkipSpace();
    Result<JsonValue> value = Value(0);
    if (!value.ok()) return value;
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected " + Show() + " after the value");
    return value;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("is not valid JSON: " + what + " at byte " + std::to_string(pos_));
  }

  // The next character for messages, or "the end".
  std::string Show() const {
    return pos_ < text_.size() ? Quote(text_.substr(pos_, 1)) : std::string("the end");
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Result<JsonValue> Value(size_t depth) {
    if (pos_ >= text_.size()) return Error("expected a value but found the end");
    switch (text_[pos_]) {
      case '{': return Object(depth + 1);
      case '[': return Array(depth + 1);
      case '"': {
        KDIST_ASSIGN_OR_RETURN(std::string s, String());
        return JsonValue::String(std::move(s));
      }
      case 't': return Literal("true", JsonValue::Bool(true));
      case 'f': return Literal("false", JsonValue::Bool(false));
      case 'n': return Literal("null", JsonValue::Null());
      default: break;
    }
    if (text_[pos_] == '-' || IsDigit(text_[pos_])) return Number();
    return Error("expected a value but found " + Show());
  }

  Result<JsonValue> Literal(std::string_view word, JsonValue value) {
    if (text_.substr(pos_, word.size()) != word) {
      return Error("expected " + std::string(word) + " but found " + Show());
    }
    pos_ += word.size();
    return value;
  }

  Result<JsonValue> Number() {
    const size_t start = pos_;
    Consume('-');
    if (Consume('0')) {
      if (pos_ < text_.size() && IsDigit(text_[pos_])) return Error("leading zero in a number");
    } else if (pos_ < text_.size() && IsDigit(text_[pos_])) {
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    } else {
      return Error("expected a digit but found " + Show());
    }
    if (Consume('.')) {
      if (pos_ >= text_.size() || !IsDigit(text_[pos_])) {
        return Error("expected a digit after '.' but found " + Show());
      }
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    }
    if (Consume('e') || Consume('E')) {
      if (!Consume('+')) Consume('-');
      if (pos_ >= text_.size() || !IsDigit(text_[pos_])) {
        return Error("expected a digit in the exponent but found " + Show());
      }
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    }
    return JsonValue::Number(std::string(text_.substr(start, pos_ - start)));
  }

  // Four hex digits after "\u".
  Result<uint32_t> Hex4() {
    if (text_.size() - pos_ < 4) return Error("expected four hex digits after \\u");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = HexValue(text_[pos_]);
      if (digit < 0) return Error("expected a hex digit in \\u escape but found " + Show());
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    return value;
  }

  Result<std::string> String() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) return Error("control character " + Show() + " in a string");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= text_.size()) return Error("unterminated escape");
        const char e = text_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            KDIST_ASSIGN_OR_RETURN(const uint32_t unit, Hex4());
            uint32_t code_point = unit;
            if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
              return Error("unpaired low surrogate in \\u escape");
            }
            if (code_point >= 0xD800 && code_point <= 0xDBFF) {
              if (!(Consume('\\') && Consume('u'))) {
                return Error("unpaired high surrogate in \\u escape");
              }
              KDIST_ASSIGN_OR_RETURN(const uint32_t low, Hex4());
              if (low < 0xDC00 || low > 0xDFFF) {
                return Error("high surrogate not followed by a low surrogate");
              }
              code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
            }
            AppendUtf8(code_point, out);
            break;
          }
          default: {
            --pos_;
            const std::string shown = Show();  // the quoted character
            return Error("unknown escape \\" + shown.substr(1, shown.size() - 2));
          }
        }
        continue;
      }
      if (c < 0x80) {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      const size_t length = Utf8SequenceLength(text_.substr(pos_));
      if (length == 0) return Error("invalid UTF-8 byte " + Show());
      out += text_.substr(pos_, length);
      pos_ += length;
    }
  }

  Status CheckDepth(size_t depth) const {
    if (depth > limits_.max_depth) {
      return Error("nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    return Status::Ok();
  }

  Result<JsonValue> Array(size_t depth) {
    KDIST_RETURN_IF_ERROR(CheckDepth(depth));
    ++pos_;  // '['
    std::vector<JsonValue> items;
    SkipSpace();
    if (Consume(']')) return JsonValue::Array(std::move(items));
    while (true) {
      SkipSpace();
      Result<JsonValue> item = Value(depth);
      if (!item.ok()) return item;
      items.push_back(std::move(item).value());
      SkipSpace();
      if (Consume(']')) return JsonValue::Array(std::move(items));
      if (!Consume(',')) return Error("expected ',' or ']' but found " + Show());
    }
  }

  Result<JsonValue> Object(size_t depth) {
    KDIST_RETURN_IF_ERROR(CheckDepth(depth));
    ++pos_;  // '{'
    std::vector<JsonValue::Member> members;
    std::set<std::string, std::less<>> keys;
    SkipSpace();
    if (Consume('}')) return JsonValue::Object(std::move(members));
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        return Error("expected a string key but found " + Show());
      }
      const size_t key_at = pos_;
      KDIST_ASSIGN_OR_RETURN(std::string key, String());
      if (!keys.insert(key).second) {
        pos_ = key_at;
        return Error("duplicate key " + Quote(key));
      }
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' but found " + Show());
      SkipSpace();
      Result<JsonValue> value = Value(depth);
      if (!value.ok()) return value;
      members.emplace_back(std::move(key), std::move(value).value());
      SkipSpace();
      if (Consume('}')) return JsonValue::Object(std::move(members));
      if (!Consume(',')) return Error("expected ',' or '}' but found " + Show());
    }
  }

  std::string_view text_;
  const JsonLimits& limits_;
  size_t pos_ = 0;
};

}  // namespace

Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits) {
  return Parser(text, limits).Document();
}

}  // namespace kdist
