#include "stop/stop_board.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(StopBoard, StepsGoOnUntilAStopIsAgreed) {
  StopBoard board;
  EXPECT_FALSE(board.armed());
  EXPECT_EQ(board.Report(0), StopBoard::Answer::kGoOn);
  EXPECT_TRUE(board.armed());
  EXPECT_EQ(board.Report(1), StopBoard::Answer::kGoOn);
  EXPECT_EQ(board.step(), int64_t{1});
  EXPECT_EQ(board.beats(), uint64_t{2});
}

TEST(StopBoard, ArmedIsTakenOnce) {
  StopBoard board;
  EXPECT_FALSE(board.TakeArmed());
  board.Beat();
  EXPECT_TRUE(board.TakeArmed());
  EXPECT_FALSE(board.TakeArmed());
}

TEST(StopBoard, TheNextStepWaitsWhileTheStopIsBeingAgreed) {
  StopBoard board;
  EXPECT_EQ(board.Report(7), StopBoard::Answer::kGoOn);
  EXPECT_EQ(board.BeginAgreement(), int64_t{7});
  EXPECT_EQ(board.Report(8), StopBoard::Answer::kWait);
  EXPECT_FALSE(board.WaitForDecision(milliseconds(1)));
  board.Decide(9);
  EXPECT_TRUE(board.WaitForDecision(milliseconds(1)));
  EXPECT_EQ(board.Report(8), StopBoard::Answer::kGoOn);
  EXPECT_EQ(board.Report(9), StopBoard::Answer::kStop);
  EXPECT_EQ(board.Report(10), StopBoard::Answer::kStop);  // stays True after the step
}

TEST(StopBoard, AWaiterWakesWhenTheChannelDecides) {
  StopBoard board;
  board.Report(3);
  board.BeginAgreement();
  ASSERT_EQ(board.Report(4), StopBoard::Answer::kWait);
  std::thread channel([&] {
    std::this_thread::sleep_for(milliseconds(20));
    board.Decide(4);
  });
  EXPECT_TRUE(board.WaitForDecision(std::chrono::seconds(10)));
  channel.join();
  EXPECT_EQ(board.Report(4), StopBoard::Answer::kStop);
}

TEST(StopBoard, NoProgramStepEverPassesTheAgreedStep) {
  // The program races ahead while the channel agrees: whatever the interleaving,
  // the step the channel reports plus one is never passed with kGoOn.
  for (int round = 0; round < 200; ++round) {
    StopBoard board;
    std::atomic<int64_t> reported{-2};
    std::thread channel([&] {
      std::this_thread::yield();
      reported = board.BeginAgreement();
      board.Decide(reported.load() + 1);
    });
    int64_t stopped_at = -1;
    for (int64_t step = 0; step < (int64_t{1} << 40) && stopped_at < 0; ++step) {
      StopBoard::Answer answer = board.Report(step);
      while (answer == StopBoard::Answer::kWait) {
        board.WaitForDecision(std::chrono::seconds(10));
        answer = board.Report(step);
      }
      if (answer == StopBoard::Answer::kStop) stopped_at = step;
    }
    channel.join();
    ASSERT_GE(stopped_at, 0);
    EXPECT_EQ(stopped_at, reported.load() + 1) << "round " << round;
  }
}

TEST(StopBoard, ASignalIsRecordedCountedAndWakesTheChannel) {
  StopBoard board;
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_NONBLOCK), 0);
  board.SetWakeFd(fds[1]);
  board.OnSignal(SIGTERM, seconds(100));
  board.OnSignal(SIGUSR1, seconds(102));
  char buffer[4];
  EXPECT_EQ(read(fds[0], buffer, sizeof buffer), 2);
  EXPECT_EQ(board.TakeSignal(), SIGTERM);
  EXPECT_EQ(board.TakeSignal(), 0);
  EXPECT_EQ(board.signals_received(), 2);
  board.OnSignal(SIGTERM, seconds(103));
  EXPECT_EQ(board.TakeSignal(), SIGTERM);  // a later one is taken again
  close(fds[0]);
  close(fds[1]);
}

TEST(StopBoard, ARepeatWithinTheWindowIsTheSameStop) {
  // Slurm's time limit: SIGTERM, SIGCONT, SIGTERM within milliseconds, from slurmstepd.
  StopBoard board;
  board.OnSignal(SIGTERM, seconds(50));
  board.OnSignal(SIGTERM, seconds(50) + milliseconds(3));
  board.OnSignal(SIGUSR1, seconds(50) + StopBoard::kRepeatWindow - milliseconds(1));
  EXPECT_EQ(board.signals_received(), 1);
  EXPECT_EQ(board.TakeSignal(), SIGTERM);
  // The window runs from the first signal: one a window after it is a second stop.
  board.OnSignal(SIGTERM, seconds(50) + StopBoard::kRepeatWindow);
  EXPECT_EQ(board.signals_received(), 2);
  // Any time base: the first signal's time may be 0 or negative.
  StopBoard other;
  other.OnSignal(SIGTERM, Nanos(0));
  other.OnSignal(SIGTERM, milliseconds(1));
  EXPECT_EQ(other.signals_received(), 1);
  other.OnSignal(SIGTERM, seconds(1));
  EXPECT_EQ(other.signals_received(), 2);
}

}  // namespace
}  // namespace kdist
