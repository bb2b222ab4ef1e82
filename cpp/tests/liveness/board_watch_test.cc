#include "liveness/board_watch.h"

#include <csignal>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BoardWatch, EachNewsIsToldOnce) {
  StopBoard board;
  StopOptions options;
  options.board = &board;
  BoardWatch watch(options);
  BoardNews news = watch.Tick(seconds(0));
  EXPECT_FALSE(news.armed);
  EXPECT_EQ(news.signal_number, 0);
  board.Report(0);
  board.OnSignal(SIGTERM, seconds(1));
  news = watch.Tick(seconds(1));
  EXPECT_TRUE(news.armed);
  EXPECT_EQ(news.signal_number, SIGTERM);
  EXPECT_FALSE(news.urgent);
  news = watch.Tick(seconds(2));
  EXPECT_FALSE(news.armed);
  EXPECT_EQ(news.signal_number, 0);
  board.OnSignal(SIGTERM, seconds(3));  // 2 s later: a second stop
  EXPECT_TRUE(watch.Tick(seconds(3)).urgent);
}

TEST(BoardWatch, AStallIsProgressMissingForTheTimeoutAfterTheFirst) {
  StopBoard board;
  StopOptions options;
  options.board = &board;
  options.stall_timeout = seconds(10);
  BoardWatch watch(options);
  EXPECT_FALSE(watch.Tick(seconds(0)).stalled);
  EXPECT_FALSE(watch.Tick(seconds(100)).stalled);  // never reported: never judged
  board.Report(4);
  EXPECT_FALSE(watch.Tick(seconds(101)).stalled);
  EXPECT_FALSE(watch.Tick(seconds(110)).stalled);
  board.Beat();  // a barrier is progress too
  EXPECT_FALSE(watch.Tick(seconds(111)).stalled);
  EXPECT_TRUE(watch.Tick(seconds(121)).stalled);
  EXPECT_FALSE(watch.Tick(seconds(200)).stalled);  // once
  const ProgressReport report = watch.Report(3, seconds(125));
  EXPECT_EQ(report.step, int64_t{4});
  EXPECT_EQ(report.idle, seconds(14));
  EXPECT_TRUE(report.armed);
}

TEST(BoardWatch, AReportCountsABeatSinceTheLastTick) {
  // A stall round's answer reads the board when it is asked, not as of the last tick.
  StopBoard board;
  StopOptions options;
  options.board = &board;
  options.stall_timeout = seconds(10);
  BoardWatch watch(options);
  board.Report(1);
  EXPECT_FALSE(watch.Tick(seconds(0)).stalled);
  board.Report(2);  // progress after the tick, before the question
  const ProgressReport report = watch.Report(0, seconds(30));
  EXPECT_EQ(report.step, int64_t{2});
  EXPECT_EQ(report.idle, seconds(0));
  EXPECT_EQ(watch.Report(0, seconds(33)).idle, seconds(3));
}

TEST(BoardWatch, WithoutABoardNothingHappens) {
  BoardWatch watch(StopOptions{});
  EXPECT_FALSE(watch.active());
  EXPECT_FALSE(watch.Tick(seconds(1)).armed);
}

}  // namespace
}  // namespace kdist
