#include "config/clusters/skypilot.h"

#include "config/detectors.h"
#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::Detect;

Environment Node(const std::string& rank) {
  return {{"SKYPILOT_NODE_IPS", "10.0.0.5\n10.0.0.6\n10.0.0.7\n"},
          {"SKYPILOT_NODE_RANK", rank},
          {"SKYPILOT_NUM_NODES", "3"},
          {"SKYPILOT_TASK_ID", "sky-2026"}};
}

TEST(SkyPilot, HeadNodeIsTheCoordinator) {
  const Detection d = Detect("auto", Node("2"));
  EXPECT_EQ(d.detector, "skypilot");
  EXPECT_EQ(d.job_addresses->text, "10.0.0.5:8482");
  EXPECT_EQ(d.job_addresses->variables, "SKYPILOT_NODE_IPS");
  EXPECT_EQ(d.num_processes->text, "3");
  EXPECT_EQ(d.process_id->text, "2");
  EXPECT_EQ(d.process_id->variables, "SKYPILOT_NODE_RANK");
  ASSERT_EQ(d.process_host_runs.size(), 3u);
  EXPECT_EQ(d.process_host_runs[1].first, "10.0.0.6");
}

TEST(SkyPilot, PortOverride) {
  Environment env = Node("0");
  env["KDIST_COORDINATOR_PORT"] = "12345";
  EXPECT_EQ(Detect("skypilot", env).job_addresses->text, "10.0.0.5:12345");
}

TEST(SkyPilot, PartialOrInconsistentIsNamed) {
  KDIST_EXPECT_ERROR(DetectCluster("auto", {{"SKYPILOT_NODE_RANK", "0"}}),
                     StatusCode::kInvalidArgument, "SKYPILOT_NODE_IPS and SKYPILOT_NUM_NODES are not");
  Environment env = Node("0");
  env["SKYPILOT_NUM_NODES"] = "2";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "lists 3 node(s)");
  KDIST_EXPECT_ERROR(DetectCluster("auto", Node("3")), StatusCode::kInvalidArgument,
                     "SKYPILOT_NODE_RANK=\"3\" is not a node index");
}

}  // namespace
}  // namespace kdist
