#include "config/job_settings.h"

#include <csignal>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

// The settings of `request` and `env` that do not describe the cluster, as
// Resolve() fills them first (no cluster needed).
Result<ClusterSpec> Settings(const Request& request, const Environment& env) {
  ClusterSpec spec;
  KDIST_RETURN_IF_ERROR(ResolveJobSettings(request, env, spec));
  return spec;
}

TEST(JobSettings, StopSignalsDefaultToSigtermAndTakeTheArgumentThenTheVariable) {
  auto spec = Settings(Request{}, {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->stop_signals.value, std::vector<int>({SIGTERM}));
  EXPECT_EQ(spec->stop_signals.source, std::string("default"));
  Environment env{{"KDIST_STOP_SIGNALS", "SIGTERM,SIGUSR1"}};
  spec = Settings(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->stop_signals.value, std::vector<int>({SIGTERM, SIGUSR1}));
  EXPECT_EQ(spec->stop_signals.source, std::string("KDIST_STOP_SIGNALS"));
  Request request;
  request.stop_signals = "none";
  spec = Settings(request, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_TRUE(spec->stop_signals.value.empty());
  EXPECT_EQ(spec->stop_signals.source, std::string("argument"));
}

TEST(JobSettings, BadStopSignalsNameTheValueAndItsSource) {
  Environment env{{"KDIST_STOP_SIGNALS", "SIGTERM,SIGKILL"}};
  KDIST_EXPECT_ERROR(Settings(Request{}, env),
                     StatusCode::kInvalidArgument,
                     "KDIST_STOP_SIGNALS=\"SIGTERM,SIGKILL\" (from the environment): entry "
                     "\"SIGKILL\" cannot be caught");
}

TEST(JobSettings, StallTimeoutIsOffByDefaultAndTakesSecondsOrOff) {
  auto spec = Settings(Request{}, {});
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->stall_timeout.value.has_value());
  EXPECT_EQ(spec->stall_timeout.source, std::string("default"));
  Environment env{{"KDIST_STALL_TIMEOUT", "2.5"}};
  spec = Settings(Request{}, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->stall_timeout.value, std::optional<Nanos>(std::chrono::milliseconds(2500)));
  EXPECT_EQ(spec->stall_timeout.source, std::string("KDIST_STALL_TIMEOUT"));
  Request request;
  request.stall_timeout = "off";
  spec = Settings(request, env);
  KDIST_ASSERT_OK(spec);
  EXPECT_FALSE(spec->stall_timeout.value.has_value());
  EXPECT_EQ(spec->stall_timeout.source, std::string("argument"));
  KDIST_EXPECT_ERROR(Settings(Request{}, {{"KDIST_STALL_TIMEOUT", "soon"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_STALL_TIMEOUT=\"soon\" (from the environment)");
}

TEST(JobSettings, UnreachableTimeoutIsTwentySecondsByDefault) {
  auto spec = Settings(Request{}, {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->unreachable_timeout.value, std::chrono::seconds(20));
  EXPECT_EQ(spec->unreachable_timeout.source, std::string("default"));
}

TEST(JobSettings, UnreachableTimeoutTakesSecondsWithItsSource) {
  auto spec = Settings(Request{}, {{"KDIST_UNREACHABLE_TIMEOUT", "6.5"}});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->unreachable_timeout.value, std::chrono::milliseconds(6500));
  EXPECT_EQ(spec->unreachable_timeout.source, std::string("KDIST_UNREACHABLE_TIMEOUT"));
  Request request;
  request.unreachable_timeout = "8";
  spec = Settings(request, {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->unreachable_timeout.source, std::string("argument"));
}

TEST(JobSettings, UnreachableTimeoutFollowsAShortHeartbeatByDefault) {
  auto spec = Settings(Request{}, {{"KDIST_HEARTBEAT_TIMEOUT", "12"}});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->unreachable_timeout.value, std::chrono::seconds(6));
  EXPECT_EQ(spec->unreachable_timeout.source,
            std::string("default (half of heartbeat_timeout)"));
}

TEST(JobSettings, UnreachableTimeoutBelowOneSecondIsRefused) {
  KDIST_EXPECT_ERROR(
      Settings(Request{}, {{"KDIST_UNREACHABLE_TIMEOUT", "0.5"}}),
      StatusCode::kInvalidArgument,
      "KDIST_UNREACHABLE_TIMEOUT=\"0.5\" (from the environment): expected a number of seconds "
      "of at least 1");
}

TEST(JobSettings, UnreachableTimeoutThatCannotWinAgainstTheHeartbeatIsRefused) {
  KDIST_EXPECT_ERROR(
      Settings(Request{},
              {{"KDIST_UNREACHABLE_TIMEOUT", "30"}, {"KDIST_HEARTBEAT_TIMEOUT", "30"}}),
      StatusCode::kInvalidArgument,
      "KDIST_UNREACHABLE_TIMEOUT=\"30\" (from the environment): is not below "
      "heartbeat_timeout (30 s, from KDIST_HEARTBEAT_TIMEOUT): JAX's heartbeat would end the "
      "job first");
}

TEST(JobSettings, TimeoutPreflightAndDetection) {
  Request request;
  request.timeout = "0";
  KDIST_EXPECT_ERROR(Settings(request, {}), StatusCode::kInvalidArgument,
                     "timeout=0 (argument): expected a positive number of seconds");
  request.timeout = std::nullopt;
  KDIST_EXPECT_ERROR(Settings(request, {{"KDIST_INIT_TIMEOUT", "soon"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_INIT_TIMEOUT=\"soon\" (from the environment): is not a number");
  KDIST_EXPECT_ERROR(Settings(request, {{"KDIST_PREFLIGHT", "perhaps"}}),
                     StatusCode::kInvalidArgument, "KDIST_PREFLIGHT=\"perhaps\"");
  request.cluster_detection = "slurmm";
  KDIST_EXPECT_ERROR(Settings(request, {}), StatusCode::kInvalidArgument,
                     "cluster_detection=\"slurmm\" (argument): is not a known cluster detection "
                     "mode; expected one of \"auto\", \"none\"");
  request.cluster_detection = "NONE";
  auto spec = Settings(request, {});
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->cluster_detection.value, std::string("none"));
}

// KDIST_ROLL_CALL and KDIST_ROLL_CALL_TOKEN, with their former names
// KDIST_PREFLIGHT and KDIST_RENDEZVOUS_TOKEN still honoured.
TEST(JobSettings, RollCallSwitchUnderEitherName) {
  const Request request;
  auto by_default = Settings(request, {});
  KDIST_ASSERT_OK(by_default);
  EXPECT_TRUE(by_default->preflight.value);
  EXPECT_EQ(by_default->preflight.source, std::string("default"));
  auto new_name = Settings(request, {{"KDIST_ROLL_CALL", "off"}});
  KDIST_ASSERT_OK(new_name);
  EXPECT_FALSE(new_name->preflight.value);
  EXPECT_EQ(new_name->preflight.source, std::string("KDIST_ROLL_CALL"));
  auto old_name = Settings(request, {{"KDIST_PREFLIGHT", "0"}});
  KDIST_ASSERT_OK(old_name);
  EXPECT_FALSE(old_name->preflight.value);
  EXPECT_EQ(old_name->preflight.source, std::string("KDIST_PREFLIGHT"));
  // Both, agreeing (even in other words): the new name is the one used.
  auto both = Settings(request, {{"KDIST_ROLL_CALL", "no"}, {"KDIST_PREFLIGHT", "false"}});
  KDIST_ASSERT_OK(both);
  EXPECT_FALSE(both->preflight.value);
  EXPECT_EQ(both->preflight.source, std::string("KDIST_ROLL_CALL"));
  // The argument wins over either.
  Request off = request;
  off.preflight = "false";
  auto argument = Settings(off, {{"KDIST_ROLL_CALL", "on"}});
  KDIST_ASSERT_OK(argument);
  EXPECT_FALSE(argument->preflight.value);
  EXPECT_EQ(argument->preflight.source, std::string("argument"));
}

TEST(JobSettings, RollCallSwitchNamesDisagreeingOrBadValues) {
  const Request request;
  KDIST_EXPECT_ERROR(Settings(request, {{"KDIST_ROLL_CALL", "on"}, {"KDIST_PREFLIGHT", "off"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_ROLL_CALL=\"on\" and KDIST_PREFLIGHT=\"off\" (from the environment) "
                     "disagree; KDIST_PREFLIGHT is the former name of KDIST_ROLL_CALL: set only "
                     "KDIST_ROLL_CALL");
  KDIST_EXPECT_ERROR(Settings(request, {{"KDIST_ROLL_CALL", "perhaps"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_ROLL_CALL=\"perhaps\" (from the environment): ");
  KDIST_EXPECT_ERROR(Settings(request, {{"KDIST_PREFLIGHT", "perhaps"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_PREFLIGHT=\"perhaps\" (from the environment): ");
  KDIST_EXPECT_ERROR(Settings(request, {{"KDIST_ROLL_CALL", "on"}, {"KDIST_PREFLIGHT", "perhaps"}}),
                     StatusCode::kInvalidArgument, "KDIST_PREFLIGHT=\"perhaps\"");
}

TEST(JobSettings, RollCallTokenUnderEitherName) {
  const Request request;
  auto new_name = Settings(request, {{"KDIST_ROLL_CALL_TOKEN", "s3cret"}});
  KDIST_ASSERT_OK(new_name);
  EXPECT_EQ(new_name->rendezvous_token.value, std::string("s3cret"));
  EXPECT_EQ(new_name->rendezvous_token.source, std::string("KDIST_ROLL_CALL_TOKEN"));
  auto old_name = Settings(request, {{"KDIST_RENDEZVOUS_TOKEN", "s3cret"}});
  KDIST_ASSERT_OK(old_name);
  EXPECT_EQ(old_name->rendezvous_token.source, std::string("KDIST_RENDEZVOUS_TOKEN"));
  auto both = Settings(request,
                      {{"KDIST_ROLL_CALL_TOKEN", "s3cret"}, {"KDIST_RENDEZVOUS_TOKEN", "s3cret"}});
  KDIST_ASSERT_OK(both);
  EXPECT_EQ(both->rendezvous_token.value, std::string("s3cret"));
  EXPECT_EQ(both->rendezvous_token.source, std::string("KDIST_ROLL_CALL_TOKEN"));
  // Empty means unset, under either name.
  auto empty_new = Settings(request,
                           {{"KDIST_ROLL_CALL_TOKEN", ""}, {"KDIST_RENDEZVOUS_TOKEN", "old"}});
  KDIST_ASSERT_OK(empty_new);
  EXPECT_EQ(empty_new->rendezvous_token.value, std::string("old"));
  EXPECT_EQ(empty_new->rendezvous_token.source, std::string("KDIST_RENDEZVOUS_TOKEN"));
  // Too long: named by the variable used, by length, never printed.
  const std::string secret(2000, 'z');
  auto long_token = Settings(request, {{"KDIST_ROLL_CALL_TOKEN", secret}});
  KDIST_EXPECT_ERROR(long_token, StatusCode::kInvalidArgument,
                     "KDIST_ROLL_CALL_TOKEN (from the environment) is 2000 bytes long");
  EXPECT_TRUE(long_token.status().message().find("zzzz") == std::string::npos);
}

TEST(JobSettings, RollCallTokenNamesDisagreeWithoutShowingEither) {
  auto both = Settings(Request{},
                      {{"KDIST_ROLL_CALL_TOKEN", "alpha-secret"},
                       {"KDIST_RENDEZVOUS_TOKEN", "beta-secret"}});
  KDIST_EXPECT_ERROR(both, StatusCode::kInvalidArgument,
                     "KDIST_ROLL_CALL_TOKEN and KDIST_RENDEZVOUS_TOKEN (from the environment) "
                     "hold different tokens (not shown: a token is a secret); "
                     "KDIST_RENDEZVOUS_TOKEN is the former name of KDIST_ROLL_CALL_TOKEN: set "
                     "only KDIST_ROLL_CALL_TOKEN");
  EXPECT_TRUE(both.status().message().find("alpha") == std::string::npos);
  EXPECT_TRUE(both.status().message().find("beta") == std::string::npos);
}

}  // namespace
}  // namespace kdist
