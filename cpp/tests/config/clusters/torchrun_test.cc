#include "config/clusters/torchrun.h"

#include "config/detectors.h"

#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(Torchrun, Torchrun) {
  Detection d = Detect("auto", Torchrun());
  EXPECT_EQ(d.detector, std::string("torchrun"));
  // torchrun's agent serves its store on MASTER_PORT: the coordinator takes the next port.
  EXPECT_EQ(Text(d.job_addresses), std::string("10.0.0.1:29501"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE"));
  EXPECT_EQ(Text(d.num_processes), std::string("8"));
  EXPECT_EQ(Text(d.process_id), std::string("6"));
  EXPECT_EQ(Text(d.local_rank), std::string("2"));
  EXPECT_EQ(Text(d.local_size), std::string("4"));
  EXPECT_EQ(Text(d.restart_count), std::string("0"));  // torchrun sets it from the start
  Environment restarted = Torchrun();
  restarted["TORCHELASTIC_RESTART_COUNT"] = "1";  // torchrun's elastic agent restarted it
  d = Detect("auto", restarted);
  EXPECT_EQ(Text(d.restart_count), std::string("1"));
  EXPECT_EQ(Vars(d.restart_count), std::string("TORCHELASTIC_RESTART_COUNT"));

  // Kubeflow's PyTorchJob: no agent, a service name, no local rank.
  Environment kubeflow = {{"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"},
                          {"WORLD_SIZE", "4"},             {"RANK", "2"},
                          {"PYTHONUNBUFFERED", "0"}};
  d = Detect("auto", kubeflow);
  EXPECT_EQ(Text(d.job_addresses), std::string("job-master-0:23456"));
  EXPECT_EQ(Vars(d.job_addresses), std::string("MASTER_ADDR, MASTER_PORT"));
  EXPECT_FALSE(d.local_rank.has_value());

  Environment ipv6 = kubeflow;
  ipv6["MASTER_ADDR"] = "fd00::1";
  EXPECT_EQ(Text(Detect("auto", ipv6).job_addresses), std::string("[fd00::1]:23456"));
  ipv6["MASTER_ADDR"] = "[fd00::1]";
  EXPECT_EQ(Text(Detect("auto", ipv6).job_addresses), std::string("[fd00::1]:23456"));
  kubeflow["KDIST_COORDINATOR_PORT"] = "7000";
  EXPECT_EQ(Text(Detect("auto", kubeflow).job_addresses),
                  std::string("job-master-0:7000"));
}

TEST(Torchrun, TorchrunPartialOrMalformed) {
  KDIST_EXPECT_ERROR(DetectCluster("auto", {{"RANK", "0"}}), StatusCode::kInvalidArgument,
                     "scheduler detection (torchrun): RANK=\"0\" is set but WORLD_SIZE, "
                     "MASTER_ADDR and MASTER_PORT are not.");
  Environment env = Torchrun();
  env.erase("MASTER_ADDR");
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "set but MASTER_ADDR is not");
  env = Torchrun();
  env["MASTER_PORT"] = "http";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (torchrun): MASTER_PORT=\"http\" is not a number; "
                     "expected a port in 1..65535");
  env["MASTER_PORT"] = " 29500";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "MASTER_PORT=\" 29500\" is not a number; expected a port in 1..65535");
  env = Torchrun();
  env["MASTER_ADDR"] = "bad host";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (torchrun): MASTER_ADDR=\"bad host\" is not a valid "
                     "host name (dot-separated labels");
  env["MASTER_ADDR"] = "node1:29500";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "MASTER_ADDR=\"node1:29500\" is not a valid IPv6 address, the only kind of "
                     "host with ':'; expected an IP address or a host name, without a port");
  env["MASTER_ADDR"] = "[node1]";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "MASTER_ADDR=\"[node1]\" has brackets around a host that is not an IPv6 "
                     "address");
  env["MASTER_ADDR"] = "";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "MASTER_ADDR=\"\" is empty");
  // LOCAL_RANK alone (set by other tools) is not a torchrun environment.
  EXPECT_EQ(Detect("auto", {{"LOCAL_RANK", "0"}}).detector, std::string("nothing"));
}

}  // namespace
}  // namespace kdist
