#include "detectors.h"

#include <algorithm>

#include "testing/status_matchers.h"
#include "testing/random_text.h"
#include "text.h"

namespace kdist {
namespace {

// Environments modelled on what each system sets (trimmed of unrelated
// variables but keeping the neighbours a detector must ignore).

// srun --nodes=2 --ntasks-per-node=4, task 5 (second node, local id 1).
Environment SlurmStep() {
  return {{"SLURM_JOB_ID", "4242424"},      {"SLURM_JOBID", "4242424"},
          {"SLURM_JOB_NODELIST", "gpu-a[01-02]"}, {"SLURM_NODELIST", "gpu-a[01-02]"},
          {"SLURM_NNODES", "2"},            {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NODELIST", "gpu-a[01-02]"}, {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_NUM_TASKS", "8"},    {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_NTASKS", "8"},            {"SLURM_NPROCS", "8"},
          {"SLURM_TASKS_PER_NODE", "4(x2)"}, {"SLURM_PROCID", "5"},
          {"SLURM_LOCALID", "1"},           {"SLURM_NODEID", "1"},
          {"SLURM_GTIDS", "4,5,6,7"},       {"SLURM_SRUN_COMM_HOST", "10.1.0.5"},
          {"SLURMD_NODENAME", "gpu-a02"},   {"SLURM_CLUSTER_NAME", "hpc"}};
}

// The shell of `salloc -N2 -n8`: an allocation, no job step.
Environment SlurmAllocationShell() {
  return {{"SLURM_JOB_ID", "4242425"}, {"SLURM_JOB_NODELIST", "gpu-a[01-02]"},
          {"SLURM_NODELIST", "gpu-a[01-02]"}, {"SLURM_NNODES", "2"},
          {"SLURM_NTASKS", "8"},       {"SLURM_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_SUBMIT_DIR", "/home/u"}};
}

// torchrun --nnodes=2 --nproc-per-node=4 --master-addr=10.0.0.1, worker 6.
Environment Torchrun() {
  return {{"MASTER_ADDR", "10.0.0.1"},         {"MASTER_PORT", "29500"},
          {"WORLD_SIZE", "8"},                 {"RANK", "6"},
          {"LOCAL_RANK", "2"},                 {"LOCAL_WORLD_SIZE", "4"},
          {"GROUP_RANK", "1"},                 {"GROUP_WORLD_SIZE", "2"},
          {"ROLE_RANK", "6"},                  {"ROLE_WORLD_SIZE", "8"},
          {"ROLE_NAME", "default"},            {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"TORCHELASTIC_MAX_RESTARTS", "0"},  {"TORCHELASTIC_RUN_ID", "none"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"OMP_NUM_THREADS", "1"}};
}

// mpirun -np 4 under Open MPI 4.1, rank 3 on the second host.
Environment OpenMpi4() {
  return {{"OMPI_MCA_orte_hnp_uri", "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911"},
          {"OMPI_COMM_WORLD_SIZE", "4"},       {"OMPI_COMM_WORLD_RANK", "3"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
          {"OMPI_COMM_WORLD_NODE_RANK", "1"},  {"OMPI_UNIVERSE_SIZE", "4"},
          {"OMPI_MCA_orte_ess_num_procs", "4"}, {"OMPI_MCA_ess", "^singleton"}};
}

// mpirun -np 4 under Open MPI 5 (PRRTE): no HNP URI.
Environment OpenMpi5() {
  return {{"OMPI_COMM_WORLD_SIZE", "4"},       {"OMPI_COMM_WORLD_RANK", "1"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
          {"OMPI_UNIVERSE_SIZE", "4"},         {"PMIX_RANK", "1"},
          {"PMIX_NAMESPACE", "prterun-node01-12345@1"},
          {"PMIX_SERVER_URI41", "prterun-node01-12345@0.0;tcp4://10.0.0.1:45123"}};
}

// mpiexec -n 4 -ppn 2 under MPICH's Hydra (Intel MPI sets the same), rank 2.
Environment Hydra() {
  return {{"PMI_RANK", "2"},        {"PMI_SIZE", "4"},        {"PMI_FD", "6"},
          {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}, {"I_MPI_ROOT", "/opt/intel/mpi"}};
}

Environment TfConfig() {
  return {{"TF_CONFIG",
           R"({"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]},
               "task": {"type": "worker", "index": 1}, "environment": "cloud"})"}};
}

// Pod 2 of an Indexed Job "train" whose template names subdomain "train-svc".
Environment KubernetesIndexedJob() {
  return {{"JOB_COMPLETION_INDEX", "2"},        {"HOSTNAME", "train-2"},
          {"KDIST_K8S_SUBDOMAIN", "train-svc"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
          {"KUBERNETES_SERVICE_PORT", "443"},   {"KUBERNETES_PORT", "tcp://10.96.0.1:443"}};
}

Environment Merged(Environment a, const Environment& b) {
  for (const auto& [k, v] : b) a[k] = v;
  return a;
}

Detection Detect(std::string_view mode, const Environment& env) {
  DetectResult result = DetectCluster(mode, env);
  if (!result.ok()) return Detection{"error: " + result.status().message()};
  if (!result->has_value()) return Detection{"nothing"};
  return **result;
}

std::string Text(const std::optional<DetectedValue>& value) {
  return value ? value->text : "<none>";
}
std::string Vars(const std::optional<DetectedValue>& value) {
  return value ? value->variables : "<none>";
}

TEST(Detectors, TableOrderAndNames) {
  std::vector<std::string> names;
  for (const Detector& d : Detectors()) {
    names.emplace_back(d.name);
    EXPECT_FALSE(d.summary.empty());
    EXPECT_FALSE(d.presence.empty());
    EXPECT_FALSE(d.variables.empty());
  }
  EXPECT_EQ(Join(names, ","), std::string("torchrun,ompi,mpich,slurm,tf_config,kubernetes"));
  EXPECT_TRUE(FindDetector("slurm") != nullptr);
  EXPECT_TRUE(FindDetector("auto") == nullptr);
}

TEST(Detectors, PortOverridesAreListedButDoNotMakeADetectorPresent) {
  for (const Detector& d : Detectors()) {
    const bool reads_override = d.name == "torchrun" || d.name == "ompi" ||
                                d.name == "slurm" || d.name == "kubernetes";
    for (std::string_view name : {kEnvCoordinatorPort, kEnvJaxCoordinatorPort}) {
      const bool listed =
          std::find(d.variables.begin(), d.variables.end(), name) != d.variables.end();
      EXPECT_EQ(listed, reads_override);
    }
  }
  const Environment ports = {{"KDIST_COORDINATOR_PORT", "5000"},
                             {"JAX_COORDINATOR_PORT", "6000"}};
  EXPECT_EQ(Detect("auto", ports).detector, std::string("nothing"));
  for (const DetectorReport& report : DetectAll(ports)) {
    EXPECT_TRUE(report.status.ok() && !report.detection.has_value());
  }
}

TEST(Detectors, NothingInAnEmptyOrUnrelatedEnvironment) {
  EXPECT_EQ(Detect("auto", {}).detector, std::string("nothing"));
  EXPECT_EQ(Detect("auto", {{"HOME", "/root"}, {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                  {"HOSTNAME", "pod-1"}})
                      .detector,
                  std::string("nothing"));
  EXPECT_EQ(Detect("none", SlurmStep()).detector, std::string("nothing"));
}

TEST(Detectors, SlurmStep) {
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

TEST(Detectors, SlurmFallsBackToNtasksAndUnevenTasksPerNode) {
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

TEST(Detectors, SlurmPortOverrides) {
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

TEST(Detectors, SlurmAllocationWithoutAStepIsAnErrorNotAWrongCluster) {
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

TEST(Detectors, SlurmPartialOrMalformedStep) {
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

TEST(Detectors, Torchrun) {
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

TEST(Detectors, TorchrunPartialOrMalformed) {
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

TEST(Detectors, OpenMpi4) {
  Detection d = Detect("auto", OpenMpi4());
  EXPECT_EQ(d.detector, std::string("ompi"));
  // The mpirun host's first interface; as JAX, port 61440 + (job id >> 12) % 4096.
  EXPECT_EQ(Text(d.job_addresses), std::string("10.96.0.1:62624"));
  EXPECT_EQ(Vars(d.job_addresses), std::string("OMPI_MCA_orte_hnp_uri"));
  EXPECT_EQ(Text(d.num_processes), std::string("4"));
  EXPECT_EQ(Vars(d.process_id), std::string("OMPI_COMM_WORLD_RANK"));
  EXPECT_EQ(Text(d.process_id), std::string("3"));
  EXPECT_EQ(Text(d.local_rank), std::string("1"));
  EXPECT_EQ(Text(d.local_size), std::string("2"));
  Environment env = OpenMpi4();
  env["KDIST_COORDINATOR_PORT"] = "6000";
  d = Detect("auto", env);
  EXPECT_EQ(Text(d.job_addresses), std::string("10.96.0.1:6000"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("OMPI_MCA_orte_hnp_uri, KDIST_COORDINATOR_PORT"));
}

TEST(Detectors, OpenMpi5CoordinatorOnMpirunsHostFromPmixNamespace) {
  Detection d = Detect("auto", OpenMpi5());
  EXPECT_EQ(d.detector, std::string("ompi"));
  // 61440 + (12345 * 16 + 1) % 4096
  EXPECT_EQ(Text(d.job_addresses), std::string("node01:62353"));
  EXPECT_EQ(Vars(d.job_addresses), std::string("PMIX_NAMESPACE"));
  Environment env = OpenMpi5();
  env["KDIST_COORDINATOR_PORT"] = "4000";
  d = Detect("auto", env);
  EXPECT_EQ(Text(d.job_addresses), std::string("node01:4000"));
  EXPECT_EQ(Vars(d.job_addresses), std::string("PMIX_NAMESPACE, KDIST_COORDINATOR_PORT"));
  // Rank 0 on mpirun's host (a long or short name) confirms it.
  env = OpenMpi5();
  env["OMPI_COMM_WORLD_RANK"] = "0";
  env["PMIX_HOSTNAME"] = "node01.cluster.example";
  EXPECT_EQ(Text(Detect("auto", env).job_addresses), std::string("node01:62353"));
}

TEST(Detectors, OpenMpi5Rank0ElsewhereSaysWhatToSet) {
  Environment env = OpenMpi5();
  env["OMPI_COMM_WORLD_RANK"] = "0";
  env["PMIX_HOSTNAME"] = "node02";
  Detection d = Detect("auto", env);
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("rank 0 runs on PMIX_HOSTNAME=\"node02\", not on "
                                              "mpirun's host \"node01\"") != std::string::npos);
}

TEST(Detectors, OpenMpi5WithoutMpirunsNamespaceSaysWhatToSet) {
  Environment env = OpenMpi5();
  env["PMIX_NAMESPACE"] = "prte-dvm-7@2";
  Detection d = Detect("auto", env);
  EXPECT_EQ(d.detector, std::string("ompi"));
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("Open MPI 5 (PRRTE) does not publish") !=
                    std::string::npos);
  EXPECT_TRUE(d.job_addresses_hint.find("mpirun -x KERAS_DISTRIBUTION_JOB_ADDRESSES=") !=
                    std::string::npos);
  EXPECT_TRUE(d.job_addresses_hint.find("PMIX_NAMESPACE=\"prte-dvm-7@2\" is not in "
                                              "mpirun's form") != std::string::npos);
  EXPECT_EQ(Text(d.process_id), std::string("1"));
  env.erase("PMIX_NAMESPACE");
  EXPECT_TRUE(Detect("auto", env).job_addresses_hint.find("PMIX_NAMESPACE is not set") !=
                    std::string::npos);
  Environment pmix_only_rank = OpenMpi5();
  pmix_only_rank.erase("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(Vars(Detect("ompi", pmix_only_rank).process_id), std::string("PMIX_RANK"));
}

TEST(Detectors, OpenMpiPartialOrMalformed) {
  KDIST_EXPECT_ERROR(
      DetectCluster("auto", {{"OMPI_MCA_orte_hnp_uri", "5.0;tcp://10.0.0.1:1"}}),
      StatusCode::kInvalidArgument,
      "scheduler detection (ompi): OMPI_MCA_orte_hnp_uri=\"5.0;tcp://10.0.0.1:1\" is set but "
      "OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK are not.");
  Environment env = OpenMpi4();
  env["OMPI_MCA_orte_hnp_uri"] = "1531576320.0;tcp://node1:34911";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "OMPI_MCA_orte_hnp_uri=\"1531576320.0;tcp://node1:34911\" has the URI");
}

TEST(Detectors, MpichHydraAndIntelMpi) {
  Detection d = Detect("auto", Hydra());
  EXPECT_EQ(d.detector, std::string("mpich"));
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("mpiexec -genv KERAS_DISTRIBUTION_JOB_ADDRESSES") !=
                    std::string::npos);
  EXPECT_EQ(Text(d.num_processes), std::string("4"));
  EXPECT_EQ(Vars(d.process_id), std::string("PMI_RANK"));
  EXPECT_EQ(Text(d.local_rank), std::string("0"));
  EXPECT_EQ(Vars(d.local_size), std::string("MPI_LOCALNRANKS"));
  KDIST_EXPECT_ERROR(DetectCluster("auto", {{"MPI_LOCALRANKID", "0"}}),
                     StatusCode::kInvalidArgument,
                     "scheduler detection (mpich): MPI_LOCALRANKID=\"0\" is set but PMI_SIZE and "
                     "PMI_RANK are not.");
}

TEST(Detectors, LaunchersInsideSlurmComeBeforeSlurm) {
  // `srun torchrun ...`: SLURM_PROCID numbers the torchrun agents.
  EXPECT_EQ(Detect("auto", Merged(SlurmStep(), Torchrun())).detector,
                  std::string("torchrun"));
  // mpirun in an allocation: Slurm started the ORTE daemons, not the ranks.
  EXPECT_EQ(Detect("auto", Merged(SlurmStep(), OpenMpi4())).detector,
                  std::string("ompi"));
  // Hydra with the Slurm bootstrap.
  EXPECT_EQ(Detect("auto", Merged(SlurmStep(), Hydra())).detector, std::string("mpich"));
  // srun --mpi=pmi2: Slurm's PMI plugin sets PMI_RANK and PMI_SIZE, no MPI_LOCALRANKID.
  Environment pmi2 = Merged(SlurmStep(), {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"},
                                          {"PMI_FD", "7"}, {"PMI_JOBID", "4242424.0"}});
  EXPECT_EQ(Detect("auto", pmi2).detector, std::string("slurm"));
  // A detector asked by name ignores the others.
  EXPECT_EQ(Detect("slurm", Merged(SlurmStep(), Torchrun())).detector,
                  std::string("slurm"));
}

TEST(Detectors, TfConfig) {
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

TEST(Detectors, TfConfigMalformed) {
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

TEST(Detectors, KubernetesIndexedJob) {
  Detection d = Detect("auto", KubernetesIndexedJob());
  EXPECT_EQ(d.detector, std::string("kubernetes"));
  EXPECT_EQ(Text(d.process_id), std::string("2"));
  EXPECT_EQ(Vars(d.process_id), std::string("JOB_COMPLETION_INDEX"));
  EXPECT_EQ(Text(d.job_addresses), std::string("train-0.train-svc:55527"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("HOSTNAME, JOB_COMPLETION_INDEX, KDIST_K8S_SUBDOMAIN"));
  EXPECT_FALSE(d.num_processes.has_value());
  EXPECT_TRUE(d.num_processes_hint.find("spec.completions") != std::string::npos);

  // A JobSet's single Job: pods <jobset>-<replicated job>-<job index>-<pod index>.
  Environment jobset = {{"JOB_COMPLETION_INDEX", "3"}, {"HOSTNAME", "js-workers-0-3"},
                        {"KDIST_K8S_SUBDOMAIN", "js"}, {"KDIST_COORDINATOR_PORT", "1234"}};
  d = Detect("auto", jobset);
  EXPECT_EQ(Text(d.job_addresses), std::string("js-workers-0-0.js:1234"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("HOSTNAME, JOB_COMPLETION_INDEX, KDIST_K8S_SUBDOMAIN, "
                              "KDIST_COORDINATOR_PORT"));
}

TEST(Detectors, KubernetesSaysWhatItCannotKnow) {
  Environment env = KubernetesIndexedJob();
  env.erase("KDIST_K8S_SUBDOMAIN");
  Detection d = Detect("auto", env);
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("set KDIST_K8S_SUBDOMAIN") != std::string::npos);
  EXPECT_TRUE(d.job_addresses_hint.find("train-0.<subdomain>:55527") != std::string::npos);
  env["HOSTNAME"] = "custom-host";
  d = Detect("auto", env);
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("HOSTNAME=\"custom-host\" is not <job name>-2") !=
                    std::string::npos);
  env["JOB_COMPLETION_INDEX"] = "two";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (kubernetes): JOB_COMPLETION_INDEX=\"two\" is not a "
                     "completion index (has \"t\" at index 0 where a digit was expected); "
                     "expected a non-negative integer");
  env["JOB_COMPLETION_INDEX"] = "2 ";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "JOB_COMPLETION_INDEX=\"2 \" is not a completion index (has \" \" at index 1");
  env = KubernetesIndexedJob();
  env["KDIST_K8S_SUBDOMAIN"] = "bad_svc";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (kubernetes): HOSTNAME=\"train-2\" and "
                     "KDIST_K8S_SUBDOMAIN=\"bad_svc\" give the coordinator "
                     "\"train-0.bad_svc\", which is not a valid host name (dot-separated labels");
}

TEST(Detectors, NamedDetectorThatFindsNothing) {
  KDIST_EXPECT_ERROR(DetectCluster("slurm", Torchrun()), StatusCode::kNotFound,
                     "the slurm detector found none of its variables (SLURM_JOB_ID)");
}

TEST(Detectors, DetectAllReportsEveryDetector) {
  std::vector<DetectorReport> reports =
      DetectAll(Merged(Merged(SlurmStep(), Torchrun()), {{"TF_CONFIG", "{"}}));
  ASSERT_EQ(reports.size(), Detectors().size());
  EXPECT_EQ(reports[0].name, std::string("torchrun"));
  EXPECT_TRUE(reports[0].status.ok() && reports[0].detection.has_value());
  EXPECT_TRUE(reports[1].status.ok() && !reports[1].detection.has_value());
  EXPECT_TRUE(reports[3].detection.has_value());  // slurm
  EXPECT_FALSE(reports[4].status.ok());           // tf_config
  EXPECT_FALSE(reports[5].detection.has_value());
}

}  // namespace
}  // namespace kdist

namespace kdist {
namespace {

// Any values in a scheduler's variables: a detection or an error, never a crash.
TEST(Detectors, SurviveArbitraryValues) {
  static constexpr char kAlphabet[] = "0123456789[],-()x.:;/{}\"\\ tcp";
  testing::RandomText random(0x94d049bb133111ebull, std::string_view(kAlphabet, sizeof kAlphabet - 1), 10);
  std::vector<std::string_view> names;
  for (const Detector& d : Detectors()) {
    for (std::string_view v : d.variables) names.push_back(v);
  }
  for (int round = 0; round < 5000; ++round) {
    Environment env;
    const size_t count = 1 + random.Bits() % 6;
    for (size_t i = 0; i < count; ++i) {
      std::string value = random.Next(16);
      env[std::string(names[random.Bits() % names.size()])] = std::move(value);
    }
    for (const DetectorReport& report : DetectAll(env)) {
      EXPECT_TRUE(report.status.ok() || report.status.code() == StatusCode::kInvalidArgument);
    }
  }
}

// A JobSet of 2 jobs x 3 pods: pod 1 of job 1 (completion index 1) is process 4.
Environment JobSetPod() {
  return {{"JOB_COMPLETION_INDEX", "1"},
          {"HOSTNAME", "js-slice-1-1"},
          {"KDIST_K8S_SUBDOMAIN", "js"},
          {"KDIST_K8S_JOB_GLOBAL_INDEX", "1"},
          {"KDIST_K8S_JOB_COMPLETIONS", "3"},
          {"KDIST_K8S_GLOBAL_REPLICAS", "2"}};
}

TEST(Detectors, KubernetesJobSetGlobalIdFromJobIndexAndCompletionIndex) {
  Detection d = Detect("auto", JobSetPod());
  EXPECT_EQ(d.detector, std::string("kubernetes"));
  EXPECT_EQ(Text(d.process_id), std::string("4"));
  EXPECT_EQ(Vars(d.process_id),
                  std::string("KDIST_K8S_JOB_GLOBAL_INDEX, KDIST_K8S_JOB_COMPLETIONS, "
                              "JOB_COMPLETION_INDEX"));
  EXPECT_EQ(Text(d.num_processes), std::string("6"));
  EXPECT_EQ(Vars(d.num_processes),
                  std::string("KDIST_K8S_GLOBAL_REPLICAS, KDIST_K8S_JOB_COMPLETIONS"));
  // Pod 0 of this job is not the job's coordinator: nothing is derived from the host name.
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("<jobset>-<first replicated job>-0-0") !=
                    std::string::npos);

  // Every pod of the JobSet gets a distinct id in [0, 6).
  std::vector<std::string> ids;
  for (int job = 0; job < 2; ++job) {
    for (int pod = 0; pod < 3; ++pod) {
      Environment env = JobSetPod();
      env["KDIST_K8S_JOB_GLOBAL_INDEX"] = std::to_string(job);
      env["JOB_COMPLETION_INDEX"] = std::to_string(pod);
      ids.push_back(Text(Detect("auto", env).process_id));
    }
  }
  EXPECT_EQ(Join(ids, ","), std::string("0,1,2,3,4,5"));
}

TEST(Detectors, KubernetesJobSetWithoutTheNumberOfJobsSaysWhatToSet) {
  Environment env = JobSetPod();
  env.erase("KDIST_K8S_GLOBAL_REPLICAS");
  Detection d = Detect("auto", env);
  EXPECT_EQ(Text(d.process_id), std::string("4"));
  EXPECT_FALSE(d.num_processes.has_value());
  EXPECT_TRUE(d.num_processes_hint.find("jobset.sigs.k8s.io/global-replicas") !=
                    std::string::npos);
}

TEST(Detectors, KubernetesJobSetPartialOrMalformed) {
  Environment env = JobSetPod();
  env.erase("KDIST_K8S_JOB_COMPLETIONS");
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_COMPLETIONS is not");
  env = JobSetPod();
  env["JOB_COMPLETION_INDEX"] = "3";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "JOB_COMPLETION_INDEX=\"3\" is not below KDIST_K8S_JOB_COMPLETIONS=\"3\"");
  env = JobSetPod();
  env["KDIST_K8S_JOB_GLOBAL_INDEX"] = "2";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_GLOBAL_INDEX=\"2\" is not below KDIST_K8S_GLOBAL_REPLICAS=\"2\"");
  env = JobSetPod();
  env["KDIST_K8S_JOB_COMPLETIONS"] = "0";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_COMPLETIONS=\"0\" is not a number of pods per job");
  env = JobSetPod();
  env["KDIST_K8S_JOB_GLOBAL_INDEX"] = "x";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_GLOBAL_INDEX=\"x\" is not a job index");
}

}  // namespace
}  // namespace kdist
