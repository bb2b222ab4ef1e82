#include "config/clusters/open_mpi.h"

#include "config/detectors.h"

#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(OpenMpi, OpenMpi4) {
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

TEST(OpenMpi, OpenMpi5CoordinatorOnMpirunsHostFromPmixNamespace) {
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

TEST(OpenMpi, OpenMpi5Rank0ElsewhereSaysWhatToSet) {
  Environment env = OpenMpi5();
  env["OMPI_COMM_WORLD_RANK"] = "0";
  env["PMIX_HOSTNAME"] = "node02";
  Detection d = Detect("auto", env);
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("rank 0 runs on PMIX_HOSTNAME=\"node02\", not on "
                                              "mpirun's host \"node01\"") != std::string::npos);
}

TEST(OpenMpi, OpenMpi5WithoutMpirunsNamespaceSaysWhatToSet) {
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

TEST(OpenMpi, OpenMpiPartialOrMalformed) {
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

}  // namespace
}  // namespace kdist
