#include "config/raw_setting.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(Pick, TheArgumentWinsOverTheVariable) {
  const Environment env{{"KDIST_INIT_TIMEOUT", "20"}};
  const std::optional<Raw> raw = Pick(std::string("30"), "timeout", env, "KDIST_INIT_TIMEOUT");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->text, "30");
  EXPECT_EQ(raw->source, "argument");
  EXPECT_EQ(raw->label, "timeout");
}

TEST(Pick, TheVariableWhenNoArgumentElseNothing) {
  const Environment env{{"KDIST_INIT_TIMEOUT", "20"}};
  const std::optional<Raw> raw = Pick(std::nullopt, "timeout", env, "KDIST_INIT_TIMEOUT");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->text, "20");
  EXPECT_EQ(raw->source, "KDIST_INIT_TIMEOUT");
  EXPECT_EQ(raw->label, "KDIST_INIT_TIMEOUT");
  EXPECT_FALSE(Pick(std::nullopt, "timeout", {}, "KDIST_INIT_TIMEOUT").has_value());
}

TEST(PickWithJax, JaxsVariableComesLast) {
  const Environment jax_only{{"JAX_NUM_PROCESSES", "4"}};
  std::optional<Raw> raw = PickWithJax(std::nullopt, "num_processes", jax_only,
                                       "KERAS_DISTRIBUTION_NUM_PROCESSES", "JAX_NUM_PROCESSES");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->source, "JAX_NUM_PROCESSES");
  const Environment both{{"JAX_NUM_PROCESSES", "4"}, {"KERAS_DISTRIBUTION_NUM_PROCESSES", "2"}};
  raw = PickWithJax(std::nullopt, "num_processes", both, "KERAS_DISTRIBUTION_NUM_PROCESSES",
                    "JAX_NUM_PROCESSES");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->text, "2");
  EXPECT_EQ(raw->source, "KERAS_DISTRIBUTION_NUM_PROCESSES");
}

TEST(Describe, SaysTheValueAndWhereItCameFrom) {
  const Environment env{{"KERAS_DISTRIBUTION_NUM_PROCESSES", "two"}};
  EXPECT_EQ(Describe(*Pick(std::string("0"), "num_processes", {}, "X", false)),
            "num_processes=0 (argument)");
  EXPECT_EQ(Describe(*Pick(std::string("a"), "consistency", {}, "X")),
            "consistency=\"a\" (argument)");
  EXPECT_EQ(
      Describe(*Pick(std::nullopt, "num_processes", env, "KERAS_DISTRIBUTION_NUM_PROCESSES")),
      "KERAS_DISTRIBUTION_NUM_PROCESSES=\"two\" (from the environment)");
}

TEST(FromDetection, NamesTheDetectorAndItsVariables) {
  EXPECT_FALSE(FromDetection(std::nullopt, "slurm").has_value());
  const DetectedValue id{"x", "SLURM_PROCID", "SLURM_PROCID=\"x\""};
  const std::optional<Raw> raw = FromDetection(id, "slurm");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->text, "x");
  EXPECT_EQ(raw->source, "slurm (SLURM_PROCID)");
  EXPECT_EQ(Describe(*raw), "SLURM_PROCID=\"x\" (detected: slurm)");
}

TEST(Invalid, IsTheDescriptionAndTheReason) {
  const Status status = Invalid(*Pick(std::string("-1"), "timeout", {}, "X", false), "too small");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "timeout=-1 (argument): too small");
}

TEST(Hint, IsEmptyOrASeparatedClause) {
  EXPECT_EQ(Hint(""), "");
  EXPECT_EQ(Hint("SLURM_PROCID is unset"), "; SLURM_PROCID is unset");
}

}  // namespace
}  // namespace kdist
