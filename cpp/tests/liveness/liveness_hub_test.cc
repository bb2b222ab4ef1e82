// The hub's calls (liveness_hub.cc): failures told to every process, process
// 0's own failure and finish, the wait for the end, and the clock it reads.
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

TEST(LivenessHub, ADeferredDeathIsHandedToProcessZeroOnceWhileAnotherThreadAsksToStop) {
  // Process 0 acts on a death only once every process heard it (it leaves
  // last), from whichever thread delivers next: its channel's, or one asking
  // to stop. The two must not both hand it on (each would print the line).
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3));
  job.spokes[1]->Stop();  // process 2 dies while process 1 is still connected
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  std::atomic<bool> asking{true};
  std::thread asker([&] {
    for (int i = 0; i < 100000 && asking.load(); ++i) {
      (void)job.hub->RequestStop("asked meanwhile");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  job.spokes[0]->Stop();  // process 1 leaves: the death is handed on now
  ASSERT_TRUE(job.hub_inbox.WaitFor(1));
  EXPECT_FALSE(job.hub_inbox.WaitFor(2, milliseconds(500)));
  asking = false;
  asker.join();
  std::lock_guard<std::mutex> lock(job.hub_inbox.mutex);
  ASSERT_EQ(job.hub_inbox.notices.size(), size_t{1});
  EXPECT_TRUE(job.hub_inbox.notices[0].kind == LiveKind::kDied);
  EXPECT_EQ(job.hub_inbox.notices[0].process_id, int64_t{2});
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

TEST(LivenessHub, ItsDeadlinesAreOnTheClockItIsGiven) {
  // Process 2 never joins: the job's end waits join_timeout for it after process
  // 0's finish, on the hub's clock. A clock that does not move holds the end; an
  // Advance past the join timeout releases it.
  testing::ManualClock clock;
  Job job;
  job.clock = &clock;
  LivenessOptions options;
  options.join_timeout = milliseconds(200);
  KDIST_ASSERT_OK(StartJob(job, 3, options, /*joined=*/1));
  KDIST_EXPECT_OK(job.spokes[0]->Finish(true));
  KDIST_EXPECT_OK(job.hub->Finish(true));
  EXPECT_FALSE(job.inboxes[0]->WaitFor(1, milliseconds(600)));  // 3 join timeouts, for real
  clock.Advance(milliseconds(250));
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  EXPECT_TRUE(job.inboxes[0]->notices[0].kind == LiveKind::kAllDone);
}

}  // namespace
}  // namespace kdist
