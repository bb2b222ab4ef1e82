#include "config/thrash_guard.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

TEST(ThrashGuard, DefaultsAreFourWithinTenMinutes) {
  Result<ThrashGuard> guard = ResolveThrashGuard(std::nullopt, std::nullopt, Environment{});
  KDIST_ASSERT_OK(guard);
  EXPECT_EQ(guard->max_reforms.value, 4);
  EXPECT_EQ(guard->reform_window.value, Nanos(seconds(600)));
  EXPECT_EQ(guard->max_reforms.source, "default");
  EXPECT_EQ(guard->reform_window.source, "default");
}

TEST(ThrashGuard, FlagsWinOverTheVariablesWhichWinOverTheDefaults) {
  const Environment env{{"KDIST_MAX_REFORMS", "7"}, {"KDIST_REFORM_WINDOW", "90"}};
  Result<ThrashGuard> from_env = ResolveThrashGuard(std::nullopt, std::nullopt, env);
  KDIST_ASSERT_OK(from_env);
  EXPECT_EQ(from_env->max_reforms.value, 7);
  EXPECT_EQ(from_env->max_reforms.source, "KDIST_MAX_REFORMS");
  EXPECT_EQ(from_env->reform_window.value, Nanos(seconds(90)));
  EXPECT_EQ(from_env->reform_window.source, "KDIST_REFORM_WINDOW");
  Result<ThrashGuard> flags = ResolveThrashGuard("0", "2.5", env);
  KDIST_ASSERT_OK(flags);
  EXPECT_EQ(flags->max_reforms.value, 0);
  EXPECT_EQ(flags->max_reforms.source, "--max-reforms");
  EXPECT_EQ(flags->reform_window.value, Nanos(std::chrono::milliseconds(2500)));
  EXPECT_EQ(flags->reform_window.source, "--reform-window");
}

TEST(ThrashGuard, ABadValueIsNamedWithWhatTheGuardDoes) {
  KDIST_EXPECT_ERROR(ResolveThrashGuard("-1", std::nullopt, Environment{}),
                     StatusCode::kInvalidArgument, "--max-reforms=-1 (argument)");
  KDIST_EXPECT_ERROR(ResolveThrashGuard("two", std::nullopt, Environment{}),
                     StatusCode::kInvalidArgument, "expected a whole number of re-forms");
  KDIST_EXPECT_ERROR(ResolveThrashGuard(std::nullopt, "0", Environment{}),
                     StatusCode::kInvalidArgument, "expected a number of seconds above 0");
  KDIST_EXPECT_ERROR(
      ResolveThrashGuard(std::nullopt, std::nullopt, Environment{{"KDIST_REFORM_WINDOW", "x"}}),
      StatusCode::kInvalidArgument, "KDIST_REFORM_WINDOW=\"x\" (from the environment)");
}

}  // namespace
}  // namespace kdist
