#include "config/clusters/tpu_slices.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(TpuSlices, GceWorkerHostsInBothFormats) {
  EXPECT_EQ(GceWorkerHosts("t1v-n-0,t1v-n-1").value(),
            (std::vector<std::string>{"t1v-n-0", "t1v-n-1"}));
  EXPECT_EQ(GceWorkerHosts("w-0:u0:10.0.0.2,w-1:u1:10.0.0.3").value(),
            (std::vector<std::string>{"10.0.0.2", "10.0.0.3"}));
  KDIST_EXPECT_ERROR(GceWorkerHosts("a:b"), StatusCode::kInvalidArgument, "neither");
}

TEST(TpuSlices, GkeWorkerHostsDropPorts) {
  EXPECT_EQ(GkeWorkerHosts("h-0.svc:8476,h-1.svc:8476").value(),
            (std::vector<std::string>{"h-0.svc", "h-1.svc"}));
  EXPECT_EQ(GkeWorkerHosts("10.0.0.1").value(), (std::vector<std::string>{"10.0.0.1"}));
}

TEST(TpuSlices, TpuEnvValueAsJaxReadsIt) {
  const std::string env = "ACCELERATOR_TYPE: 'v5litepod-16'\nMEGASCALE_NUM_SLICES: '2'\n"
                          "MEGASCALE_COORDINATOR_ADDRESS: '10.0.0.9:8080'\n";
  EXPECT_EQ(TpuEnvValue(env, "MEGASCALE_NUM_SLICES").value(), "2");
  EXPECT_EQ(TpuEnvValue(env, "MEGASCALE_COORDINATOR_ADDRESS").value(), "10.0.0.9:8080");
  EXPECT_FALSE(TpuEnvValue(env, "MEGASCALE_SLICE_ID").has_value());
}

TpuSlice Slice(std::vector<std::string> workers, const std::string& id) {
  TpuSlice s;
  s.detector = "gke_tpu";
  s.workers = std::move(workers);
  s.workers_value = FromVariable("TPU_WORKER_HOSTNAMES", "list");
  s.worker_id = FromVariable("TPU_WORKER_ID", id);
  return s;
}

TEST(TpuSlices, OneSlice) {
  DetectResult r = TpuDetection(Slice({"h0", "h1", "h2", "h3"}, "2"), {});
  KDIST_ASSERT_OK(r);
  EXPECT_EQ((*r)->process_id->text, "2");
  EXPECT_EQ((*r)->process_id->variables, "TPU_WORKER_ID");
  EXPECT_EQ((*r)->num_processes->text, "4");
  EXPECT_EQ((*r)->job_addresses->text, "h0:8482");
  EXPECT_EQ((*r)->process_host_runs.size(), 4u);
}

TEST(TpuSlices, MultisliceIdIsSliceTimesWorkersPlusWorker) {
  TpuSlice s = Slice({"h0", "h1"}, "1");
  s.num_slices = FromVariable("MEGASCALE_NUM_SLICES", "3");
  s.slice_id = FromVariable("MEGASCALE_SLICE_ID", "2");
  s.megascale_coordinator = FromVariable("MEGASCALE_COORDINATOR_ADDRESS", "10.1.0.5:8080");
  DetectResult r = TpuDetection(s, {{"JAX_COORDINATOR_PORT", "9000"}});
  KDIST_ASSERT_OK(r);
  EXPECT_EQ((*r)->process_id->text, "5");
  EXPECT_EQ((*r)->process_id->variables, "TPU_WORKER_ID, TPU_WORKER_HOSTNAMES, MEGASCALE_SLICE_ID");
  EXPECT_EQ((*r)->num_processes->text, "6");
  EXPECT_EQ((*r)->job_addresses->text, "10.1.0.5:9000");
  EXPECT_EQ((*r)->job_addresses->variables, "MEGASCALE_COORDINATOR_ADDRESS, JAX_COORDINATOR_PORT");
  EXPECT_TRUE((*r)->process_host_runs.empty());
}

TEST(TpuSlices, OutOfRangeIdsAreNamed) {
  KDIST_EXPECT_ERROR(TpuDetection(Slice({"h0"}, "1"), {}), StatusCode::kInvalidArgument,
                     "TPU_WORKER_ID=\"1\" is not below the number of workers, 1");
  TpuSlice s = Slice({"h0"}, "0");
  s.slice_id = FromVariable("MEGASCALE_SLICE_ID", "1");
  KDIST_EXPECT_ERROR(TpuDetection(s, {}), StatusCode::kInvalidArgument,
                     "MEGASCALE_NUM_SLICES is not set");
  KDIST_EXPECT_ERROR(TpuDetection(Slice({"h0"}, "x"), {}), StatusCode::kInvalidArgument,
                     "not a worker id");
}

TEST(TpuSlices, LooksLikeTpu) {
  EXPECT_FALSE(LooksLikeTpu({{"GCE_METADATA_IP", "127.0.0.1:1"}}, Machine{}));
  EXPECT_TRUE(LooksLikeTpu({{"TPU_WORKER_ID", "0"}}, Machine{}));
  Machine chips;
  chips.tpu_chips = true;
  EXPECT_TRUE(LooksLikeTpu({}, chips));
}

}  // namespace
}  // namespace kdist
