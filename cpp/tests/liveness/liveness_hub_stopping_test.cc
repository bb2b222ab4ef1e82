// Stopping together (liveness_hub_stopping.cc): one stop step for every process,
// a stop at once, barriers, stalls.
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

// request_stop on the first step after the first should_stop, before either
// channel's thread has ticked (no sleep between them; the hub's clock is manual, so
// no deadline passes): the stop is agreed on a step, never "nobody asks should_stop".
// 50 jobs each, for a request in process 1 and in process 0.
void ExpectAnAgreedStopForARequestBeforeAnyTick(int64_t requester) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    testing::ManualClock clock;
    Job job;
    job.clock = &clock;
    job.with_boards = true;
    KDIST_ASSERT_OK(StartJob(job, 2));
    ASSERT_EQ(job.boards[0]->Report(0), StopBoard::Answer::kGoOn);
    ASSERT_EQ(job.boards[1]->Report(0), StopBoard::Answer::kGoOn);
    KDIST_ASSERT_OK(requester == 0 ? job.hub->RequestStop("time limit")
                                   : job.spokes[0]->RequestStop("time limit"));
    ASSERT_TRUE(WaitForKind(job.hub_inbox, LiveKind::kStopAt));
    EXPECT_EQ(Find(job.hub_inbox, LiveKind::kStopNow), nullptr);
    const LiveNotice* at = Find(job.hub_inbox, LiveKind::kStopAt);
    EXPECT_EQ(at->process_id, requester);
    EXPECT_EQ(at->step, int64_t{1});  // both answered step 0
    ASSERT_TRUE(WaitForKind(*job.inboxes[0], LiveKind::kStopAt));
    EXPECT_EQ(job.boards[0]->Report(1), StopBoard::Answer::kStop);
    EXPECT_EQ(job.boards[1]->Report(1), StopBoard::Answer::kStop);
  }
}

TEST(LivenessHubStop, ARequestInProcess1BeforeAnyTickIsAgreedOnAStep) {
  ExpectAnAgreedStopForARequestBeforeAnyTick(1);
}

TEST(LivenessHubStop, ARequestInProcess0BeforeAnyTickIsAgreedOnAStep) {
  ExpectAnAgreedStopForARequestBeforeAnyTick(0);
}

// The case the request's own armed state is for: only the requester (process 1) has asked
// should_stop; process 0 has not reached its first should_stop yet, so its own board cannot
// speak for the job. The request overtakes process 1's "armed" (sent at its channel's next
// tick): still one agreed step (process 1 answered step 0, process 0 none: step 1), never
// "nobody asks should_stop". 50 jobs, no sleep between arming and the request.
TEST(LivenessHubStop, ARequestFromTheOnlyArmedProcessBeforeAnyTickIsAgreedOnAStep) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    testing::ManualClock clock;
    Job job;
    job.clock = &clock;
    job.with_boards = true;
    KDIST_ASSERT_OK(StartJob(job, 2));
    ASSERT_EQ(job.boards[1]->Report(0), StopBoard::Answer::kGoOn);  // process 1 alone armed
    KDIST_ASSERT_OK(job.spokes[0]->RequestStop("time limit"));
    // Process 1 hears the decision, whichever it is (process 0's own "now" is said later).
    Inbox& one = *job.inboxes[0];
    {
      std::unique_lock<std::mutex> lock(one.mutex);
      ASSERT_TRUE(one.changed.wait_for(lock, seconds(10), [&] {
        for (const LiveNotice& n : one.notices) {
          if (n.kind == LiveKind::kStopAt || n.kind == LiveKind::kStopNow) return true;
        }
        return false;
      }));
    }
    const LiveNotice* now = Find(one, LiveKind::kStopNow);
    ASSERT_EQ(now, nullptr) << "expected one agreed step, received: " << DescribeStop(*now, 1);
    const LiveNotice* at = Find(one, LiveKind::kStopAt);
    ASSERT_NE(at, nullptr);
    EXPECT_EQ(at->process_id, int64_t{1});
    EXPECT_EQ(at->step, int64_t{1});
    ASSERT_TRUE(WaitForKind(job.hub_inbox, LiveKind::kStopAt));
    EXPECT_EQ(job.boards[1]->Report(1), StopBoard::Answer::kStop);
    // Process 0 reaches its first should_stop afterwards and stops at the same step.
    EXPECT_EQ(job.boards[0]->Report(0), StopBoard::Answer::kGoOn);
    EXPECT_EQ(job.boards[0]->Report(1), StopBoard::Answer::kStop);
  }
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
