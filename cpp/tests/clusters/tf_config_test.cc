#include "clusters/tf_config.h"

#include "detectors.h"

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

}  // namespace
}  // namespace kdist
