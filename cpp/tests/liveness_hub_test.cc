#include "liveness_hub.h"

#include <chrono>
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

TEST(LivenessHub, AFailureReachesEveryOtherProcess) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3));
  KDIST_EXPECT_OK(job.spokes[0]->ReportFailure("RuntimeError: injected failure"));
  ASSERT_TRUE(job.hub_inbox.WaitFor(1));
  ASSERT_TRUE(job.inboxes[1]->WaitFor(1));
  for (const LiveNotice& n : {job.hub_inbox.notices[0], job.inboxes[1]->notices[0]}) {
    EXPECT_TRUE(n.kind == LiveKind::kFailed);
    EXPECT_EQ(n.process_id, int64_t{1});
    EXPECT_EQ(n.host, std::string("node-1"));
    EXPECT_EQ(n.message, std::string("RuntimeError: injected failure"));
  }
  EXPECT_TRUE(job.inboxes[0]->notices.empty());  // not told about itself
}

TEST(LivenessHub, AClosedConnectionIsADeathAndProcessZerosFailureIsToldToAll) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3));
  job.spokes[1]->Stop();  // as the kernel closes a killed process's socket
  ASSERT_TRUE(job.hub_inbox.WaitFor(1));
  EXPECT_TRUE(job.hub_inbox.notices[0].kind == LiveKind::kDied);
  EXPECT_EQ(job.hub_inbox.notices[0].process_id, int64_t{2});
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  EXPECT_TRUE(job.inboxes[0]->notices[0].kind == LiveKind::kDied);

  Job second;
  KDIST_ASSERT_OK(StartJob(second, 2));
  KDIST_EXPECT_OK(second.hub->ReportFailure("KeyError: 'x'"));
  ASSERT_TRUE(second.inboxes[0]->WaitFor(1));
  EXPECT_EQ(second.inboxes[0]->notices[0].process_id, int64_t{0});
  second.hub->Stop();  // after a failure, process 0's close adds nothing the spoke acts on
}

TEST(LivenessHub, EveryoneFinishedEndsTheWait) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3));
  KDIST_EXPECT_OK(job.spokes[0]->Finish(/*barrier=*/true));
  KDIST_EXPECT_OK(job.hub->Finish(true));
  // Process 1's finish travels to the hub's thread: wait (bounded) until the
  // line names only process 2.
  const std::string want = "process 0 finished; waiting for process 2 on host node-2";
  std::vector<std::string> lines;
  for (int round = 0; round < 200 && (lines.empty() || lines.back() != want); ++round) {
    Result<bool> early = job.hub->WaitAllDone(
        milliseconds(20), seconds(5), [&](const std::string& l) { lines.push_back(l); }, nullptr);
    KDIST_EXPECT_ERROR(early, StatusCode::kDeadlineExceeded, "did not finish within");
  }
  ASSERT_TRUE(!lines.empty());
  EXPECT_EQ(lines.back(), want);
  KDIST_EXPECT_OK(job.spokes[1]->Finish(/*barrier=*/false));
  Result<bool> done = job.hub->WaitAllDone(seconds(10), seconds(5), nullptr, nullptr);
  KDIST_ASSERT_OK(done);
  EXPECT_FALSE(*done);
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  EXPECT_TRUE(job.inboxes[0]->notices[0].kind == LiveKind::kAllDone);
  job.hub->Stop();  // the end was announced: no death reported after it
  EXPECT_FALSE(job.inboxes[0]->WaitFor(2, milliseconds(300)));
}

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
                                         stranger.Handler(), clock),
                     StatusCode::kUnavailable, "refused this process (wrong nonce");
  EXPECT_FALSE(stranger.WaitFor(1, milliseconds(100)));
}

TEST(LivenessHub, ProcessZeroActsOnAFailureOnceTheProcessesStillJoiningHeardIt) {
  // Process 1 fails while process 2 is still joining (it joins while JAX starts):
  // process 0 (whose handler may end it) waits until process 2 has been told.
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3, {}, /*joined=*/1));
  KDIST_EXPECT_OK(job.spokes[0]->ReportFailure("RuntimeError: injected"));
  EXPECT_FALSE(job.hub_inbox.WaitFor(1, milliseconds(300)));  // deferred (bound: 2 s)
  Inbox two;
  KDIST_EXPECT_ERROR(job.Join(2, two), StatusCode::kUnavailable,
                     "process 1 failed: RuntimeError: injected");
  ASSERT_TRUE(job.hub_inbox.WaitFor(1));
  EXPECT_TRUE(job.hub_inbox.notices[0].kind == LiveKind::kFailed);
  EXPECT_EQ(job.hub_inbox.notices[0].process_id, int64_t{1});
}

TEST(LivenessHub, ProcessZeroActsOnAFailureAtTheJoinTimeoutWhenAProcessNeverJoins) {
  Job job;
  LivenessOptions options;
  options.join_timeout = milliseconds(200);
  KDIST_ASSERT_OK(StartJob(job, 3, options, /*joined=*/1));
  KDIST_EXPECT_OK(job.spokes[0]->ReportFailure("RuntimeError: injected"));
  ASSERT_TRUE(job.hub_inbox.WaitFor(1));  // process 2 never joins: acted on after 0.2 s
  EXPECT_TRUE(job.hub_inbox.notices[0].kind == LiveKind::kFailed);
}

}  // namespace
}  // namespace kdist
