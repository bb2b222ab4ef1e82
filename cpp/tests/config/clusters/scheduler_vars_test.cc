#include "config/clusters/scheduler_vars.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(SchedulerVars, ShownListedAndCopied) {
  EXPECT_EQ(Shown("RANK", "3"), std::string("RANK=\"3\""));
  EXPECT_EQ(Listed({}), std::string());
  EXPECT_EQ(Listed({"A"}), std::string("A"));
  EXPECT_EQ(Listed({"A", "B"}), std::string("A and B"));
  EXPECT_EQ(Listed({"A", "B", "C"}), std::string("A, B and C"));
  const DetectedValue v = Copy("RANK", "3");
  EXPECT_EQ(v.text, std::string("3"));
  EXPECT_EQ(v.variables, std::string("RANK"));
  EXPECT_EQ(v.shown, std::string("RANK=\"3\""));
}

TEST(SchedulerVars, MalformedAndIncompleteNameTheDetectorAndVariables) {
  KDIST_EXPECT_ERROR(Malformed("slurm", "SLURM_JOB_ID", "x", "is not a job id"),
                     StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): SLURM_JOB_ID=\"x\" is not a job id");
  const Environment env = {{"A", "1"}, {"C", "3"}};
  KDIST_EXPECT_ERROR(Incomplete("test", env, {"A", "B", "C", "D"}, "Set them all. "),
                     StatusCode::kInvalidArgument,
                     "scheduler detection (test): A=\"1\" and C=\"3\" are set but B and D are "
                     "not. Set them all. Otherwise configure the job explicitly");
  EXPECT_TRUE(HasAll(env, {"A", "C"}));
  EXPECT_FALSE(HasAll(env, {"A", "B"}));
}

TEST(SchedulerVars, PortOverrideReplacesTheDerivedPortKdistsFirst) {
  PortChoice port{61440, "SLURM_JOB_ID"};
  std::string shown = "X=\"1\"";
  Result<bool> applied = ApplyPortOverride("slurm", {}, port, &shown);
  KDIST_ASSERT_OK(applied);
  EXPECT_FALSE(*applied);
  EXPECT_EQ(port.port, uint16_t{61440});
  EXPECT_EQ(port.variable, std::string("SLURM_JOB_ID"));
  EXPECT_EQ(shown, std::string("X=\"1\""));

  const Environment both = {{"KDIST_COORDINATOR_PORT", "01234"}, {"JAX_COORDINATOR_PORT", "999"}};
  applied = ApplyPortOverride("slurm", both, port, &shown);
  KDIST_ASSERT_OK(applied);
  EXPECT_TRUE(*applied);
  EXPECT_EQ(port.port, uint16_t{1234});
  EXPECT_EQ(port.variable, std::string("KDIST_COORDINATOR_PORT"));
  EXPECT_EQ(shown, std::string("X=\"1\", KDIST_COORDINATOR_PORT=\"1234\""));

  PortChoice jax{55527, ""};
  applied = ApplyPortOverride("kubernetes", {{"JAX_COORDINATOR_PORT", "999"}}, jax, nullptr);
  KDIST_ASSERT_OK(applied);
  EXPECT_EQ(jax.port, uint16_t{999});
  EXPECT_EQ(jax.variable, std::string("JAX_COORDINATOR_PORT"));
}

TEST(SchedulerVars, MalformedPortOverrideIsAnError) {
  PortChoice port{61440, "SLURM_JOB_ID"};
  KDIST_EXPECT_ERROR(ApplyPortOverride("slurm", {{"JAX_COORDINATOR_PORT", "http"}}, port, nullptr),
                     StatusCode::kInvalidArgument,
                     "scheduler detection (slurm): JAX_COORDINATOR_PORT=\"http\"");
  EXPECT_EQ(port.port, uint16_t{61440});
}

TEST(SchedulerVars, HostPortTakesNamesAndBracketedIpv6Only) {
  Result<Address> name = HostPort("node01", 5000);
  KDIST_ASSERT_OK(name);
  EXPECT_EQ(name->ToString(), std::string("node01:5000"));
  Result<Address> v6 = HostPort("[fe80::1]", 5000);
  KDIST_ASSERT_OK(v6);
  EXPECT_EQ(v6->ToString(), std::string("[fe80::1]:5000"));
  Result<Address> bare_v6 = HostPort("fe80::1", 5000);
  KDIST_ASSERT_OK(bare_v6);
  EXPECT_EQ(bare_v6->ToString(), std::string("[fe80::1]:5000"));
  KDIST_EXPECT_ERROR(HostPort("[node01]", 5000), StatusCode::kInvalidArgument,
                     "brackets around a host that is not an IPv6 address");
  EXPECT_FALSE(HostPort("", 5000).ok());
}

}  // namespace
}  // namespace kdist
