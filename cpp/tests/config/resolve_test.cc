#include "config/resolve.h"

#include <csignal>

#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

Request Args(std::optional<std::string> addresses, std::optional<std::string> count,
             std::optional<std::string> id) {
  Request request;
  request.job_addresses = std::move(addresses);
  request.num_processes = std::move(count);
  request.process_id = std::move(id);
  return request;
}

TEST(Resolve, ArgumentsOnly) {
  auto spec = Resolve(Args("10.0.0.1:1234", "2", "1"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->coordinator()->ToString(), std::string("10.0.0.1:1234"));
  EXPECT_EQ(spec->num_processes.value, int64_t{2});
  EXPECT_EQ(spec->num_processes.source, std::string("argument"));
  EXPECT_EQ(spec->process_id.value, int64_t{1});
  EXPECT_EQ(spec->timeout_seconds.value, 300.0);
  EXPECT_EQ(spec->timeout_seconds.source, std::string("default"));
  EXPECT_TRUE(spec->preflight.value);
  EXPECT_EQ(spec->cluster_detection.value, std::string("auto"));
}

TEST(Resolve, EnvironmentFillsWhatArgumentsLeaveOut) {
  Environment env{{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1"},
                  {"KERAS_DISTRIBUTION_NUM_PROCESSES", "4"},
                  {"KERAS_DISTRIBUTION_PROCESS_ID", "3"},
                  {"KDIST_INIT_TIMEOUT", "2.5"},
                  {"KDIST_PREFLIGHT", "off"}};
  auto spec = Resolve(Args(std::nullopt, std::nullopt, "2"), env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->job_addresses.source, std::string("KERAS_DISTRIBUTION_JOB_ADDRESSES"));
  EXPECT_EQ(spec->num_processes.value, int64_t{4});
  EXPECT_EQ(spec->num_processes.source, std::string("KERAS_DISTRIBUTION_NUM_PROCESSES"));
  EXPECT_EQ(spec->process_id.value, int64_t{2});
  EXPECT_EQ(spec->process_id.source, std::string("argument"));
  EXPECT_EQ(spec->timeout_seconds.value, 2.5);
  EXPECT_EQ(spec->timeout_seconds.source, std::string("KDIST_INIT_TIMEOUT"));
  EXPECT_FALSE(spec->preflight.value);
}

TEST(Resolve, StopSignalsAndStallTimeoutArePartOfTheFingerprint) {
  auto plain = Resolve(Args("10.0.0.1:1234", "2", "1"), {});
  auto usr1 = Resolve(Args("10.0.0.1:1234", "2", "1"), {{"KDIST_STOP_SIGNALS", "SIGUSR1"}});
  auto stall = Resolve(Args("10.0.0.1:1234", "2", "1"), {{"KDIST_STALL_TIMEOUT", "60"}});
  KDIST_ASSERT_OK(plain);
  KDIST_ASSERT_OK(usr1);
  KDIST_ASSERT_OK(stall);
  EXPECT_NE(plain->Fingerprint(), usr1->Fingerprint());
  EXPECT_NE(plain->Fingerprint(), stall->Fingerprint());
}

TEST(Resolve, AddressListGivesTheProcessCount) {
  auto spec = Resolve(Args("a:1,b:2,c:3", std::nullopt, "0"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->num_processes.value, int64_t{3});
  EXPECT_EQ(spec->num_processes.source, std::string("job_addresses"));
  EXPECT_EQ(spec->coordinator()->ToString(), std::string("a:1"));
}

TEST(Resolve, ProcessHostsComeFromTheAddressesOrTheSchedulersLayout) {
  auto spec = Resolve(Args("a:1,b:2,c:3", std::nullopt, "0"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->process_hosts.value, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(spec->process_hosts.source, std::string("argument"));

  Environment slurm = testing::SlurmStep();
  slurm["SLURM_PROCID"] = "0";
  spec = Resolve(Request{}, slurm);
  KDIST_ASSERT_OK(spec);
  ASSERT_EQ(spec->process_hosts.value.size(), size_t{8});
  EXPECT_EQ(spec->process_hosts.value[3], std::string("gpu-a01"));
  EXPECT_EQ(spec->process_hosts.value[4], std::string("gpu-a02"));

  // Kubernetes: pod names, once KERAS_DISTRIBUTION_NUM_PROCESSES gives the count.
  Environment k8s = testing::KubernetesIndexedJob();
  k8s["JOB_COMPLETION_INDEX"] = "0";
  k8s["HOSTNAME"] = "train-0";
  k8s["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "3";
  spec = Resolve(Request{}, k8s);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->process_hosts.value,
            (std::vector<std::string>{"train-0", "train-1", "train-2"}));

  // A job described wholly otherwise, with another count: the scheduler's layout does
  // not describe it.
  spec = Resolve(Args("gpu-a01:1234", "6", "0"), slurm);
  KDIST_ASSERT_OK(spec);
  EXPECT_TRUE(spec->process_hosts.value.empty());
  // Only the coordinator's address, no scheduler: unknown.
  spec = Resolve(Args("a:1", "2", "0"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_TRUE(spec->process_hosts.value.empty());
}

TEST(Resolve, OnlyProcessZeroSpellsOutTheProcessHosts) {
  // The others never name missing processes: they skip building N names.
  auto spec = Resolve(Request{}, testing::SlurmStep());  // task 5
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->process_id.value, int64_t{5});
  EXPECT_TRUE(spec->process_hosts.value.empty());
  spec = Resolve(Args("a:1,b:2,c:3", std::nullopt, "2"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_TRUE(spec->process_hosts.value.empty());
}

TEST(Resolve, AddressCountMustMatch) {
  KDIST_EXPECT_ERROR(Resolve(Args("a:1,b:2", "3", "0"), {}), StatusCode::kInvalidArgument,
                     "job_addresses=\"a:1,b:2\" (argument) lists 2 addresses but num_processes=3 "
                     "(argument)");
  Environment env{{"KERAS_DISTRIBUTION_NUM_PROCESSES", "3"}};
  KDIST_EXPECT_ERROR(Resolve(Args("a:1,b:2", std::nullopt, "0"), env),
                     StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_NUM_PROCESSES=\"3\" (from the environment)");
}

TEST(Resolve, SingleProcessNeedsNoCoordinator) {
  auto spec = Resolve(Args(std::nullopt, "1", std::nullopt), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->coordinator().has_value());
  EXPECT_EQ(spec->process_id.value, int64_t{0});
  EXPECT_EQ(spec->process_id.source, std::string("default"));
}

TEST(Resolve, NothingConfiguredListsTheWays) {
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument,
                     "found no cluster configuration");
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_NUM_PROCESSES");
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument, "num_processes=1");
}

TEST(Resolve, MissingPieces) {
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", std::nullopt, "0"), {}), StatusCode::kInvalidArgument,
                     "names the coordinator but the number of processes is not set");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "2", "0"), {}), StatusCode::kInvalidArgument,
                     "num_processes=2 (argument) needs the coordinator's address");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", std::nullopt), {}), StatusCode::kInvalidArgument,
                     "process_id is not set for a job of 2 processes");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, std::nullopt, "0"), {}),
                     StatusCode::kInvalidArgument, "process_id=0 (argument) is set but");
}

TEST(Resolve, RangeChecks) {
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "0", "0"), {}), StatusCode::kInvalidArgument,
                     "num_processes=0 (argument): expected a positive integer");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "-3", "0"), {}), StatusCode::kInvalidArgument,
                     "expected a positive integer");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", "2"), {}), StatusCode::kInvalidArgument,
                     "process_id=2 (argument): expected an integer in [0, 2) because "
                     "num_processes=2 (argument)");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", "-1"), {}), StatusCode::kInvalidArgument,
                     "process_id=-1 (argument)");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "99999999999999999999999", "0"), {}),
                     StatusCode::kInvalidArgument, "64-bit range");
}

TEST(Resolve, BadEnvironmentValuesNameTheVariable) {
  for (const char* bad : {"two", "", "1.5", " "}) {
    Environment env{{"KERAS_DISTRIBUTION_NUM_PROCESSES", bad}};
    KDIST_EXPECT_ERROR(Resolve(Args("h:1", std::nullopt, "0"), env), StatusCode::kInvalidArgument,
                       "KERAS_DISTRIBUTION_NUM_PROCESSES=\"" + std::string(bad) +
                           "\" (from the environment): ");
  }
  Environment env{{"KERAS_DISTRIBUTION_PROCESS_ID", "one"}};
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", std::nullopt), env), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_PROCESS_ID=\"one\" (from the environment): is not an "
                     "integer; expected an integer in [0, 2)");
  Environment addresses{{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:99999"}};
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "2", "0"), addresses),
                     StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_JOB_ADDRESSES=\"h:99999\" (from the environment): has "
                     "port 99999, which is out of range");
}

TEST(Resolve, BadSettingsAreReportedEvenWithoutACluster) {
  KDIST_EXPECT_ERROR(Resolve(Request{}, {{"KDIST_INIT_TIMEOUT", "-1"}}),
                     StatusCode::kInvalidArgument, "KDIST_INIT_TIMEOUT");
}

TEST(Resolve, RendezvousTokenComesOnlyFromTheEnvironment) {
  auto none = Resolve(Args("h:1", "2", "0"), {});
  KDIST_ASSERT_OK(none);
  EXPECT_EQ(none->rendezvous_token.value, std::string());
  EXPECT_EQ(none->rendezvous_token.source, std::string("default"));
  auto empty = Resolve(Args("h:1", "2", "0"), {{"KDIST_RENDEZVOUS_TOKEN", ""}});
  KDIST_ASSERT_OK(empty);
  EXPECT_EQ(empty->rendezvous_token.value, std::string());
  auto set = Resolve(Args("h:1", "2", "0"), {{"KDIST_RENDEZVOUS_TOKEN", "s3cret"}});
  KDIST_ASSERT_OK(set);
  EXPECT_EQ(set->rendezvous_token.value, std::string("s3cret"));
  EXPECT_EQ(set->rendezvous_token.source, std::string("KDIST_RENDEZVOUS_TOKEN"));
  // The token is no part of the job's identity.
  EXPECT_EQ(set->Fingerprint(), none->Fingerprint());
  EXPECT_TRUE(set->SameJobAndProcess(*none));
  // Too long: named by length, never printed.
  const std::string secret(2000, 'z');
  auto long_token = Resolve(Args("h:1", "2", "0"), {{"KDIST_RENDEZVOUS_TOKEN", secret}});
  KDIST_EXPECT_ERROR(long_token, StatusCode::kInvalidArgument, "2000 bytes long");
  EXPECT_TRUE(long_token.status().message().find("zzzz") == std::string::npos);
}

// srun --ntasks=4 over node[01-02], task 3.
Environment SlurmTask3() {
  return {{"SLURM_JOB_ID", "4096"},          {"SLURM_STEP_NODELIST", "node[01-02]"},
          {"SLURM_STEP_NUM_TASKS", "4"},     {"SLURM_NTASKS", "4"},
          {"SLURM_PROCID", "3"},             {"SLURM_LOCALID", "1"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}};
}

TEST(Resolve, DetectedSchedulerFillsEverythingWithSources) {
  auto spec = Resolve(Request{}, SlurmTask3());
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->scheduler.value_or(""), std::string("slurm"));
  EXPECT_EQ(spec->coordinator()->ToString(), std::string("node01:61440"));
  EXPECT_EQ(spec->job_addresses.source, std::string("slurm (SLURM_STEP_NODELIST, SLURM_JOB_ID)"));
  EXPECT_EQ(spec->num_processes.value, int64_t{4});
  EXPECT_EQ(spec->num_processes.source, std::string("slurm (SLURM_STEP_NUM_TASKS)"));
  EXPECT_EQ(spec->process_id.value, int64_t{3});
  EXPECT_EQ(spec->process_id.source, std::string("slurm (SLURM_PROCID)"));
}

TEST(Resolve, ExplicitSettingsWinAndDetectionFillsTheRest) {
  Environment env = SlurmTask3();
  env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = "10.0.0.9:7000";  // another coordinator: fine
  auto spec = Resolve(Args(std::nullopt, std::nullopt, "3"), env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->coordinator()->ToString(), std::string("10.0.0.9:7000"));
  EXPECT_EQ(spec->job_addresses.source, std::string("KERAS_DISTRIBUTION_JOB_ADDRESSES"));
  EXPECT_EQ(spec->process_id.value, int64_t{3});
  EXPECT_EQ(spec->process_id.source, std::string("argument"));
  EXPECT_EQ(spec->num_processes.source, std::string("slurm (SLURM_STEP_NUM_TASKS)"));
  EXPECT_EQ(spec->scheduler.value_or(""), std::string("slurm"));
  // An explicit count that agrees with the scheduler's keeps its own source.
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "4";
  spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->num_processes.source, std::string("KERAS_DISTRIBUTION_NUM_PROCESSES"));
  EXPECT_EQ(spec->process_id.source, std::string("slurm (SLURM_PROCID)"));
}

TEST(Resolve, AnExplicitCountThatContradictsTheSchedulerFillingTheRestIsAnError) {
  // srun -n4 with KERAS_DISTRIBUTION_NUM_PROCESSES=3: every task knows both values.
  Environment env = SlurmTask3();
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "3";
  KDIST_EXPECT_ERROR(
      Resolve(Request{}, env), StatusCode::kInvalidArgument,
      "KERAS_DISTRIBUTION_NUM_PROCESSES=\"3\" (from the environment) contradicts "
      "SLURM_STEP_NUM_TASKS=\"4\" (detected: slurm): this process takes its other settings "
      "(job_addresses, process_id) from slurm, the scheduler that started it, so its processes "
      "would never form one job. To use slurm's values, unset KERAS_DISTRIBUTION_NUM_PROCESSES; "
      "to describe a job of your own instead, give job_addresses, num_processes and process_id "
      "all explicitly (slurm's are then not used)");
  // Before the detected id is checked against the explicit count: the contradiction is
  // the cause (task 3 is out of range only because of it).
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "2";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_NUM_PROCESSES=\"2\" (from the environment) contradicts "
                     "SLURM_STEP_NUM_TASKS=\"4\" (detected: slurm)");
  // As an argument; and JAX's own variable.
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "8", std::nullopt), SlurmTask3()),
                     StatusCode::kInvalidArgument,
                     "num_processes=8 (argument) contradicts SLURM_STEP_NUM_TASKS=\"4\" "
                     "(detected: slurm): this process takes its other settings (job_addresses, "
                     "process_id) from slurm");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "8", std::nullopt), SlurmTask3()),
                     StatusCode::kInvalidArgument, "To use slurm's values, do not pass "
                     "num_processes;");
  env = SlurmTask3();
  env["JAX_NUM_PROCESSES"] = "5";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "JAX_NUM_PROCESSES=\"5\" (from the environment) contradicts "
                     "SLURM_STEP_NUM_TASKS=\"4\"");
  // An explicit coordinator and count, the id from Slurm: still half and half.
  env = SlurmTask3();
  env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = "node01:1234";
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "3";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "takes its other settings (process_id) from slurm");
  // A list of every process's address counts too.
  env = SlurmTask3();
  env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = "a:1,b:1";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_JOB_ADDRESSES=\"a:1,b:1\" (from the environment), which "
                     "lists 2 addresses, contradicts SLURM_STEP_NUM_TASKS=\"4\" (detected: "
                     "slurm)");
}

TEST(Resolve, AnExplicitProcessIdThatContradictsTheSchedulerFillingTheRestIsAnError) {
  Environment env = SlurmTask3();
  env["KERAS_DISTRIBUTION_PROCESS_ID"] = "1";  // another task's id
  KDIST_EXPECT_ERROR(
      Resolve(Request{}, env), StatusCode::kInvalidArgument,
      "KERAS_DISTRIBUTION_PROCESS_ID=\"1\" (from the environment) contradicts "
      "SLURM_PROCID=\"3\" (detected: slurm): this process takes its other settings "
      "(job_addresses, num_processes) from slurm");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, std::nullopt, "0"), SlurmTask3()),
                     StatusCode::kInvalidArgument,
                     "process_id=0 (argument) contradicts SLURM_PROCID=\"3\" (detected: slurm)");
  // Both at once: one message names both, and both ways back.
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "2";
  KDIST_EXPECT_ERROR(
      Resolve(Request{}, env), StatusCode::kInvalidArgument,
      "KERAS_DISTRIBUTION_NUM_PROCESSES=\"2\" (from the environment) contradicts "
      "SLURM_STEP_NUM_TASKS=\"4\" (detected: slurm); KERAS_DISTRIBUTION_PROCESS_ID=\"1\" (from "
      "the environment) contradicts SLURM_PROCID=\"3\" (detected: slurm): this process takes its "
      "other settings (job_addresses) from slurm, the scheduler that started it, so its "
      "processes would never form one job. To use slurm's values, unset "
      "KERAS_DISTRIBUTION_NUM_PROCESSES and unset KERAS_DISTRIBUTION_PROCESS_ID;");
  // A malformed explicit id is reported as such, not as a contradiction.
  env = SlurmTask3();
  env["KERAS_DISTRIBUTION_PROCESS_ID"] = "three";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_PROCESS_ID=\"three\" (from the environment): is not an "
                     "integer");
}

TEST(Resolve, ExplicitSettingsThatDescribeTheWholeJobWinOverTheScheduler) {
  // A launcher inside a job step (`srun -n1 kdist launch -n 4`): the scheduler fills
  // nothing, so its other count and id are not checked.
  Environment env = SlurmTask3();
  env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = "127.0.0.1:5000";
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "6";
  env["KERAS_DISTRIBUTION_PROCESS_ID"] = "5";
  auto spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->num_processes.value, int64_t{6});
  EXPECT_EQ(spec->process_id.value, int64_t{5});
  EXPECT_EQ(spec->process_id.source, std::string("KERAS_DISTRIBUTION_PROCESS_ID"));
  EXPECT_EQ(spec->scheduler.value_or(""), std::string("slurm"));
  // So does a single process.
  spec = Resolve(Args(std::nullopt, "1", std::nullopt), SlurmTask3());
  KDIST_ASSERT_OK(spec);
  // And other detectors follow the same rule.
  Environment torchrun = {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"},
                          {"WORLD_SIZE", "4"},         {"RANK", "2"},
                          {"KERAS_DISTRIBUTION_NUM_PROCESSES", "2"}};
  KDIST_EXPECT_ERROR(Resolve(Request{}, torchrun), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_NUM_PROCESSES=\"2\" (from the environment) contradicts "
                     "WORLD_SIZE=\"4\" (detected: torchrun)");
}

TEST(Resolve, PreviousNumProcessesFromTheVariableElseNone) {
  auto spec = Resolve(Args("10.0.0.1:1234", "2", "1"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->previous_num_processes.value.has_value());
  EXPECT_EQ(spec->previous_num_processes.source, std::string("default"));
  spec = Resolve(Args("10.0.0.1:1234", "2", "1"), {{"KDIST_PREVIOUS_NUM_PROCESSES", "3"}});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->previous_num_processes.value, std::optional<int64_t>(3));
  EXPECT_EQ(spec->previous_num_processes.source, std::string("KDIST_PREVIOUS_NUM_PROCESSES"));
  KDIST_EXPECT_ERROR(
      Resolve(Args("10.0.0.1:1234", "2", "1"), {{"KDIST_PREVIOUS_NUM_PROCESSES", "0"}}),
      StatusCode::kInvalidArgument, "KDIST_PREVIOUS_NUM_PROCESSES=\"0\"");
}

TEST(Resolve, RestartCountFromTheVariableElseTheSchedulerElseZero) {
  auto spec = Resolve(Args("10.0.0.1:1234", "2", "1"), {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->restart_count.value, int64_t{0});
  EXPECT_EQ(spec->restart_count.source, std::string("default"));

  Environment env = SlurmTask3();
  spec = Resolve(Request{}, env);  // a first run: Slurm sets no restart count
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->restart_count.source, std::string("default"));
  env["SLURM_RESTART_COUNT"] = "2";
  spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->restart_count.value, int64_t{2});
  EXPECT_EQ(spec->restart_count.source, std::string("slurm (SLURM_RESTART_COUNT)"));
  // Even when explicit settings leave the scheduler nothing else to fill.
  spec = Resolve(Args(std::nullopt, "1", std::nullopt), env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->restart_count.value, int64_t{2});
  env["KDIST_RESTART_COUNT"] = "7";
  spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->restart_count.value, int64_t{7});
  EXPECT_EQ(spec->restart_count.source, std::string("KDIST_RESTART_COUNT"));

  Environment torchrun = {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"},
                          {"WORLD_SIZE", "4"},         {"RANK", "2"},
                          {"TORCHELASTIC_RESTART_COUNT", "3"}};
  spec = Resolve(Request{}, torchrun);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->restart_count.value, int64_t{3});
  EXPECT_EQ(spec->restart_count.source, std::string("torchrun (TORCHELASTIC_RESTART_COUNT)"));
  // The restart count is not one of the settings every process must share.
  EXPECT_EQ(spec->Fingerprint(), Resolve(Request{}, [&] {
                                   Environment e = torchrun;
                                   e.erase("TORCHELASTIC_RESTART_COUNT");
                                   return e;
                                 }())->Fingerprint());
}

TEST(Resolve, BadRestartCountsNameTheValueAndItsSource) {
  KDIST_EXPECT_ERROR(Resolve(Args("10.0.0.1:1234", "2", "1"), {{"KDIST_RESTART_COUNT", "-1"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_RESTART_COUNT=\"-1\" (from the environment): expected a non-negative "
                     "integer (how many times the job was started again)");
  KDIST_EXPECT_ERROR(Resolve(Args("10.0.0.1:1234", "2", "1"), {{"KDIST_RESTART_COUNT", "once"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_RESTART_COUNT=\"once\" (from the environment): is not an integer");
  Environment env = SlurmTask3();
  env["SLURM_RESTART_COUNT"] = "x";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "SLURM_RESTART_COUNT=\"x\" (detected: slurm): is not an integer");
}

TEST(Resolve, DetectionOffOrNamed) {
  Request request;
  request.cluster_detection = "none";
  KDIST_EXPECT_ERROR(Resolve(request, SlurmTask3()), StatusCode::kInvalidArgument,
                     "scheduler detection is off: cluster_detection=\"none\" (argument)");
  request.cluster_detection = "torchrun";
  KDIST_EXPECT_ERROR(Resolve(request, SlurmTask3()), StatusCode::kInvalidArgument,
                     "cluster_detection=\"torchrun\" (argument): the torchrun detector found none "
                     "of its variables (WORLD_SIZE or RANK) in the environment; use \"auto\"");
  Environment env = SlurmTask3();
  env["KDIST_CLUSTER_DETECTION"] = "Slurm";
  auto spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->cluster_detection.value, std::string("slurm"));
  EXPECT_EQ(spec->cluster_detection.source, std::string("KDIST_CLUSTER_DETECTION"));
  request.cluster_detection = "slurmm";
  KDIST_EXPECT_ERROR(Resolve(request, {}), StatusCode::kInvalidArgument,
                     "expected one of \"auto\", \"none\", \"torchrun\", \"ompi\", \"mpich\", "
                     "\"skypilot\", \"slurm\", \"tf_config\", \"gke_tpu\", \"gce_tpu\", "
                     "\"kubernetes\"");
}

TEST(Resolve, DetectedValuesAreValidatedWithTheirVariables) {
  Environment env = SlurmTask3();
  env["SLURM_PROCID"] = "x";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "SLURM_PROCID=\"x\" (detected: slurm): is not an integer; expected an "
                     "integer in [0, 4) because num_processes=4 (slurm (SLURM_STEP_NUM_TASKS))");
  env["SLURM_PROCID"] = "4";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "SLURM_PROCID=\"4\" (detected: slurm): expected an integer in [0, 4)");
  env = SlurmTask3();
  env["SLURM_STEP_NUM_TASKS"] = "x";  // explicit wins, and the detected id is out of range
  env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "2";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "SLURM_PROCID=\"3\" (detected: slurm): expected an integer in [0, 2) because "
                     "num_processes=2 (KERAS_DISTRIBUTION_NUM_PROCESSES)");
  Environment tf = {{"TF_CONFIG", R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":0}})"},
                    {"KERAS_DISTRIBUTION_NUM_PROCESSES", "3"}};
  KDIST_EXPECT_ERROR(Resolve(Request{}, tf), StatusCode::kInvalidArgument,
                     "TF_CONFIG cluster \"a:1,b:1\" (detected: tf_config) lists 2 addresses but "
                     "KERAS_DISTRIBUTION_NUM_PROCESSES=\"3\" (from the environment)");
}

TEST(Resolve, BrokenSchedulerEnvironmentMattersOnlyWhenNeeded) {
  // `salloc` shell: an allocation without a job step.
  Environment shell = {{"SLURM_JOB_ID", "77"}, {"SLURM_NTASKS", "4"}, {"SLURM_NODELIST", "n1"}};
  KDIST_EXPECT_ERROR(Resolve(Request{}, shell), StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): SLURM_JOB_ID=\"77\" is set but");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "2", "0"), shell), StatusCode::kInvalidArgument,
                     "srun did not start it");
  // Fully explicit, or a single process: the shell's variables do not matter.
  auto spec = Resolve(Args("h:1", "2", "0"), shell);
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->scheduler.has_value());
  spec = Resolve(Args(std::nullopt, "1", std::nullopt), shell);
  KDIST_ASSERT_OK(spec);
  // ... unless the mode names that detector.
  Request named = Args("h:1", "2", "0");
  named.cluster_detection = "slurm";
  KDIST_EXPECT_ERROR(Resolve(named, shell), StatusCode::kInvalidArgument, "srun did not start it");
}

TEST(Resolve, ExplicitSingleProcessTakesNothingFromTheScheduler) {
  auto spec = Resolve(Args(std::nullopt, "1", std::nullopt), SlurmTask3());
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->coordinator().has_value());
  EXPECT_EQ(spec->process_id.value, int64_t{0});
  EXPECT_EQ(spec->process_id.source, std::string("default"));
  EXPECT_EQ(spec->scheduler.value_or(""), std::string("slurm"));  // still reported
}

TEST(Resolve, MissingValuesCarryTheDetectorsHint) {
  Environment hydra = {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}};
  KDIST_EXPECT_ERROR(Resolve(Request{}, hydra), StatusCode::kInvalidArgument,
                     "PMI_SIZE=\"2\" (detected: mpich) needs the coordinator's address: pass "
                     "job_addresses=\"host:port\" or set KERAS_DISTRIBUTION_JOB_ADDRESSES (use "
                     "num_processes=1 for a single process); MPICH's and Intel MPI's mpiexec");
  hydra["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = "node01:12345";
  auto spec = Resolve(Request{}, hydra);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->job_addresses.source, std::string("KERAS_DISTRIBUTION_JOB_ADDRESSES"));
  EXPECT_EQ(spec->num_processes.source, std::string("mpich (PMI_SIZE)"));
  EXPECT_EQ(spec->process_id.source, std::string("mpich (PMI_RANK)"));

  Environment pod = {{"JOB_COMPLETION_INDEX", "1"}, {"HOSTNAME", "train-1"},
                     {"KDIST_K8S_SUBDOMAIN", "svc"}};
  KDIST_EXPECT_ERROR(Resolve(Request{}, pod), StatusCode::kInvalidArgument,
                     "names the coordinator but the number of processes is not set; pass "
                     "num_processes=..., set KERAS_DISTRIBUTION_NUM_PROCESSES, or list one "
                     "address per process; Kubernetes does not publish the size");
  pod.erase("KDIST_K8S_SUBDOMAIN");
  KDIST_EXPECT_ERROR(Resolve(Request{}, pod), StatusCode::kInvalidArgument,
                     "JOB_COMPLETION_INDEX=\"1\" (detected: kubernetes) is set but the number of "
                     "processes is not");
  pod["KERAS_DISTRIBUTION_NUM_PROCESSES"] = "2";
  KDIST_EXPECT_ERROR(Resolve(Request{}, pod), StatusCode::kInvalidArgument,
                     "needs the coordinator's address: pass job_addresses=\"host:port\" or set "
                     "KERAS_DISTRIBUTION_JOB_ADDRESSES (use num_processes=1 for a single "
                     "process); Kubernetes does not publish the pods' subdomain");
}

TEST(Resolve, NothingConfiguredMentionsDetection) {
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument,
                     "start them under a launcher or scheduler kdist detects");
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument,
                     "none was found; cluster_detection=\"auto\" (default) looked for torchrun, "
                     "ompi, mpich, skypilot, slurm, tf_config, gke_tpu, gce_tpu, kubernetes");
  KDIST_EXPECT_ERROR(Resolve(Request{}, {{"KDIST_CLUSTER_DETECTION", "none"}}),
                     StatusCode::kInvalidArgument,
                     "scheduler detection is off: KDIST_CLUSTER_DETECTION=\"none\" (from the "
                     "environment)");
}

TEST(Resolve, LocalDevicesAreSuggestedNotForced) {
  auto spec = Resolve(Request{}, SlurmTask3());
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->local_device_ids.value.has_value());
  EXPECT_EQ(spec->local_device_ids.source, std::string("default"));
  EXPECT_FALSE(spec->local_devices_suggestion_applied);
  ASSERT_TRUE(spec->suggested_local_device_ids.has_value());
  EXPECT_EQ(spec->suggested_local_device_ids->size(), size_t{1});
  EXPECT_EQ(spec->suggested_local_device_ids->front(), int64_t{1});
  EXPECT_EQ(spec->local_devices_reason,
                  std::string("one device per process, chosen by local rank (SLURM_LOCALID=\"1\" "
                              "of SLURM_STEP_TASKS_PER_NODE=\"2(x2)\")"));
}

TEST(Resolve, LocalDeviceIdsSetting) {
  Environment env = SlurmTask3();
  env["KDIST_LOCAL_DEVICE_IDS"] = "auto";
  auto spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  ASSERT_TRUE(spec->local_device_ids.value.has_value());
  EXPECT_EQ(spec->local_device_ids.value->front(), int64_t{1});
  EXPECT_EQ(spec->local_device_ids.source, std::string("slurm (SLURM_LOCALID)"));
  EXPECT_TRUE(spec->local_devices_suggestion_applied);

  env["KDIST_LOCAL_DEVICE_IDS"] = " 2, 3 ";
  spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  ASSERT_TRUE(spec->local_device_ids.value.has_value());
  EXPECT_EQ(spec->local_device_ids.value->size(), size_t{2});
  EXPECT_EQ(spec->local_device_ids.value->back(), int64_t{3});
  EXPECT_EQ(spec->local_device_ids.source, std::string("KDIST_LOCAL_DEVICE_IDS"));

  env["KDIST_LOCAL_DEVICE_IDS"] = "ALL";
  spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->local_device_ids.value.has_value());
  EXPECT_EQ(spec->local_device_ids.source, std::string("KDIST_LOCAL_DEVICE_IDS"));

  env["KDIST_LOCAL_DEVICE_IDS"] = "0,x";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "KDIST_LOCAL_DEVICE_IDS=\"0,x\" (from the environment): has \"x\", which is "
                     "not a device id");
  env["KDIST_LOCAL_DEVICE_IDS"] = "1,1";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "lists device 1 twice");
  // A single process has no jax.distributed to hand them to.
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "1", std::nullopt),
                             {{"KDIST_LOCAL_DEVICE_IDS", "0"}}),
                     StatusCode::kInvalidArgument,
                     "local device ids apply to a job started through jax.distributed");
  // Inside a Slurm task, "auto" has a suggestion (SLURM_LOCALID=1 of 2 tasks on
  // the node), but a single process has no coordinator to hand it to: the
  // suggestion is reported and not applied.
  Environment slurm_single = SlurmTask3();
  slurm_single["KDIST_LOCAL_DEVICE_IDS"] = "auto";
  auto single = Resolve(Args(std::nullopt, "1", std::nullopt), slurm_single);
  KDIST_ASSERT_OK(single);
  EXPECT_FALSE(single->coordinator().has_value());
  EXPECT_EQ(single->scheduler.value_or(""), std::string("slurm"));
  ASSERT_TRUE(single->suggested_local_device_ids.has_value());
  EXPECT_EQ(single->suggested_local_device_ids->size(), size_t{1});
  EXPECT_EQ(single->suggested_local_device_ids->front(), int64_t{1});
  EXPECT_FALSE(single->local_device_ids.value.has_value());
  EXPECT_EQ(single->local_device_ids.source, std::string("KDIST_LOCAL_DEVICE_IDS"));
  EXPECT_FALSE(single->local_devices_suggestion_applied);
}

TEST(Resolve, MalformedLocalRankMattersOnlyWhenApplied) {
  Environment env = SlurmTask3();
  env["SLURM_LOCALID"] = "-1";
  auto spec = Resolve(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->suggested_local_device_ids.has_value());
  EXPECT_EQ(spec->local_devices_reason,
                  std::string("SLURM_LOCALID=\"-1\" (detected: slurm): is not a local rank; "
                              "expected a non-negative integer"));
  env["KDIST_LOCAL_DEVICE_IDS"] = "auto";
  KDIST_EXPECT_ERROR(Resolve(Request{}, env), StatusCode::kInvalidArgument,
                     "SLURM_LOCALID=\"-1\" (detected: slurm): is not a local rank");
}

TEST(ClusterSpec, FingerprintCoversCoordinatorAndCount) {
  auto a = Resolve(Args("h:1", "2", "0"), {});
  auto b = Resolve(Args("h:1", "2", "1"), {});
  auto c = Resolve(Args("h:2", "2", "0"), {});
  auto d = Resolve(Args("h:1", "3", "0"), {});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_EQ(a->Fingerprint(), b->Fingerprint());
  EXPECT_NE(a->Fingerprint(), c->Fingerprint());
  EXPECT_NE(a->Fingerprint(), d->Fingerprint());
  EXPECT_EQ(a->Fingerprint().size(), size_t{16});
  EXPECT_FALSE(a->SameJobAndProcess(*b));
  EXPECT_TRUE(a->SameJobAndProcess(*a));
}

TEST(ClusterSpec, HexDigestIsFnv1a) {
  EXPECT_EQ(HexDigest(""), std::string("cbf29ce484222325"));
  EXPECT_EQ(HexDigest("a"), std::string("af63dc4c8601ec8c"));
}

// ---------------------------------------------------------------- JAX's own variables

TEST(ResolveJaxVariables, FillWhatKerasVariablesLeaveOut) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "3"},
                  {"JAX_PROCESS_ID", "2"}};
  auto spec = Resolve({}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->coordinator()->ToString(), std::string("10.0.0.5:7000"));
  EXPECT_EQ(spec->job_addresses.source, std::string("JAX_COORDINATOR_ADDRESS"));
  EXPECT_EQ(spec->num_processes.value, int64_t{3});
  EXPECT_EQ(spec->num_processes.source, std::string("JAX_NUM_PROCESSES"));
  EXPECT_EQ(spec->process_id.value, int64_t{2});
  EXPECT_EQ(spec->process_id.source, std::string("JAX_PROCESS_ID"));
}

TEST(ResolveJaxVariables, KerasVariablesAndArgumentsComeFirst) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "3"},
                  {"JAX_PROCESS_ID", "2"},
                  {"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1"},
                  {"KERAS_DISTRIBUTION_NUM_PROCESSES", "4"}};
  auto spec = Resolve(Args(std::nullopt, std::nullopt, "1"), env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->coordinator()->ToString(), std::string("h:1"));
  EXPECT_EQ(spec->job_addresses.source, std::string("KERAS_DISTRIBUTION_JOB_ADDRESSES"));
  EXPECT_EQ(spec->num_processes.source, std::string("KERAS_DISTRIBUTION_NUM_PROCESSES"));
  EXPECT_EQ(spec->process_id.value, int64_t{1});
  EXPECT_EQ(spec->process_id.source, std::string("argument"));
}

TEST(ResolveJaxVariables, ComeBeforeADetectedScheduler) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"OMPI_COMM_WORLD_SIZE", "2"},
                  {"OMPI_COMM_WORLD_RANK", "1"}};
  auto spec = Resolve({}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->job_addresses.source, std::string("JAX_COORDINATOR_ADDRESS"));
  EXPECT_EQ(spec->num_processes.source, std::string("ompi (OMPI_COMM_WORLD_SIZE)"));
  EXPECT_EQ(spec->process_id.source, std::string("ompi (OMPI_COMM_WORLD_RANK)"));
}

TEST(ResolveJaxVariables, MalformedValuesNameTheVariable) {
  KDIST_EXPECT_ERROR(Resolve({}, {{"JAX_COORDINATOR_ADDRESS", "h:1"}, {"JAX_NUM_PROCESSES", "two"}}),
                     StatusCode::kInvalidArgument,
                     "JAX_NUM_PROCESSES=\"two\" (from the environment)");
  KDIST_EXPECT_ERROR(Resolve({}, {{"JAX_COORDINATOR_ADDRESS", "h:1"},
                                  {"JAX_NUM_PROCESSES", "2"},
                                  {"JAX_PROCESS_ID", "2"}}),
                     StatusCode::kInvalidArgument,
                     "JAX_PROCESS_ID=\"2\" (from the environment): expected an integer in [0, 2) "
                     "because num_processes=2 (JAX_NUM_PROCESSES)");
  KDIST_EXPECT_ERROR(Resolve({}, {{"JAX_COORDINATOR_ADDRESS", "a:1,b:2"}, {"JAX_PROCESS_ID", "0"}}),
                     StatusCode::kInvalidArgument,
                     "JAX_COORDINATOR_ADDRESS=\"a:1,b:2\" (from the environment): names more than "
                     "one address");
}

TEST(ResolveJaxVariables, LocalDeviceIdsFromJax) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "h:1"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "0"},
                  {"JAX_LOCAL_DEVICE_IDS", "1,0"}};
  auto spec = Resolve({}, env);
  KDIST_ASSERT_OK(spec);
  ASSERT_TRUE(spec->local_device_ids.value.has_value());
  EXPECT_TRUE(*spec->local_device_ids.value == (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(spec->local_device_ids.source, std::string("JAX_LOCAL_DEVICE_IDS"));
}

TEST(ResolveJaxVariables, KdistLocalDeviceIdsComeFirst) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "h:1"},       {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "0"},                  {"JAX_LOCAL_DEVICE_IDS", "1"},
                  {"KDIST_LOCAL_DEVICE_IDS", "0"}};
  auto spec = Resolve({}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_TRUE(*spec->local_device_ids.value == (std::vector<int64_t>{0}));
  EXPECT_EQ(spec->local_device_ids.source, std::string("KDIST_LOCAL_DEVICE_IDS"));
}

TEST(ResolveJaxVariables, AllOrAutoContradictsJaxLocalDeviceIds) {
  for (const char* mode : {"all", "auto"}) {
    Environment env{{"JAX_COORDINATOR_ADDRESS", "h:1"},       {"JAX_NUM_PROCESSES", "2"},
                    {"JAX_PROCESS_ID", "0"},                  {"JAX_LOCAL_DEVICE_IDS", "1"},
                    {"KDIST_LOCAL_DEVICE_IDS", mode}};
    KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                       "contradicts JAX_LOCAL_DEVICE_IDS=\"1\" (from the environment), which JAX "
                       "applies whenever no device ids are passed");
  }
}

TEST(ResolveJaxVariables, JaxLocalDeviceIdsMustBeIds) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "h:1"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "0"},
                  {"JAX_LOCAL_DEVICE_IDS", "auto"}};
  KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                     "JAX_LOCAL_DEVICE_IDS=\"auto\" (from the environment): expected device ids "
                     "separated by commas");
  env["JAX_LOCAL_DEVICE_IDS"] = "0,x";
  KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                     "JAX_LOCAL_DEVICE_IDS=\"0,x\" (from the environment)");
}

TEST(ResolveJaxVariables, BindAddress) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "0"}};
  auto plain = Resolve({}, env);
  KDIST_ASSERT_OK(plain);
  EXPECT_FALSE(plain->coordinator_bind_address.value.has_value());
  EXPECT_EQ(plain->coordinator_bind_address.source, std::string("default"));

  env["JAX_COORDINATOR_BIND_ADDRESS"] = "[::]:7001";
  auto spec = Resolve({}, env);
  KDIST_ASSERT_OK(spec);
  ASSERT_TRUE(spec->coordinator_bind_address.value.has_value());
  EXPECT_EQ(spec->coordinator_bind_address.value->ToString(), std::string("[::]:7001"));
  EXPECT_EQ(spec->coordinator_bind_address.source,
                  std::string("JAX_COORDINATOR_BIND_ADDRESS"));
  // Where process 0 binds is its own business: not part of what processes compare.
  EXPECT_EQ(spec->Fingerprint(), plain->Fingerprint());
}

TEST(ResolveJaxVariables, BindAddressMustBeAnIpAndPort) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "0"},
                  {"JAX_COORDINATOR_BIND_ADDRESS", "node01:7000"}};
  KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                     "JAX_COORDINATOR_BIND_ADDRESS=\"node01:7000\" (from the environment): names a "
                     "host, not an IP address");
  env["JAX_COORDINATOR_BIND_ADDRESS"] = "0.0.0.0";
  KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                     "JAX_COORDINATOR_BIND_ADDRESS=\"0.0.0.0\" (from the environment)");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "1", std::nullopt),
                             {{"JAX_COORDINATOR_BIND_ADDRESS", "0.0.0.0:1"}}),
                     StatusCode::kInvalidArgument, "applies to a job with a coordinator");
}

TEST(ResolveCollectives, TheUsersAddressOrInterfaceKeepsItsSource) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "1"}};
  auto plain = Resolve({}, env);
  KDIST_ASSERT_OK(plain);
  EXPECT_EQ(plain->collectives_address.value, "");
  EXPECT_EQ(plain->collectives_address.source, "default");
  EXPECT_EQ(plain->collectives_interface.source, "default");

  env["KDIST_COLLECTIVES_ADDRESS"] = "10.0.0.6";
  auto by_address = Resolve({}, env);
  KDIST_ASSERT_OK(by_address);
  EXPECT_EQ(by_address->collectives_address.value, "10.0.0.6");
  EXPECT_EQ(by_address->collectives_address.source, "KDIST_COLLECTIVES_ADDRESS");
  // Each host has its own: not part of what processes compare.
  EXPECT_EQ(by_address->Fingerprint(), plain->Fingerprint());

  env.erase("KDIST_COLLECTIVES_ADDRESS");
  env["KDIST_COLLECTIVES_INTERFACE"] = "eth0";
  auto by_interface = Resolve({}, env);
  KDIST_ASSERT_OK(by_interface);
  EXPECT_EQ(by_interface->collectives_interface.value, "eth0");
  EXPECT_EQ(by_interface->collectives_interface.source, "KDIST_COLLECTIVES_INTERFACE");
}

TEST(ResolveCollectives, AHostNameOrAPortIsNotAnAddress) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "1"}};
  for (const char* text : {"node01", "10.0.0.6:7000", ""}) {
    env["KDIST_COLLECTIVES_ADDRESS"] = text;
    KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                       "KDIST_COLLECTIVES_ADDRESS=\"" + std::string(text) +
                           "\" (from the environment): expected an IP address of this host");
  }
}

TEST(ResolveCollectives, AnInterfaceNameHasItsForm) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "1"}};
  for (const char* text : {"", "a/b", "eth0:1", "averyveryverylongname"}) {
    env["KDIST_COLLECTIVES_INTERFACE"] = text;
    KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                       "expected a network interface's name");
  }
}

TEST(ResolveCollectives, AnAddressAndAnInterfaceAreOneTooMany) {
  Environment env{{"JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000"},
                  {"JAX_NUM_PROCESSES", "2"},
                  {"JAX_PROCESS_ID", "1"},
                  {"KDIST_COLLECTIVES_ADDRESS", "10.0.0.6"},
                  {"KDIST_COLLECTIVES_INTERFACE", "eth0"}};
  KDIST_EXPECT_ERROR(Resolve({}, env), StatusCode::kInvalidArgument,
                     "KDIST_COLLECTIVES_ADDRESS=\"10.0.0.6\" (from the environment) and "
                     "KDIST_COLLECTIVES_INTERFACE=\"eth0\" (from the environment) both choose");
}

TEST(ResolveJaxVariables, NothingConfiguredMentionsThem) {
  KDIST_EXPECT_ERROR(Resolve({}, {}), StatusCode::kInvalidArgument,
                     "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID");
}

TEST(ParseTimeoutSeconds, TakesPositiveSecondsUpToTheMaximum) {
  EXPECT_EQ(*ParseTimeoutSeconds("2.5"), 2.5);
  EXPECT_EQ(*ParseTimeoutSeconds(" 30 "), 30.0);
  EXPECT_EQ(*ParseTimeoutSeconds("1000000"), kMaxTimeoutSeconds);
}

TEST(ParseTimeoutSeconds, RefusesWithTheExpectedFormAlone) {
  for (const char* text : {"0", "-1", "1000000.5", "nan", "inf", "soon", ""}) {
    Result<double> value = ParseTimeoutSeconds(text);
    ASSERT_FALSE(value.ok()) << text;
    EXPECT_EQ(value.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(value.status().message(),
              std::string("expected a positive number of seconds (at most 1000000)"))
        << text;
  }
}

}  // namespace
}  // namespace kdist
