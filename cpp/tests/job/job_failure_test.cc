#include "job/job_failure.h"

#include <gtest/gtest.h>

namespace kdist {
namespace {

JobFailure Raised(int64_t process_id, const std::string& what) {
  JobFailure f;
  f.kind = FailureKind::kProcess;
  f.process_id = process_id;
  f.host = "box";
  f.pid = 900 + process_id;
  f.exit_status = 1;
  f.ended_how = "exit 1";
  f.what = what;
  return f;
}

TEST(JobFailure, AProcessFailureNamesWhereAndWhat) {
  EXPECT_EQ(Raised(1, "RuntimeError: boom").Text(),
            "process 1 (host box, pid 901): RuntimeError: boom");
  EXPECT_EQ(Raised(1, "RuntimeError: boom").Record(),
            "failed (exit 1): process 1 (host box, pid 901): RuntimeError: boom");
  JobFailure on_node = Raised(3, "KeyError: 'x'");
  on_node.node = "b";
  EXPECT_EQ(on_node.Where(), "process 3 (node b, host box, pid 903)");
  EXPECT_EQ(on_node.Summary(), "failed (exit 1)");
}

TEST(JobFailure, AStopNamesTheStepAndWhoAsked) {
  JobFailure stop;
  stop.kind = FailureKind::kStopped;
  stop.process_id = 1;
  stop.host = "h";
  stop.pid = 9;
  stop.exit_status = 143;
  stop.step = 42;
  stop.what = "SIGTERM";
  EXPECT_EQ(stop.Text(), "every process stopped at step 42: process 1 (host h, pid 9) asked to stop (SIGTERM)");
  EXPECT_EQ(stop.Summary(), "stopped at step 42");
  EXPECT_EQ(stop.Record(), stop.Text());
  stop.step = -1;
  EXPECT_EQ(stop.Text(), "the job stopped at once: process 1 (host h, pid 9) asked to stop (SIGTERM)");
}

TEST(JobFailure, ANodeWhoseProcessesEndedSaysItsStatus) {
  JobFailure ended;
  ended.kind = FailureKind::kNodeEnded;
  ended.node = "c";
  ended.exit_status = 3;
  EXPECT_EQ(ended.Text(), "node c's processes ended with status 3");
  EXPECT_EQ(ended.Record(), "failed (status 3): node c's processes ended with status 3");
}

TEST(JobFailure, TheSamePointIgnoresHostAndPid) {
  JobFailure first = Raised(1, "RuntimeError: boom");
  JobFailure again = Raised(1, "RuntimeError: boom");
  again.host = "other";
  again.pid = 12345;
  EXPECT_TRUE(first.SamePoint(again));
  EXPECT_FALSE(first.SamePoint(Raised(2, "RuntimeError: boom")));
  EXPECT_FALSE(first.SamePoint(Raised(1, "RuntimeError: boom (attempt 1)")));
  JobFailure other_status = first;
  other_status.exit_status = 3;
  EXPECT_FALSE(first.SamePoint(other_status));
  JobFailure stopped = first;
  stopped.kind = FailureKind::kStopped;
  EXPECT_FALSE(first.SamePoint(stopped));
}

}  // namespace
}  // namespace kdist
