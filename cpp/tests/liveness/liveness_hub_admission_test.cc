// Joining connections (liveness_hub_admission.cc): admitted after process 0
// finished, awaited for the join timeout only, told of a failure that ended the job.
#include "liveness/liveness_hub.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "testing/liveness_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Inbox;
using testing::Job;
using testing::JoinOf;
using testing::Member;
using testing::StartJob;

TEST(LivenessHub, AProcessJoiningAfterProcessZeroFinishedIsAdmittedAndAwaited) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 2, {}, /*joined=*/0));
  KDIST_EXPECT_OK(job.hub->Finish(true));
  std::vector<std::string> lines;
  KDIST_EXPECT_ERROR(
      job.hub->WaitAllDone(milliseconds(50), seconds(5),
                           [&](const std::string& l) { lines.push_back(l); }, nullptr),
      StatusCode::kDeadlineExceeded, "did not finish within");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], std::string("process 0 finished; waiting for processes that have not "
                                  "joined the liveness channel yet: [1]"));
  Inbox inbox;
  Result<std::unique_ptr<LivenessSpoke>> late = job.Join(1, inbox);
  KDIST_ASSERT_OK(late);
  KDIST_EXPECT_OK((*late)->Finish(true));
  Result<bool> done = job.hub->WaitAllDone(seconds(10), seconds(5), nullptr, nullptr);
  KDIST_ASSERT_OK(done);
  EXPECT_TRUE(*done);
}

TEST(LivenessHub, AProcessThatNeverJoinsHoldsTheEndOnlyForTheJoinTimeout) {
  Job job;
  LivenessOptions options;
  options.join_timeout = milliseconds(200);
  KDIST_ASSERT_OK(StartJob(job, 3, options, /*joined=*/1));
  KDIST_EXPECT_OK(job.spokes[0]->Finish(true));
  KDIST_EXPECT_OK(job.hub->Finish(true));  // process 2 never joins
  Result<bool> done = job.hub->WaitAllDone(seconds(30), seconds(5), nullptr, nullptr);
  KDIST_ASSERT_OK(done);
  EXPECT_TRUE(*done);
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  EXPECT_TRUE(job.inboxes[0]->notices[0].kind == LiveKind::kAllDone);
}

TEST(LivenessHub, AProcessJoiningAfterAFailureEndedTheJobHearsThatFailure) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3, {}, /*joined=*/0));
  KDIST_EXPECT_OK(job.hub->ReportFailure("kdist.initialize() failed: RuntimeError: no GPU"));
  Inbox inbox;
  KDIST_EXPECT_ERROR(
      job.Join(2, inbox), StatusCode::kUnavailable,
      "the job already ended (process 0 failed: kdist.initialize() failed: RuntimeError: no GPU)");
  ASSERT_TRUE(inbox.WaitFor(1));  // acted on, as any notice (policy "exit" leaves there)
  EXPECT_TRUE(inbox.notices[0].kind == LiveKind::kFailed);
  EXPECT_EQ(inbox.notices[0].process_id, int64_t{0});
  // A stranger (wrong nonce) learns nothing about the job.
  Inbox stranger;
  RealClock clock;
  KDIST_EXPECT_ERROR(LivenessSpoke::Join(job.at, JoinOf(1, "guess"), Member(0), job.options,
                                         StopOptions(), stranger.Handler(), clock),
                     StatusCode::kUnavailable, "refused this process (wrong nonce");
  EXPECT_FALSE(stranger.WaitFor(1, milliseconds(100)));
}

}  // namespace
}  // namespace kdist
