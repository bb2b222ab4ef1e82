// TF_CONFIG is JSON, read with nlohmann-json: a well-kept, widely used,
// header-only library that PyPI ships (the nlohmann-json package), so it is a
// build requirement in pyproject.toml and a fresh machine builds kdist with
// nothing installed by hand; being compiled in, it adds nothing to
// `import kdist`. Python's json module would have moved one scheduler's
// parsing out of the core, which owns every detector, resolves every setting
// and is fuzzed as one (fuzz/detectors feeds TF_CONFIG like any other
// variable).
//
// The document is read as strictly as RFC 8259 asks (no comments, no trailing
// commas, no NaN, no duplicate keys, valid UTF-8, nothing after the value),
// bounded in size and depth, and without exceptions: a checking pass through
// nlohmann-json's SAX interface explains the first problem in kdist's words
// ("expected ',' or '}' but found \"x\" at byte 17"), then the document is
// built with allow_exceptions=false.
#include "config/clusters/tf_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {
namespace {

// Members keep the order they were written in, so the first unknown task type
// named in a message is the first in the text.
using Json = nlohmann::ordered_json;

constexpr size_t kMaxJsonBytes = size_t{1} << 20;
constexpr size_t kMaxJsonDepth = 64;

std::string AtByte(size_t offset) { return " at byte " + std::to_string(offset); }

// nlohmann-json's description of a syntax error, such as
//   "[json.exception.parse_error.101] parse error at line 1, column 47: syntax error while
//    parsing object key - unexpected '}'; expected string literal"
// in kdist's words: "expected a string key but found \"}\" at byte 46". `position` is the
// number of bytes read when the error was found; `last_token` the token then read.
std::string DescribeSyntaxError(std::string_view text, size_t position,
                                const std::string& last_token, std::string_view what) {
  std::string_view detail = what;
  if (!detail.empty() && detail.front() == '[') {  // "[json.exception.parse_error.101] "
    const size_t close = detail.find("] ");
    if (close != std::string_view::npos) detail.remove_prefix(close + 2);
  }
  if (detail.rfind("parse error", 0) == 0) {  // "parse error at line 1, column 47: "
    const size_t colon = detail.find(": ");
    if (colon != std::string_view::npos) detail.remove_prefix(colon + 2);
  }
  size_t at = std::min(position == 0 ? 0 : position - 1, text.size());
  if (detail.rfind("attempting to parse an empty input", 0) == 0) {
    return "expected a value but found the end" + AtByte(text.size());
  }
  constexpr std::string_view kSyntax = "syntax error while parsing ";
  if (detail.rfind(kSyntax, 0) != 0) return std::string(detail) + AtByte(at);
  detail.remove_prefix(kSyntax.size());
  const size_t dash = detail.find(" - ");
  if (dash == std::string_view::npos) return std::string(detail) + AtByte(at);
  const std::string_view context = detail.substr(0, dash);
  std::string_view problem = detail.substr(dash + 3);
  constexpr std::string_view kUnexpected = "unexpected ";
  if (problem.rfind(kUnexpected, 0) != 0) {
    // A malformed token ("invalid string: ill-formed UTF-8 byte; last read: ..."): the
    // bytes read so far are left out, the offset says where.
    const size_t last_read = problem.rfind("; last read: ");
    if (problem.rfind("invalid literal", 0) == 0) {  // not true, false or null: say where
      return "invalid literal; found " +
             (at < text.size() ? Quote(text.substr(at, 1)) : std::string("the end")) + AtByte(at);
    }
    return std::string(problem.substr(0, last_read)) + AtByte(at);
  }
  problem.remove_prefix(kUnexpected.size());
  const size_t semicolon = problem.find("; expected ");
  const std::string_view token = problem.substr(0, semicolon);
  const std::string_view expected =
      semicolon == std::string_view::npos ? "" : problem.substr(semicolon + 11);
  std::string found;
  if (token == "end of input") {
    found = "the end";
    at = text.size();
  } else if (token.size() == 3 && token.front() == '\'') {  // '}', ']', ',', ':', '[', '{'
    found = Quote(token.substr(1, 1));
  } else {  // a literal: it started where its text did
    at = position >= last_token.size() ? position - last_token.size() : 0;
    found = at < text.size() ? Quote(text.substr(at, 1)) : std::string("the end");
  }
  std::string message;
  if (context == "object key") {
    message = "expected a string key but found " + found;
  } else if (context == "object separator") {
    message = "expected ':' but found " + found;
  } else if (context == "object") {
    message = "expected ',' or '}' but found " + found;
  } else if (context == "array") {
    message = "expected ',' or ']' but found " + found;
  } else if (expected == "end of input") {
    message = "unexpected " + found + " after the value";
  } else {
    message = "expected a value but found " + found;
  }
  return message + AtByte(at);
}

// Walks a document without building it; stops at the first problem, which
// error() then describes.
class Checker final : public nlohmann::json_sax<Json> {
 public:
  explicit Checker(std::string_view text) : text_(text) {}
  const std::string& error() const { return error_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return CheckDepth();
  }
  bool key(string_t& key) override {
    if (!keys_.back().insert(key).second) return Fail("duplicate key " + Quote(key));
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    keys_.emplace_back();  // an array has no keys, but counts as a level
    return CheckDepth();
  }
  bool end_array() override {
    keys_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) override {
    return Fail(DescribeSyntaxError(text_, position, last_token, error.what()));
  }

 private:
  bool CheckDepth() {
    if (keys_.size() <= kMaxJsonDepth) return true;
    return Fail("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  bool Fail(std::string error) {
    error_ = std::move(error);
    return false;
  }

  std::string_view text_;
  std::vector<std::set<std::string>> keys_;  // one per open object or array
  std::string error_;
};

// One JSON document, or why it is not one ("is not valid JSON: ...").
Result<Json> ParseJson(const std::string& text) {
  const auto invalid = [](const std::string& what) {
    return InvalidArgument("is not valid JSON: " + what);
  };
  if (text.size() > kMaxJsonBytes) {
    return InvalidArgument("is not valid JSON here: it is " + std::to_string(text.size()) +
                           " bytes long, more than the " + std::to_string(kMaxJsonBytes) +
                           " allowed");
  }
  // nlohmann-json skips a byte order mark and ends a document at a NUL byte; JSON has neither.
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) {
    return invalid("expected a value but found " + Quote(text.substr(0, 1)) + AtByte(0));
  }
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    return invalid("a NUL byte" + AtByte(nul));
  }
  try {
    Checker checker(text);
    if (!Json::sax_parse(text, &checker, nlohmann::detail::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false)) {
      return invalid(checker.error().empty() ? "it does not parse" : checker.error());
    }
    Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false,
                            /*ignore_comments=*/false);
    if (json.is_discarded()) return invalid("it does not parse");
    return json;
  } catch (const std::exception& e) {  // nothing used above throws; none may leave the core
    return invalid(e.what());
  }
}

// "null", "a boolean", "a number", "a string", "an array", "an object".
const char* KindName(const Json& value) {
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

// The member `key` of an object, or nullptr.
const Json* Member(const Json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string& Text(const Json& string) { return *string.get_ptr<const std::string*>(); }

// A number written as an integer ("3", "-1"; not "3.0" or "3e0") that fits in
// 64 bits, or nullopt.
std::optional<int64_t> AsInteger(const Json* value) {
  if (value == nullptr) return std::nullopt;
  if (const auto* u = value->get_ptr<const Json::number_unsigned_t*>()) {
    if (*u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = value->get_ptr<const Json::number_integer_t*>()) return *i;
  return std::nullopt;
}

// The job's processes: the chief (if any) first, then the workers, in list order.
struct Tasks {
  std::vector<std::string> addresses;
  size_t chiefs = 0;
  size_t workers = 0;
};

// The cluster's chief and worker addresses; the reason (after "TF_CONFIG=... ") otherwise.
Result<Tasks> ReadTasks(const Json& cluster) {
  Tasks tasks;
  for (const std::string_view job : {std::string_view("chief"), std::string_view("worker")}) {
    const Json* list = Member(cluster, std::string(job));
    if (list == nullptr) continue;
    if (!list->is_array()) {
      return InvalidArgument("has cluster." + std::string(job) + " of type " + KindName(*list) +
                             "; expected a list of \"host:port\" strings");
    }
    size_t i = 0;
    for (const Json& item : *list) {
      const std::string where = "cluster." + std::string(job) + "[" + std::to_string(i++) + "]";
      if (!item.is_string()) {
        return InvalidArgument("has " + where + " of type " + KindName(item) +
                               "; expected a \"host:port\" string");
      }
      Result<Address> address = ParseAddress(Text(item));
      if (!address.ok()) {
        return InvalidArgument("has " + where + "=" + Quote(Text(item)) + ", which " +
                               address.status().message());
      }
      tasks.addresses.push_back(address->ToString());
    }
    (job == "chief" ? tasks.chiefs : tasks.workers) = list->size();
  }
  for (auto member = cluster.begin(); member != cluster.end(); ++member) {
    if (member.key() != "chief" && member.key() != "worker") {
      return InvalidArgument(
          "has cluster." + member.key() +
          ": kdist runs the \"chief\" and \"worker\" tasks as one JAX job; parameter "
          "servers, evaluators and other task types are not part of it");
    }
  }
  if (tasks.chiefs > 1) {
    return InvalidArgument("lists " + std::to_string(tasks.chiefs) + " chiefs; expected at most one");
  }
  if (tasks.addresses.empty()) return InvalidArgument("lists no \"chief\" or \"worker\" tasks");
  return tasks;
}

// This process's id among `tasks`, and its task as text; the reason otherwise.
Result<std::pair<int64_t, std::string>> ReadOwnTask(const Json& task, const Tasks& tasks) {
  const Json* type = Member(task, "type");
  const Json* index = Member(task, "index");
  if (type == nullptr || !type->is_string() ||
      (Text(*type) != "chief" && Text(*type) != "worker")) {
    return InvalidArgument("has a task type that is not \"chief\" or \"worker\"; this process "
                           "must be one of the job's tasks");
  }
  const std::string& type_name = Text(*type);
  const std::optional<int64_t> i = AsInteger(index);
  const size_t of_type = type_name == "chief" ? tasks.chiefs : tasks.workers;
  if (!i || *i < 0 || static_cast<size_t>(*i) >= of_type) {
    return InvalidArgument("has a task index that is not an integer in [0, " +
                           std::to_string(of_type) + ") (the number of \"" + type_name +
                           "\" tasks in the cluster)");
  }
  const int64_t process_id = (type_name == "worker" ? static_cast<int64_t>(tasks.chiefs) : 0) + *i;
  return std::make_pair(process_id, "{\"type\": \"" + type_name + "\", \"index\": " +
                                        std::to_string(*i) + "}");
}

DetectResult Detect(const Environment& env) {
  constexpr std::string_view kName = "tf_config";
  const std::string* text = Lookup(env, "TF_CONFIG");
  if (text == nullptr) return std::optional<Detection>();
  const auto bad = [&](const std::string& reason) {
    return InvalidArgument(Prefix(kName) + "TF_CONFIG=" + Quote(*text) + " " + reason);
  };
  Result<Json> json = ParseJson(*text);
  if (!json.ok()) return bad(json.status().message());
  if (!json->is_object()) {
    return bad(std::string("is ") + KindName(*json) +
               "; expected an object with \"cluster\" and \"task\"");
  }
  const Json* cluster = Member(*json, "cluster");
  const Json* task = Member(*json, "task");
  if (cluster == nullptr || !cluster->is_object()) {
    return bad("has no \"cluster\" object; expected {\"cluster\": {\"worker\": [\"host:port\", "
               "...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  }
  if (task == nullptr || !task->is_object()) {
    return bad("has no \"task\" object; expected \"task\": {\"type\": \"worker\", \"index\": 0}");
  }
  Result<Tasks> tasks = ReadTasks(*cluster);
  if (!tasks.ok()) return bad(tasks.status().message());
  Result<std::pair<int64_t, std::string>> own = ReadOwnTask(*task, *tasks);
  if (!own.ok()) return bad(own.status().message());
  const std::string joined = Join(tasks->addresses, ",");
  Detection d;
  d.detector = std::string(kName);
  d.job_addresses = DetectedValue{joined, "TF_CONFIG cluster", "TF_CONFIG cluster " + Quote(joined)};
  d.num_processes = DetectedValue{std::to_string(tasks->addresses.size()), "TF_CONFIG cluster",
                                  "TF_CONFIG cluster (" + std::to_string(tasks->chiefs) +
                                      " chief, " + std::to_string(tasks->workers) + " workers)"};
  d.process_id = DetectedValue{std::to_string(own->first), "TF_CONFIG task",
                               "TF_CONFIG task " + own->second};
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector TfConfigDetector() {
  return {"tf_config", "TensorFlow's TF_CONFIG (chief and worker tasks)", "TF_CONFIG",
          {"TF_CONFIG"},
          &Detect};
}

}  // namespace kdist
