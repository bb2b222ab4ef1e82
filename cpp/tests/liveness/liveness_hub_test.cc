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

// --- stopping together ---------------------------------------------------------------


// A program that reports its steps until its board says stop (or `max_steps`).
struct Program {
  explicit Program(StopBoard* board, int64_t start = 0) : board(board), step(start) {}
  void Run(int64_t max_steps = 200000) {
    thread = std::thread([this, max_steps] {
      for (int64_t i = 0; i < max_steps && stopped_at < 0; ++i, ++step) {
        StopBoard::Answer answer = board->Report(step);
        while (answer == StopBoard::Answer::kWait) {
          board->WaitForDecision(seconds(10));
          answer = board->Report(step);
        }
        if (answer == StopBoard::Answer::kStop) stopped_at = step;
        std::this_thread::sleep_for(milliseconds(1));
      }
    });
  }
  void Join() { thread.join(); }
  StopBoard* board;
  int64_t step;
  std::atomic<int64_t> stopped_at{-1};
  std::thread thread;
};

const LiveNotice* Find(Inbox& inbox, LiveKind kind) {
  std::lock_guard<std::mutex> lock(inbox.mutex);
  for (const LiveNotice& n : inbox.notices) {
    if (n.kind == kind) return &n;
  }
  return nullptr;
}

bool WaitForKind(Inbox& inbox, LiveKind kind, Nanos timeout = seconds(10)) {
  std::unique_lock<std::mutex> lock(inbox.mutex);
  return inbox.changed.wait_for(lock, timeout, [&] {
    for (const LiveNotice& n : inbox.notices) {
      if (n.kind == kind) return true;
    }
    return false;
  });
}

TEST(LivenessHubStop, ASignalInOneProcessStopsEveryProcessAtOneStep) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 3));
  std::vector<std::unique_ptr<Program>> programs;
  for (int id = 0; id < 3; ++id) {
    programs.push_back(std::make_unique<Program>(job.boards[id].get(), id == 2 ? -3 : 0));
  }
  for (auto& p : programs) p->Run();
  std::this_thread::sleep_for(milliseconds(300));  // every process armed (board ticks)
  job.boards[1]->OnSignal(SIGTERM, seconds(0));
  for (auto& p : programs) p->Join();
  ASSERT_GE(programs[0]->stopped_at.load(), 0);
  EXPECT_EQ(programs[0]->stopped_at.load(), programs[1]->stopped_at.load());
  EXPECT_EQ(programs[1]->stopped_at.load(), programs[2]->stopped_at.load());  // one behind: too
  for (Inbox* inbox : {&job.hub_inbox, job.inboxes[0].get(), job.inboxes[1].get()}) {
    ASSERT_TRUE(WaitForKind(*inbox, LiveKind::kStopAt));
    const LiveNotice* at = Find(*inbox, LiveKind::kStopAt);
    EXPECT_EQ(at->process_id, int64_t{1});
    EXPECT_EQ(at->signal_number, int64_t{SIGTERM});
    EXPECT_EQ(at->step, programs[0]->stopped_at.load());
  }
}

TEST(LivenessHubStop, WhenNobodyAsksTheJobStopsNow) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 3));
  job.boards[2]->OnSignal(SIGUSR1, seconds(0));
  for (Inbox* inbox : {&job.hub_inbox, job.inboxes[0].get(), job.inboxes[1].get()}) {
    ASSERT_TRUE(WaitForKind(*inbox, LiveKind::kStopNow));
    const LiveNotice* now = Find(*inbox, LiveKind::kStopNow);
    EXPECT_EQ(now->process_id, int64_t{2});
    EXPECT_EQ(now->host, std::string("node-2"));
    EXPECT_EQ(now->signal_number, int64_t{SIGUSR1});
    EXPECT_EQ(StopExitStatus(*now), 128 + SIGUSR1);
  }
}

TEST(LivenessHubStop, ARequestFromCodeIsNamedWithItsReason) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 2));
  Program zero(job.boards[0].get()), one(job.boards[1].get());
  zero.Run();
  one.Run();
  std::this_thread::sleep_for(milliseconds(300));
  KDIST_EXPECT_OK(job.spokes[0]->RequestStop("time limit"));
  zero.Join();
  one.Join();
  EXPECT_EQ(zero.stopped_at.load(), one.stopped_at.load());
  ASSERT_TRUE(WaitForKind(job.hub_inbox, LiveKind::kStopAt));
  const LiveNotice* at = Find(job.hub_inbox, LiveKind::kStopAt);
  EXPECT_EQ(DescribeStop(*at, 0),
            "kdist: process 1 (host node-1, pid 4001) asked to stop (request_stop(\"time "
            "limit\")); every process stops at step " +
                std::to_string(at->step));
}

TEST(LivenessHubStop, ASecondSignalEndsTheJobNow) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 2));
  job.boards[1]->Beat();  // process 1 asks, process 0 never reaches the step
  std::this_thread::sleep_for(milliseconds(300));
  job.boards[1]->OnSignal(SIGTERM, seconds(10));
  ASSERT_TRUE(WaitForKind(job.hub_inbox, LiveKind::kStopAt));
  job.boards[1]->OnSignal(SIGTERM, seconds(12));  // the board's times: 2 s later
  ASSERT_TRUE(WaitForKind(job.hub_inbox, LiveKind::kStopNow));
  EXPECT_EQ(Find(job.hub_inbox, LiveKind::kStopNow)->code, int64_t{1});
}

TEST(LivenessHubBarrier, ReleasedWhenEveryoneArrives) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 3));
  std::vector<std::thread> threads;
  std::vector<Status> results(3);
  threads.emplace_back([&] { results[0] = job.hub->Barrier("save", 0, seconds(10), nullptr); });
  for (int id = 1; id < 3; ++id) {
    threads.emplace_back([&, id] {
      std::this_thread::sleep_for(milliseconds(50 * id));
      results[id] = job.spokes[id - 1]->Barrier("save", 0, seconds(10), nullptr);
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) KDIST_EXPECT_OK(s);
}

TEST(LivenessHubBarrier, ATimeoutNamesWhoDidNotArriveInEveryWaitingProcess) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 3));
  Status zero, one;
  std::thread a([&] { zero = job.hub->Barrier("save", 0, milliseconds(300), nullptr); });
  std::thread b([&] { one = job.spokes[0]->Barrier("save", 0, seconds(30), nullptr); });
  a.join();
  b.join();
  for (const Status& s : {zero, one}) {
    KDIST_EXPECT_ERROR(s, StatusCode::kDeadlineExceeded,
                       "barrier \"save\" timed out after 0.3 s: process 2 on host node-2 did not "
                       "arrive; processes [0-1] waited");
  }
}

TEST(LivenessHubBarrier, DifferentNamesAreAnErrorNamingBoth) {
  Job job;
  job.with_boards = true;
  KDIST_ASSERT_OK(StartJob(job, 2));
  Status zero, one;
  std::thread a([&] { zero = job.hub->Barrier("save", 0, seconds(10), nullptr); });
  std::thread b([&] { one = job.spokes[0]->Barrier("eval", 0, seconds(10), nullptr); });
  a.join();
  b.join();
  for (const Status& s : {zero, one}) {
    KDIST_EXPECT_ERROR(s, StatusCode::kFailedPrecondition,
                       "process 1 at \"eval\"; process 0 at \"save\"");
  }
}

TEST(LivenessHubStall, AStuckProcessIsNamedWithTheStepsOfTheOthers) {
  Job job;
  job.with_boards = true;
  job.stop.stall_timeout = milliseconds(400);
  job.stop.answer_timeout = seconds(2);
  KDIST_ASSERT_OK(StartJob(job, 3));
  job.boards[1]->Report(7);  // process 1 reports step 7, then nothing
  std::atomic<bool> done{false};
  std::thread others([&] {
    while (!done) {  // processes 0 and 2 keep reporting step 8 (waiting in step 8's work)
      job.boards[0]->Report(8);
      job.boards[2]->Report(8);
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  const bool stalled = WaitForKind(job.hub_inbox, LiveKind::kJobStalled);
  done = true;
  others.join();
  ASSERT_TRUE(stalled);
  const LiveNotice* notice = Find(job.hub_inbox, LiveKind::kJobStalled);
  EXPECT_NE(notice->message.find("process 1 (host node-1, pid 4001) made no progress for"),
            std::string::npos)
      << notice->message;
  EXPECT_NE(notice->message.find("at step 7; processes [0, 2] reached step 8"),
            std::string::npos)
      << notice->message;
  // The notice is about the stuck process (its record names it).
  EXPECT_EQ(notice->process_id, 1);
  EXPECT_EQ(notice->host, "node-1");
  EXPECT_EQ(notice->pid, 4001);
  ASSERT_TRUE(WaitForKind(*job.inboxes[0], LiveKind::kJobStalled));
  const LiveNotice* told = Find(*job.inboxes[0], LiveKind::kJobStalled);
  EXPECT_EQ(told->process_id, 1);  // as the other processes hear it
}

TEST(LivenessHubStall, AProcessThatNeverReportsIsNeverJudged) {
  Job job;
  job.with_boards = true;
  job.stop.stall_timeout = milliseconds(200);
  KDIST_ASSERT_OK(StartJob(job, 2));
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_EQ(Find(job.hub_inbox, LiveKind::kJobStalled), nullptr);
}

}  // namespace
}  // namespace kdist
