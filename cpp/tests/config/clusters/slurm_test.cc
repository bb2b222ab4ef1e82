#include "config/clusters/slurm.h"

#include "config/detectors.h"

#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(Slurm, SlurmStep) {
  Detection d = Detect("auto", SlurmStep());
  EXPECT_EQ(d.detector, std::string("slurm"));
  // As JAX: the first host of the step, port 61440 + job id % 4096.
  EXPECT_EQ(Text(d.job_addresses), std::string("gpu-a01:64504"));
  EXPECT_EQ(Vars(d.job_addresses), std::string("SLURM_STEP_NODELIST, SLURM_JOB_ID"));
  EXPECT_EQ(Text(d.num_processes), std::string("8"));
  EXPECT_EQ(Vars(d.num_processes), std::string("SLURM_STEP_NUM_TASKS"));
  EXPECT_EQ(Text(d.process_id), std::string("5"));
  EXPECT_EQ(Vars(d.process_id), std::string("SLURM_PROCID"));
  EXPECT_EQ(d.process_id->shown, std::string("SLURM_PROCID=\"5\""));
  EXPECT_EQ(Text(d.local_rank), std::string("1"));
  EXPECT_EQ(Text(d.local_size), std::string("4"));
}

TEST(Slurm, RestartCountAfterARequeue) {
  // A job's first run has no SLURM_RESTART_COUNT; a requeued or preempted one has.
  EXPECT_FALSE(Detect("auto", SlurmStep()).restart_count.has_value());
  Environment env = SlurmStep();
  env["SLURM_RESTART_COUNT"] = "2";
  Detection d = Detect("auto", env);
  EXPECT_EQ(Text(d.restart_count), std::string("2"));
  EXPECT_EQ(Vars(d.restart_count), std::string("SLURM_RESTART_COUNT"));
  EXPECT_EQ(d.restart_count->shown, std::string("SLURM_RESTART_COUNT=\"2\""));
}

TEST(Slurm, SlurmFallsBackToNtasksAndUnevenTasksPerNode) {
  Environment env = SlurmStep();
  env.erase("SLURM_STEP_NUM_TASKS");
  env["SLURM_STEP_TASKS_PER_NODE"] = "5,3";
  Detection d = Detect("slurm", env);
  EXPECT_EQ(Vars(d.num_processes), std::string("SLURM_NTASKS"));
  EXPECT_EQ(Text(d.local_size), std::string("3"));  // SLURM_NODEID=1
  env.erase("SLURM_NODEID");
  EXPECT_FALSE(Detect("slurm", env).local_size.has_value());
  env["SLURM_NODEID"] = " 1";  // digits only
  EXPECT_EQ(Detect("slurm", env).detector,
                  std::string("error: scheduler detection (slurm): SLURM_NODEID=\" 1\" is not a "
                              "node index of the step; expected an integer in [0, 2) because "
                              "SLURM_STEP_TASKS_PER_NODE=\"5,3\" lists 2 nodes"));
  env["SLURM_NODEID"] = "7";
  EXPECT_EQ(Detect("slurm", env).detector,
                  std::string("error: scheduler detection (slurm): SLURM_NODEID=\"7\" is not a "
                              "node index of the step; expected an integer in [0, 2) because "
                              "SLURM_STEP_TASKS_PER_NODE=\"5,3\" lists 2 nodes"));
}

TEST(Slurm, BlockDistributionGivesEveryTasksHost) {
  Detection d = Detect("auto", SlurmStep());
  using Runs = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(d.process_host_runs, (Runs{{"gpu-a01", 4}, {"gpu-a02", 4}}));
  EXPECT_EQ(d.process_hosts_source,
            std::string("slurm (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE: block "
                        "distribution)"));
  Environment env = SlurmStep();
  env["SLURM_STEP_TASKS_PER_NODE"] = "5,3";
  env["SLURM_DISTRIBUTION"] = "block:cyclic";  // tasks across nodes in blocks
  EXPECT_EQ(Detect("slurm", env).process_host_runs, (Runs{{"gpu-a01", 5}, {"gpu-a02", 3}}));
}

TEST(Slurm, NoTaskHostsUnlessTheLayoutIsKnownAndAddsUp) {
  Environment env = SlurmStep();
  env["SLURM_DISTRIBUTION"] = "cyclic";
  EXPECT_TRUE(Detect("slurm", env).process_host_runs.empty());
  env = SlurmStep();
  env["SLURM_STEP_TASKS_PER_NODE"] = "4(x3)";  // three nodes' counts, two nodes
  EXPECT_TRUE(Detect("slurm", env).process_host_runs.empty());
  env = SlurmStep();
  env["SLURM_STEP_TASKS_PER_NODE"] = "3(x2)";  // 6 tasks, the step has 8
  EXPECT_TRUE(Detect("slurm", env).process_host_runs.empty());
  env = SlurmStep();
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  EXPECT_TRUE(Detect("slurm", env).process_host_runs.empty());
}

TEST(Slurm, SlurmPortOverrides) {
  Environment env = SlurmStep();
  env["JAX_COORDINATOR_PORT"] = "4000";
  Detection d = Detect("auto", env);
  EXPECT_EQ(Text(d.job_addresses), std::string("gpu-a01:4000"));
  EXPECT_EQ(Vars(d.job_addresses), std::string("SLURM_STEP_NODELIST, JAX_COORDINATOR_PORT"));
  env["KDIST_COORDINATOR_PORT"] = "5000";  // kdist's own variable comes first
  d = Detect("auto", env);
  EXPECT_EQ(Text(d.job_addresses), std::string("gpu-a01:5000"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("SLURM_STEP_NODELIST, KDIST_COORDINATOR_PORT"));
  env["KDIST_COORDINATOR_PORT"] = "0";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): KDIST_COORDINATOR_PORT=\"0\" would let the "
                     "system pick a different port on each process; expected a port in 1..65535");
  env["KDIST_COORDINATOR_PORT"] = " 5000 ";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): KDIST_COORDINATOR_PORT=\" 5000 \" is not a "
                     "number; expected a port in 1..65535");
  env.erase("KDIST_COORDINATOR_PORT");
  env["JAX_COORDINATOR_PORT"] = "65536";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): JAX_COORDINATOR_PORT=\"65536\" is out of "
                     "range; expected a port in 1..65535");
}

TEST(Slurm, SlurmAllocationWithoutAStepIsAnErrorNotAWrongCluster) {
  KDIST_EXPECT_ERROR(DetectCluster("auto", SlurmAllocationShell()),
                     StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): SLURM_JOB_ID=\"4242425\" is set but "
                     "SLURM_STEP_NODELIST, SLURM_PROCID and SLURM_STEP_NUM_TASKS are not: this "
                     "process runs inside a Slurm allocation");
  KDIST_EXPECT_ERROR(DetectCluster("auto", SlurmAllocationShell()),
                     StatusCode::kInvalidArgument, "Start every process with srun");
  KDIST_EXPECT_ERROR(DetectCluster("auto", SlurmAllocationShell()),
                     StatusCode::kInvalidArgument, "KDIST_CLUSTER_DETECTION=none");
  // The batch script of sbatch: PROCID and LOCALID are 0, there is no step.
  Environment batch = SlurmAllocationShell();
  batch["SLURM_PROCID"] = "0";
  batch["SLURM_LOCALID"] = "0";
  KDIST_EXPECT_ERROR(DetectCluster("auto", batch), StatusCode::kInvalidArgument,
                     "SLURM_STEP_NODELIST and SLURM_STEP_NUM_TASKS are not");
}

TEST(Slurm, SlurmPartialOrMalformedStep) {
  Environment env = SlurmStep();
  env.erase("SLURM_PROCID");
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): SLURM_JOB_ID=\"4242424\", "
                     "SLURM_STEP_NODELIST=\"gpu-a[01-02]\" and SLURM_STEP_NUM_TASKS=\"8\" are "
                     "set but SLURM_PROCID is not.");
  env = SlurmStep();
  env["SLURM_STEP_NODELIST"] = "gpu-a[01-02";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): SLURM_STEP_NODELIST=\"gpu-a[01-02\" has an "
                     "unclosed '[' at byte 5");
  env = SlurmStep();
  env["SLURM_STEP_NUM_NODES"] = "3";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "SLURM_STEP_NUM_NODES=\"3\" does not match "
                     "SLURM_STEP_NODELIST=\"gpu-a[01-02]\", which lists 2 hosts");
  env = SlurmStep();
  env["SLURM_JOB_ID"] = "4242424_7";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "SLURM_JOB_ID=\"4242424_7\" is not a job id (has \"_\" at index 7 where a "
                     "digit was expected); expected a non-negative integer");
  env["SLURM_JOB_ID"] = " 4242424";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "SLURM_JOB_ID=\" 4242424\" is not a job id (has \" \" at index 0");
  env = SlurmStep();
  env["SLURM_STEP_NODELIST"] = "gpu_a[01-02]";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): SLURM_STEP_NODELIST=\"gpu_a[01-02]\" starts "
                     "with host \"gpu_a01\", which is not a valid host name (dot-separated "
                     "labels");
  env = SlurmStep();
  env["SLURM_STEP_TASKS_PER_NODE"] = "4(x2";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "SLURM_STEP_TASKS_PER_NODE=\"4(x2\"");
}

TEST(SlurmAllocation, IsReadOnlyUnderSlurm) {
  Result<std::optional<SlurmAllocation>> none = ReadSlurmAllocation({});
  KDIST_ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  Result<std::optional<SlurmAllocation>> got = ReadSlurmAllocation(
      {{"SLURM_JOB_ID", "12"}, {"SLURM_NODELIST", "gpu[07-08]"}, {"SLURMD_NODENAME", "gpu08"}});
  KDIST_ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->job_id, "12");
  EXPECT_EQ((*got)->first_host, "gpu07");
  EXPECT_EQ((*got)->nodelist_variable, "SLURM_NODELIST");
  EXPECT_EQ((*got)->node_name, "gpu08");
  KDIST_EXPECT_ERROR(ReadSlurmAllocation({{"SLURM_JOB_ID", "12"}, {"SLURM_JOB_NODELIST", "a[1-"}}),
                     StatusCode::kInvalidArgument, "SLURM_JOB_NODELIST=\"a[1-\" lists no host");
}

}  // namespace
}  // namespace kdist
