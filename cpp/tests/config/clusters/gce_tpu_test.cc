#include "config/clusters/gce_tpu.h"

#include <map>

#include "config/detectors.h"
#include "config/resolve.h"
#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

// Attributes from a map; a key not there is kNotFound; `down` fails every request.
class FakeMetadata final : public InstanceMetadata {
 public:
  explicit FakeMetadata(std::map<std::string, std::string> attributes, bool down = false)
      : attributes_(std::move(attributes)), down_(down) {}
  Result<std::string> Attribute(std::string_view key) override {
    asked.emplace_back(key);
    if (down_) return DeadlineExceeded(Describe() + " did not answer in 3 attempts");
    const auto it = attributes_.find(std::string(key));
    if (it == attributes_.end()) return NotFound("no " + std::string(key));
    return it->second;
  }
  std::string Describe() const override { return "the fake metadata server"; }
  std::vector<std::string> asked;

 private:
  std::map<std::string, std::string> attributes_;
  bool down_;
};

Machine On(FakeMetadata& metadata, bool chips = true) {
  Machine m;
  m.tpu_chips = chips;
  m.metadata = &metadata;
  return m;
}

Detection Found(std::string_view mode, const Environment& env, const Machine& machine) {
  DetectResult r = DetectCluster(mode, env, machine);
  if (!r.ok()) return Detection{"error: " + r.status().message()};
  if (!r->has_value()) return Detection{"nothing"};
  return **r;
}

TEST(GceTpu, SingleSliceNewFormat) {
  FakeMetadata metadata({{"agent-worker-number", "1"},
                         {"worker-network-endpoints", "t1v-n-0,t1v-n-1,t1v-n-2,t1v-n-3"},
                         {"tpu-env", "ACCELERATOR_TYPE: 'v4-32'\n"}});
  const Detection d = Found("auto", {}, On(metadata));
  EXPECT_EQ(d.detector, "gce_tpu");
  EXPECT_EQ(d.process_id->text, "1");
  EXPECT_EQ(d.process_id->variables, "metadata agent-worker-number");
  EXPECT_EQ(d.num_processes->text, "4");
  EXPECT_EQ(d.num_processes->variables, "metadata worker-network-endpoints");
  EXPECT_EQ(d.job_addresses->text, "t1v-n-0:8482");
}

TEST(GceTpu, SingleSliceOldFormatTakesTheIp) {
  FakeMetadata metadata({{"agent-worker-number", "0"},
                         {"worker-network-endpoints", "w0:uid0:10.130.0.2,w1:uid1:10.130.0.3"}});
  const Detection d = Found("gce_tpu", {{"KDIST_COORDINATOR_PORT", "1234"}}, On(metadata));
  EXPECT_EQ(d.process_id->text, "0");
  EXPECT_EQ(d.num_processes->text, "2");
  EXPECT_EQ(d.job_addresses->text, "10.130.0.2:1234");
}

TEST(GceTpu, MultisliceFromTpuEnv) {
  FakeMetadata metadata({{"agent-worker-number", "1"},
                         {"worker-network-endpoints", "10.0.1.2,10.0.1.3"},
                         {"tpu-env", "MEGASCALE_COORDINATOR_ADDRESS: '10.0.0.2:8080'\n"
                                     "MEGASCALE_NUM_SLICES: '2'\nMEGASCALE_SLICE_ID: '1'\n"}});
  const Detection d = Found("auto", {}, On(metadata));
  EXPECT_EQ(d.process_id->text, "3");
  EXPECT_EQ(d.process_id->variables,
            "metadata agent-worker-number, metadata worker-network-endpoints, metadata tpu-env "
            "MEGASCALE_SLICE_ID");
  EXPECT_EQ(d.num_processes->text, "4");
  EXPECT_EQ(d.job_addresses->text, "10.0.0.2:8482");
  EXPECT_EQ(d.job_addresses->variables, "metadata tpu-env MEGASCALE_COORDINATOR_ADDRESS");
}

TEST(GceTpu, TheEnvironmentWinsOverTpuEnv) {
  FakeMetadata metadata({{"agent-worker-number", "0"},
                         {"worker-network-endpoints", "a,b"},
                         {"tpu-env", "MEGASCALE_NUM_SLICES: '4'\n"}});
  const Environment env = {{"MEGASCALE_NUM_SLICES", "2"},
                           {"MEGASCALE_SLICE_ID", "1"},
                           {"MEGASCALE_COORDINATOR_ADDRESS", "c0"}};
  const Detection d = Found("auto", env, On(metadata, false));
  EXPECT_EQ(d.num_processes->text, "4");
  EXPECT_EQ(d.process_id->text, "2");
  // Every value came from the environment: tpu-env was never asked.
  EXPECT_EQ(metadata.asked, (std::vector<std::string>{"agent-worker-number",
                                                      "worker-network-endpoints"}));
}

TEST(GceTpu, AutoDoesNotAskOffATpuMachine) {
  FakeMetadata metadata({{"agent-worker-number", "0"}, {"worker-network-endpoints", "a"}});
  EXPECT_EQ(Found("auto", {{"GCE_METADATA_IP", "127.0.0.1:1"}}, On(metadata, false)).detector,
            "nothing");
  for (const DetectorReport& report : DetectAll({}, On(metadata, false))) {
    EXPECT_TRUE(report.status.ok() && !report.detection);
  }
  EXPECT_TRUE(metadata.asked.empty());
  // Named, it asks whatever the machine shows.
  EXPECT_EQ(Found("gce_tpu", {}, On(metadata, false)).detector, "gce_tpu");
  EXPECT_FALSE(metadata.asked.empty());
}

TEST(GceTpu, NotACloudTpuVmAndSkipMdsQuery) {
  FakeMetadata empty({});
  EXPECT_EQ(Found("auto", {}, On(empty)).detector, "nothing");
  KDIST_EXPECT_ERROR(DetectCluster("gce_tpu", {}, On(empty)), StatusCode::kNotFound,
                     "the gce_tpu detector found none");
  FakeMetadata metadata({{"agent-worker-number", "0"}, {"worker-network-endpoints", "a"}});
  EXPECT_EQ(Found("auto", {{"TPU_SKIP_MDS_QUERY", "1"}}, On(metadata)).detector, "nothing");
  EXPECT_TRUE(metadata.asked.empty());
  // Named, it asks anyway (JAX sets TPU_SKIP_MDS_QUERY itself where it found no chip).
  EXPECT_EQ(Found("gce_tpu", {{"TPU_SKIP_MDS_QUERY", "1"}}, On(metadata)).detector, "gce_tpu");
}

TEST(GceTpu, AServerThatDoesNotAnswerIsAConfigErrorNamingIt) {
  FakeMetadata down({}, /*down=*/true);
  KDIST_EXPECT_ERROR(DetectCluster("auto", {}, On(down)), StatusCode::kInvalidArgument,
                     "scheduler detection (gce_tpu): the fake metadata server did not answer");
}

TEST(GceTpu, ResolveNamesTheSources) {
  FakeMetadata metadata({{"agent-worker-number", "1"}, {"worker-network-endpoints", "h0,h1"}});
  Result<ClusterSpec> spec = Resolve(Request{}, {}, On(metadata));
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->process_id.value, 1);
  EXPECT_EQ(spec->process_id.source, "gce_tpu (metadata agent-worker-number)");
  EXPECT_EQ(spec->num_processes.source, "gce_tpu (metadata worker-network-endpoints)");
  EXPECT_EQ(*spec->scheduler, "gce_tpu");
}

TEST(GceTpu, ExplicitSettingsLeaveTheServerUnasked) {
  FakeMetadata metadata({{"agent-worker-number", "1"}, {"worker-network-endpoints", "h0,h1"}});
  Request request;
  request.job_addresses = "10.0.0.1:1234";
  request.num_processes = "2";
  request.process_id = "0";
  KDIST_ASSERT_OK(Resolve(request, {}, On(metadata)));
  EXPECT_TRUE(metadata.asked.empty());
}

}  // namespace
}  // namespace kdist
