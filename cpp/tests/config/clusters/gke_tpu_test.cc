#include "config/clusters/gke_tpu.h"

#include "config/detectors.h"
#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::Detect;

TEST(GkeTpu, AbsentWithoutItsVariables) {
  EXPECT_EQ(Detect("gke_tpu", {{"TPU_WORKER_ID", "0"}}).detector.rfind("error", 0), 0u);
  EXPECT_EQ(Detect("auto", {{"TPU_ACCELERATOR_TYPE", "v5p-16"}}).detector, "nothing");
}

TEST(GkeTpu, WorkerHostnamesAndId) {
  const Environment env = {{"TPU_WORKER_HOSTNAMES", "job-0-0.svc,job-0-1.svc"},
                           {"TPU_WORKER_ID", "1"}};
  const Detection d = Detect("auto", env);
  EXPECT_EQ(d.detector, "gke_tpu");
  EXPECT_EQ(d.process_id->text, "1");
  EXPECT_EQ(d.process_id->variables, "TPU_WORKER_ID");
  EXPECT_EQ(d.num_processes->text, "2");
  EXPECT_EQ(d.num_processes->variables, "TPU_WORKER_HOSTNAMES");
  EXPECT_EQ(d.job_addresses->text, "job-0-0.svc:8482");
}

TEST(GkeTpu, ProcessAddressesWinOverHostnames) {
  const Environment env = {{"TPU_PROCESS_ADDRESSES", "10.0.0.1:8476,10.0.0.2:8476,10.0.0.3:8476"},
                           {"TPU_WORKER_HOSTNAMES", "a,b"},
                           {"TPU_WORKER_ID", "2"},
                           {"KDIST_COORDINATOR_PORT", "7000"}};
  const Detection d = Detect("gke_tpu", env);
  EXPECT_EQ(d.num_processes->text, "3");
  EXPECT_EQ(d.job_addresses->text, "10.0.0.1:7000");
  EXPECT_EQ(d.job_addresses->variables, "TPU_PROCESS_ADDRESSES, KDIST_COORDINATOR_PORT");
}

TEST(GkeTpu, MultisliceJobSet) {
  const Environment env = {{"TPU_WORKER_HOSTNAMES", "s1-0,s1-1"},
                           {"TPU_WORKER_ID", "0"},
                           {"MEGASCALE_COORDINATOR_ADDRESS", "s0-0.svc"},
                           {"MEGASCALE_NUM_SLICES", "2"},
                           {"MEGASCALE_SLICE_ID", "1"}};
  const Detection d = Detect("auto", env);
  EXPECT_EQ(d.process_id->text, "2");
  EXPECT_EQ(d.num_processes->text, "4");
  EXPECT_EQ(d.job_addresses->text, "s0-0.svc:8482");
}

TEST(GkeTpu, AnAddressesFileAloneIsNamedNotRead) {
  KDIST_EXPECT_ERROR(DetectCluster("auto", {{"TPU_PROCESS_ADDRESSES_PATH", "/run/tpu/addresses"},
                                            {"TPU_WORKER_ID", "0"}}),
                     StatusCode::kInvalidArgument,
                     "TPU_PROCESS_ADDRESSES_PATH=\"/run/tpu/addresses\" names a file");
}

TEST(GkeTpu, AMissingWorkerIdIsNamed) {
  KDIST_EXPECT_ERROR(DetectCluster("auto", {{"TPU_WORKER_HOSTNAMES", "a,b"}}),
                     StatusCode::kInvalidArgument, "TPU_WORKER_ID is not");
}

}  // namespace
}  // namespace kdist
