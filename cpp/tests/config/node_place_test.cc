#include "config/node_place.h"

#include "config/resolve.h"
#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

Environment NodeJob() {
  return {{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "10.0.0.1:4000"},
          {"KERAS_DISTRIBUTION_NUM_PROCESSES", "6"},
          {"KERAS_DISTRIBUTION_PROCESS_ID", "4"},
          {"KDIST_NODE_RANK", "2"},
          {"KDIST_NUM_NODES", "3"},
          {"KDIST_LOCAL_PROCESS_ID", "0"},
          {"KDIST_JOB_ID", "train-7"}};
}

TEST(NodePlace, WhatTheAgentSetsIsShownWithItsVariable) {
  ClusterSpec spec;
  KDIST_ASSERT_OK(ResolveNodePlace(NodeJob(), spec));
  EXPECT_EQ(spec.node_rank.value, std::optional<int64_t>(2));
  EXPECT_EQ(spec.node_rank.source, "KDIST_NODE_RANK");
  EXPECT_EQ(spec.num_nodes.value, std::optional<int64_t>(3));
  EXPECT_EQ(spec.num_nodes.source, "KDIST_NUM_NODES");
  EXPECT_EQ(spec.local_process_id.value, std::optional<int64_t>(0));
  EXPECT_EQ(spec.local_process_id.source, "KDIST_LOCAL_PROCESS_ID");
  EXPECT_EQ(spec.job_id.value, "train-7");
  EXPECT_EQ(spec.job_id.source, "KDIST_JOB_ID");
}

TEST(NodePlace, NothingSetIsNothingFromDefault) {
  ClusterSpec spec;
  KDIST_ASSERT_OK(ResolveNodePlace({}, spec));
  EXPECT_EQ(spec.node_rank.value, std::nullopt);
  EXPECT_EQ(spec.node_rank.source, "default");
  EXPECT_EQ(spec.num_nodes.value, std::nullopt);
  EXPECT_EQ(spec.local_process_id.value, std::nullopt);
  EXPECT_EQ(spec.local_process_id.source, "default");
  EXPECT_EQ(spec.job_id.value, "");
  EXPECT_EQ(spec.job_id.source, "default");
}

TEST(NodePlace, ASchedulersLocalRankIsNotTheAgents) {
  // SLURM_LOCALID describes Slurm's layout (the detectors read it); only the agent's
  // variables say where a process sits among kdist's nodes.
  auto spec = Resolve(Request{}, testing::SlurmStep());
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->local_process_id.value, std::nullopt);
  EXPECT_EQ(spec->local_process_id.source, "default");
}

TEST(NodePlace, ABadValueIsNamedWithWhatWasExpected) {
  Environment env = NodeJob();
  env["KDIST_NODE_RANK"] = "two";
  ClusterSpec spec;
  KDIST_EXPECT_ERROR(ResolveNodePlace(env, spec), StatusCode::kInvalidArgument,
                     "KDIST_NODE_RANK=\"two\" (from the environment)");
  env = NodeJob();
  env["KDIST_NUM_NODES"] = "0";
  KDIST_EXPECT_ERROR(ResolveNodePlace(env, spec), StatusCode::kInvalidArgument,
                     "expected an integer of at least 1 (how many machines run the job");
  env = NodeJob();
  env["KDIST_NODE_RANK"] = "3";
  KDIST_EXPECT_ERROR(ResolveNodePlace(env, spec), StatusCode::kInvalidArgument,
                     "KDIST_NODE_RANK=\"3\" (from the environment) is not below "
                     "KDIST_NUM_NODES=\"3\"");
}

TEST(NodePlace, ResolveFillsItAndTheFingerprintIgnoresIt) {
  auto spec = Resolve(Request{}, NodeJob());
  KDIST_ASSERT_OK(spec);
  EXPECT_EQ(spec->node_rank.value, std::optional<int64_t>(2));
  Environment plain = NodeJob();
  for (const char* name :
       {"KDIST_NODE_RANK", "KDIST_NUM_NODES", "KDIST_LOCAL_PROCESS_ID", "KDIST_JOB_ID"}) {
    plain.erase(name);
  }
  EXPECT_EQ(spec->Fingerprint(), Resolve(Request{}, plain)->Fingerprint());
}

TEST(NodePlace, TheRunIdIsReadWithItsSourceOnlyWhenSet) {
  ClusterSpec spec;
  KDIST_ASSERT_OK(ResolveNodePlace({{"KDIST_RUN_ID", "f00d"}}, spec));
  EXPECT_EQ(spec.run_id.value, "f00d");
  EXPECT_EQ(spec.run_id.source, "KDIST_RUN_ID");
  ClusterSpec none;
  KDIST_ASSERT_OK(ResolveNodePlace({}, none));
  EXPECT_EQ(none.run_id.value, "");
  EXPECT_EQ(none.run_id.source, "default");
}

}  // namespace
}  // namespace kdist
