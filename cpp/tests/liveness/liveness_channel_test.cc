// This process's end of the channel (liveness_channel.cc): what a process does when the
// job's end reaches it (its line, its verdict record, its exit status), driven with a
// fake exit and a manual clock, over real hub and spoke connections on loopback.
#include "liveness/liveness_channel.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "testing/liveness_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The hooks of a process that never really leaves: what it said, flushed and exited with.
struct FakeExit {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> said;
  std::vector<int> exits;
  int flushes = 0;

  ChannelHooks Hooks(Clock* clock) {
    ChannelHooks hooks;
    hooks.clock = clock;
    hooks.flush = [this](Nanos) {
      std::lock_guard<std::mutex> lock(mutex);
      ++flushes;
    };
    hooks.say = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      said.push_back(line);
      changed.notify_all();
    };
    hooks.exit = [this](int status) {
      std::lock_guard<std::mutex> lock(mutex);
      exits.push_back(status);
      changed.notify_all();
    };
    return hooks;
  }
  bool WaitForExit(Nanos timeout = seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return !exits.empty(); });
  }
  bool WaitForLine(Nanos timeout = seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return !said.empty(); });
  }
};

std::string TempPath(const char* name) {
  return "/tmp/kdist-channel-test-" + std::to_string(getpid()) + "-" + name + ".jsonl";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ClusterSpec SpecOf(int64_t n, int64_t id, PeerFailurePolicy policy, std::string verdict_file) {
  ClusterSpec spec;
  spec.num_processes.value = n;
  spec.process_id.value = id;
  spec.on_peer_failure.value = policy;
  spec.unreachable_timeout.value = seconds(20);
  spec.verdict_file.value = std::move(verdict_file);
  return spec;
}

// Process 0's channel and process 1's, joined on loopback, each with its fake exit.
struct TwoProcesses {
  testing::ManualClock clock;
  FakeExit zero_exit, one_exit;
  StopBoard zero_board, one_board;
  std::string zero_file = TempPath("zero"), one_file = TempPath("one");
  std::unique_ptr<LivenessChannel> zero, one;

  Status Start(PeerFailurePolicy policy = PeerFailurePolicy::kExit) {
    unlink(zero_file.c_str());
    unlink(one_file.c_str());
    KDIST_ASSIGN_OR_RETURN(zero, LivenessChannel::StartHub(SpecOf(2, 0, policy, zero_file),
                                                           &zero_board, /*alone=*/false,
                                                           zero_exit.Hooks(&clock)));
    KDIST_ASSIGN_OR_RETURN(const Endpoint hub, EndpointFromLiteral("127.0.0.1", zero->port()));
    KDIST_ASSIGN_OR_RETURN(
        one, LivenessChannel::Join(SpecOf(2, 1, policy, one_file), &one_board, hub,
                                   zero->nonce(), zero->self(), seconds(10),
                                   one_exit.Hooks(&clock)));
    return Status::Ok();
  }
  ~TwoProcesses() {
    one.reset();
    zero.reset();
    unlink(zero_file.c_str());
    unlink(one_file.c_str());
  }
};

TEST(LivenessChannel, AHubDrawsItsOwnNonceAndListens) {
  testing::ManualClock clock;
  FakeExit fake;
  const ClusterSpec spec = SpecOf(2, 0, PeerFailurePolicy::kExit, "");
  Result<std::unique_ptr<LivenessChannel>> first =
      LivenessChannel::StartHub(spec, nullptr, false, fake.Hooks(&clock));
  Result<std::unique_ptr<LivenessChannel>> second =
      LivenessChannel::StartHub(spec, nullptr, false, fake.Hooks(&clock));
  KDIST_ASSERT_OK(first);
  KDIST_ASSERT_OK(second);
  EXPECT_EQ((*first)->nonce().size(), 32u);
  EXPECT_NE((*first)->nonce(), (*second)->nonce());
  EXPECT_GT((*first)->port(), 0);
  Result<std::unique_ptr<LivenessChannel>> alone =
      LivenessChannel::StartHub(spec, nullptr, /*alone=*/true, fake.Hooks(&clock));
  KDIST_ASSERT_OK(alone);
  EXPECT_EQ((*alone)->port(), 0);
  EXPECT_EQ((*alone)->nonce(), "");
}

TEST(LivenessChannel, APeersFailureEndsThisProcessWithItsLineItsRecordAndStatus1) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  const std::string own = job.one->ReportFailure("RuntimeError: boom");
  EXPECT_NE(own.find("failed: RuntimeError: boom"), std::string::npos) << own;
  job.one.reset();  // the failed process leaves; process 0 leaves last, after it
  ASSERT_TRUE(job.zero_exit.WaitForExit());
  std::lock_guard<std::mutex> lock(job.zero_exit.mutex);
  EXPECT_EQ(job.zero_exit.exits, std::vector<int>{1});
  EXPECT_EQ(job.zero_exit.flushes, 1);  // before the line
  ASSERT_EQ(job.zero_exit.said.size(), 1u);
  EXPECT_NE(job.zero_exit.said[0].find("process 1 (host "), std::string::npos);
  EXPECT_NE(job.zero_exit.said[0].find("failed first: RuntimeError: boom"), std::string::npos);
  EXPECT_TRUE(job.zero->JobEnded());
  const std::string zero_record = ReadAll(job.zero_file);
  EXPECT_NE(zero_record.find("{\"event\": \"peer_failed\", \"process_id\": 1"), std::string::npos)
      << zero_record;
  EXPECT_NE(zero_record.find("\"exit_status\": 1, \"reporter\": 0"), std::string::npos);
  // The failed process recorded its own failure, and was not told to leave by anyone.
  EXPECT_NE(ReadAll(job.one_file).find("{\"event\": \"failed\", \"process_id\": 1"),
            std::string::npos);
}

TEST(LivenessChannel, UnderIgnoreAPeersFailureIsSaidOnceAndTheProcessGoesOn) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start(PeerFailurePolicy::kIgnore));
  job.one->ReportFailure("ValueError: bad shape");
  job.one.reset();
  ASSERT_TRUE(job.zero_exit.WaitForLine());
  EXPECT_FALSE(job.zero_exit.WaitForExit(milliseconds(300)));
  ASSERT_EQ(job.zero->Reported().size(), 1u);
  EXPECT_NE(ReadAll(job.zero_file).find("\"exit_status\": -1"), std::string::npos);
  // Its finish: JAX's barrier cannot complete (the failed process never reaches it).
  Result<FinishOutcome> finished = job.zero->Finish(true, seconds(5), WaitOptions{});
  KDIST_ASSERT_OK(finished);
  EXPECT_EQ(*finished, FinishOutcome::kNoBarrier);
}

TEST(LivenessChannel, AStopNobodyAgreesOnEndsEveryProcessWith143AndItsRecord) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  KDIST_ASSERT_OK(job.one->RequestStop("time limit"));  // nobody asks should_stop
  ASSERT_TRUE(job.one_exit.WaitForExit());
  // Process 0 leaves last: once process 1 is gone, or once the bound passes on its clock.
  EXPECT_FALSE(job.zero_exit.WaitForExit(milliseconds(300)));
  job.clock.Advance(kMaxExitDelay);
  ASSERT_TRUE(job.zero_exit.WaitForExit());
  for (FakeExit* fake : {&job.zero_exit, &job.one_exit}) {
    std::lock_guard<std::mutex> lock(fake->mutex);
    EXPECT_EQ(fake->exits, std::vector<int>{128 + SIGTERM});
  }
  EXPECT_NE(ReadAll(job.zero_file).find("{\"event\": \"stop_now\", \"process_id\": 1"),
            std::string::npos);
  EXPECT_NE(ReadAll(job.one_file).find("request_stop(\\\"time limit\\\")"), std::string::npos);
}

TEST(LivenessChannel, AnAgreedStopIsSaidAndRecordedWithItsStepAndNobodyLeavesYet) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  LiveNotice at;
  at.kind = LiveKind::kStopAt;
  at.process_id = 1;
  at.host = "node-1";
  at.pid = 4001;
  at.step = 42;
  at.signal_number = SIGTERM;
  job.zero->Act(at);
  std::lock_guard<std::mutex> lock(job.zero_exit.mutex);
  EXPECT_TRUE(job.zero_exit.exits.empty());
  ASSERT_EQ(job.zero_exit.said.size(), 1u);
  EXPECT_NE(job.zero_exit.said[0].find("every process stops at step 42"), std::string::npos);
  EXPECT_NE(ReadAll(job.zero_file).find("\"event\": \"stop_at\", \"process_id\": 1, \"host\": "
                                        "\"node-1\", \"pid\": 4001, \"message\": \"SIGTERM\", "
                                        "\"step\": 42, \"exit_status\": -1"),
            std::string::npos)
      << ReadAll(job.zero_file);
}

TEST(LivenessChannel, TheJobsEndIsSaidOnceThoughTwoNoticesBringIt) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  LiveNotice died;
  died.kind = LiveKind::kDied;
  died.process_id = 1;
  died.message = "its liveness connection closed without a finish message";
  LiveNotice unreachable = died;
  unreachable.kind = LiveKind::kUnreachable;
  unreachable.millis = 20000;
  job.zero->Act(died);
  job.zero->Act(unreachable);
  std::lock_guard<std::mutex> lock(job.zero_exit.mutex);
  EXPECT_EQ(job.zero_exit.exits, std::vector<int>{1});
  EXPECT_EQ(job.zero_exit.said.size(), 1u);
}

TEST(LivenessChannel, AnUnreachableProcessIsRecordedAsUnreachable) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  LiveNotice lost;
  lost.kind = LiveKind::kUnreachable;
  lost.process_id = 1;
  lost.host = "node-1";
  lost.millis = 20000;
  lost.address = "10.0.0.3";
  lost.since_unix_millis = 1796328067000;
  job.zero->Act(lost);
  EXPECT_NE(ReadAll(job.zero_file).find("{\"event\": \"unreachable\", \"process_id\": 1"),
            std::string::npos)
      << ReadAll(job.zero_file);
}

TEST(LivenessChannel, EveryProcessFinishingWithTheBarrierLetsProcess0Leave) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  Result<FinishOutcome> one = job.one->Finish(true, seconds(5), WaitOptions{});
  KDIST_ASSERT_OK(one);
  EXPECT_EQ(*one, FinishOutcome::kBarrier);
  Result<FinishOutcome> zero = job.zero->Finish(true, seconds(5), WaitOptions{});
  KDIST_ASSERT_OK(zero);
  EXPECT_EQ(*zero, FinishOutcome::kBarrier);
  std::lock_guard<std::mutex> lock(job.zero_exit.mutex);
  EXPECT_TRUE(job.zero_exit.exits.empty());
}

TEST(LivenessChannel, AProcessLeavingWithoutTheBarrierEndsTheOthersWithStatus0) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  std::thread zero([&] {
    Result<FinishOutcome> outcome = job.zero->Finish(true, seconds(10), WaitOptions{});
    ASSERT_TRUE(outcome.ok());
    EXPECT_EQ(*outcome, FinishOutcome::kNoBarrier);
  });
  Result<FinishOutcome> one = job.one->Finish(false, seconds(5), WaitOptions{});  // os._exit(0)
  KDIST_ASSERT_OK(one);
  ASSERT_TRUE(job.one_exit.WaitForExit());  // every process finished: it leaves with 0
  {
    std::lock_guard<std::mutex> lock(job.one_exit.mutex);
    EXPECT_EQ(job.one_exit.exits, std::vector<int>{0});
  }
  job.one.reset();  // its connection closes: process 0 leaves last
  zero.join();
}

TEST(LivenessChannel, Process0sFinishAfterAFailureSaysItIsBeingEnded) {
  TwoProcesses job;
  KDIST_ASSERT_OK(job.Start());
  job.one->ReportFailure("RuntimeError: boom");
  job.one.reset();
  ASSERT_TRUE(job.zero_exit.WaitForExit());
  Result<FinishOutcome> finished = job.zero->Finish(true, seconds(5), WaitOptions{});
  KDIST_ASSERT_OK(finished);
  EXPECT_EQ(*finished, FinishOutcome::kEnding);
}

TEST(LivenessChannel, Process0WaitsForTheOthersAtMostItsTimeout) {
  FakeExit fake;
  Result<std::unique_ptr<LivenessChannel>> zero = LivenessChannel::StartHub(
      SpecOf(2, 0, PeerFailurePolicy::kExit, ""), nullptr, false, fake.Hooks(nullptr));
  KDIST_ASSERT_OK(zero);
  WaitOptions wait;
  std::vector<std::string> progress;
  wait.progress = [&](const std::string& line) { progress.push_back(line); };
  wait.progress_interval = milliseconds(50);
  Result<FinishOutcome> finished = (*zero)->Finish(true, milliseconds(200), wait);
  KDIST_EXPECT_ERROR(finished.status(), StatusCode::kDeadlineExceeded, "did not finish within");
  ASSERT_FALSE(progress.empty());
  EXPECT_NE(progress[0].find("have not joined the liveness channel yet: [1]"), std::string::npos)
      << progress[0];
}

}  // namespace
}  // namespace kdist
