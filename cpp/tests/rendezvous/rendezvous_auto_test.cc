#include "rendezvous/rendezvous_auto.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(AutoRendezvous, SlurmsFirstHostOnAPortBelowTheCoordinatorsRange) {
  const Environment env = {{"SLURM_JOB_ID", "4100"}, {"SLURM_JOB_NODELIST", "node-[3-4]"}};
  Result<Address> address = AutoRendezvous(env);
  KDIST_ASSERT_OK(address);
  EXPECT_EQ(address->host, "node-3");
  EXPECT_EQ(address->port, kRendezvousPortBase + 4100 % 4096);
  EXPECT_LT(address->port, kDerivedPortBase);  // never JAX's coordinator port
}

TEST(AutoRendezvous, TheSameJobGivesTheSameAddressOnEveryNode) {
  const Environment a = {{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_NODELIST", "n1,n2"},
                         {"SLURMD_NODENAME", "n1"}};
  const Environment b = {{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_NODELIST", "n1,n2"},
                         {"SLURMD_NODENAME", "n2"}};
  EXPECT_EQ(AutoRendezvous(a)->ToString(), AutoRendezvous(b)->ToString());
}

TEST(AutoRendezvous, SlurmNodelistIsTheOlderName) {
  const Environment env = {{"SLURM_JOB_ID", "1"}, {"SLURM_NODELIST", "solo"}};
  KDIST_ASSERT_OK(AutoRendezvous(env));
  EXPECT_EQ(AutoRendezvous(env)->host, "solo");
}

TEST(AutoRendezvous, WithoutSlurmItSaysWhatToGive) {
  KDIST_EXPECT_ERROR(AutoRendezvous({}), StatusCode::kNotFound, "give --rendezvous HOST:PORT");
}

TEST(AutoRendezvous, AMalformedJobIdIsNamed) {
  const Environment env = {{"SLURM_JOB_ID", "x1"}, {"SLURM_JOB_NODELIST", "n1"}};
  KDIST_EXPECT_ERROR(AutoRendezvous(env), StatusCode::kInvalidArgument, "SLURM_JOB_ID=");
}

}  // namespace
}  // namespace kdist
