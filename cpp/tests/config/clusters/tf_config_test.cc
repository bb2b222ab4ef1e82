#include "config/clusters/tf_config.h"

#include "config/detectors.h"

#include <string>
#include <utility>

#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(TfConfig, TfConfig) {
  Detection d = Detect("auto", TfConfig());
  EXPECT_EQ(d.detector, std::string("tf_config"));
  EXPECT_EQ(Text(d.job_addresses), std::string("host0:2222,host1:2222,host2:2222"));
  EXPECT_EQ(Text(d.num_processes), std::string("3"));
  EXPECT_EQ(Text(d.process_id), std::string("2"));  // the chief is 0
  EXPECT_EQ(d.process_id->shown,
                  std::string("TF_CONFIG task {\"type\": \"worker\", \"index\": 1}"));
  Detection chief = Detect(
      "tf_config",
      {{"TF_CONFIG",
        R"({"cluster":{"chief":["h0:1"],"worker":["h1:1"]},"task":{"type":"chief","index":0}})"}});
  EXPECT_EQ(Text(chief.process_id), std::string("0"));
  Detection workers_only = Detect(
      "tf_config",
      {{"TF_CONFIG", R"({"cluster":{"worker":["[::1]:5","h1:6"]},"task":{"type":"worker","index":1}})"}});
  EXPECT_EQ(Text(workers_only.job_addresses), std::string("[::1]:5,h1:6"));
  EXPECT_EQ(Text(workers_only.process_id), std::string("1"));
}

TEST(TfConfig, TfConfigMalformed) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is not valid JSON: expected a value but found the end"},
      {"{\"cluster\": {}", "is not valid JSON"},
      {"[]", "is an array; expected an object with \"cluster\" and \"task\""},
      {"{\"task\": {}}", "has no \"cluster\" object"},
      {R"({"cluster": {"worker": ["h:1"]}})", "has no \"task\" object"},
      {R"({"cluster": {"worker": "h:1"}, "task": {"type": "worker", "index": 0}})",
       "has cluster.worker of type a string; expected a list"},
      {R"({"cluster": {"worker": [7]}, "task": {"type": "worker", "index": 0}})",
       "has cluster.worker[0] of type a number"},
      {R"({"cluster": {"worker": ["h"]}, "task": {"type": "worker", "index": 0}})",
       "has cluster.worker[0]=\"h\", which has no port"},
      {R"({"cluster": {"worker": ["h:1"], "ps": ["p:1"]}, "task": {"type": "worker", "index": 0}})",
       "has cluster.ps: kdist runs the \"chief\" and \"worker\" tasks as one JAX job"},
      {R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}})",
       "lists 2 chiefs"},
      {R"({"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}})",
       "lists no \"chief\" or \"worker\" tasks"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "evaluator", "index": 0}})",
       "has a task type that is not \"chief\" or \"worker\""},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}})",
       "has a task index that is not an integer in [0, 1) (the number of \"worker\" tasks"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": "0"}})",
       "has a task index that is not an integer"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0.0}})",
       "has a task index that is not an integer"},
  };
  for (const auto& [text, reason] : cases) {
    KDIST_EXPECT_ERROR(DetectCluster("auto", {{"TF_CONFIG", text}}),
                       StatusCode::kInvalidArgument,
                       std::string("scheduler detection (tf_config): TF_CONFIG="));
    KDIST_EXPECT_ERROR(DetectCluster("auto", {{"TF_CONFIG", text}}),
                       StatusCode::kInvalidArgument, reason);
  }
}

// TF_CONFIG is read as strict JSON (RFC 8259): what the former hand-written
// parser refused is still refused, and syntax errors say where.
TEST(TfConfig, TfConfigIsStrictJson) {
  const std::pair<std::string, const char*> cases[] = {
      {"", "expected a value but found the end at byte 0"},
      {" \n", "expected a value but found the end at byte 2"},
      {"{", "expected a string key but found the end at byte 1"},
      {"[1,]", "expected a value but found \"]\" at byte 3"},
      {"{\"a\":1,}", "expected a string key but found \"}\" at byte 7"},
      {"{\"a\" 1}", "expected ':' but found \"1\" at byte 5"},
      {"[1 2]", "expected ',' or ']' but found \"2\" at byte 3"},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}' but found \"\\\"\" at byte 7"},
      {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
      {"01", "unexpected \"1\" after the value at byte 1"},
      {"{} x", "invalid literal; found \"x\" at byte 3"},
      {"{} []", "unexpected \"[\" after the value at byte 3"},
      {"+1", "found \"+\" at byte 0"},
      {".5", "found \".\" at byte 0"},
      {"NaN", "found \"N\" at byte 0"},
      {"tru", "invalid literal; found the end at byte 3"},
      {"nul", "invalid literal"},
      {"// c\n1", "found \"/\" at byte 0"},
      {"1.", "invalid number"},
      {"1e", "invalid number"},
      {"-", "invalid number"},
      {"\"abc", "invalid string"},
      {"\"a\\", "invalid string"},
      {"\"\\x\"", "invalid string"},
      {"\"\\u12zz\"", "invalid string"},
      {"\"\\u12", "invalid string"},
      {"\"\\udc00\"", "invalid string"},
      {"\"\\ud800\"", "invalid string"},
      {"\"\\ud800\\u0041\"", "invalid string"},
      {"\"a\tb\"", "invalid string: control character U+0009 (HT) must be escaped"},
      {"\"\xc0\xaf\"", "invalid string: ill-formed UTF-8 byte at byte 1"},
      {"\"\xed\xa0\x80\"", "invalid string: ill-formed UTF-8 byte"},
      {"\"\xf4\x90\x80\x80\"", "invalid string: ill-formed UTF-8 byte"},
      {"\"\xe2\x82\"", "invalid string: ill-formed UTF-8 byte"},
      {"\"\xff\"", "invalid string: ill-formed UTF-8 byte"},
      {"\xEF\xBB\xBF{}", "expected a value but found \"\\xef\" at byte 0"},
      {std::string("{}\0x", 4), "a NUL byte at byte 2"},
      {std::string(65, '[') + std::string(65, ']'), "nesting deeper than 64 levels"},
      {std::string(100000, '['), "nesting deeper than 64 levels"},
      {std::string((size_t{1} << 20) + 1, ' '), "is 1048577 bytes long, more than the 1048576"},
  };
  for (const auto& [text, reason] : cases) {
    const DetectResult result = DetectCluster("auto", {{"TF_CONFIG", text}});
    KDIST_EXPECT_ERROR(result, StatusCode::kInvalidArgument, "is not valid JSON");
    KDIST_EXPECT_ERROR(result, StatusCode::kInvalidArgument, reason);
  }
  // 64 levels are allowed; the document is then not a TF_CONFIG.
  KDIST_EXPECT_ERROR(
      DetectCluster("auto", {{"TF_CONFIG", std::string(64, '[') + std::string(64, ']')}}),
      StatusCode::kInvalidArgument, "is an array; expected an object");
}

TEST(TfConfig, TfConfigKeepsStringsNumbersAndMemberOrder) {
  // Escapes decode; -0 and big integers are integers; the first unknown task type is named.
  Detection d = Detect(
      "auto",
      {{"TF_CONFIG", R"({"cluster": {"worker": ["\u0068:1", "h\u0032:2"]},)"
                     R"( "task": {"type": "wor\u006ber", "index": -0}})"}});
  EXPECT_EQ(Text(d.job_addresses), std::string("h:1,h2:2"));
  EXPECT_EQ(Text(d.process_id), std::string("0"));
  KDIST_EXPECT_ERROR(
      DetectCluster("auto", {{"TF_CONFIG", R"({"cluster": {"worker": ["h:1"], "zz": [], "ps": []},)"
                                           R"( "task": {"type": "worker", "index": 0}})"}}),
      StatusCode::kInvalidArgument, "has cluster.zz:");
  for (const char* index : {"18446744073709551615", "9223372036854775808", "1e0", "1.0"}) {
    KDIST_EXPECT_ERROR(
        DetectCluster("auto", {{"TF_CONFIG", std::string(R"({"cluster": {"worker": ["h:1"]},)") +
                                                 R"( "task": {"type": "worker", "index": )" +
                                                 index + "}}"}}),
        StatusCode::kInvalidArgument, "has a task index that is not an integer");
  }
}

}  // namespace
}  // namespace kdist
