#include "stop/stop_book.h"

#include <csignal>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

StopRequest Signal(int64_t from, int signal_number = SIGTERM, bool urgent = false) {
  StopRequest request;
  request.process_id = from;
  request.host = "node-" + std::to_string(from);
  request.pid = 100 + from;
  request.signal_number = signal_number;
  request.urgent = urgent;
  return request;
}

TEST(StopBook, NobodyAsksShouldStopSoTheJobEndsAtOnce) {
  StopBook book;
  EXPECT_EQ(book.OnRequest(Signal(1), {0, 1, 2}), StopBook::Action::kStopNow);
  EXPECT_TRUE(book.ended_now());
  EXPECT_EQ(book.request()->process_id, int64_t{1});
  EXPECT_EQ(book.OnRequest(Signal(2), {0, 1, 2}), StopBook::Action::kNone);
}

TEST(StopBook, TheStopStepIsOnePastTheLargestReported) {
  StopBook book;
  book.OnArmed(0);
  book.OnArmed(1);
  EXPECT_EQ(book.OnRequest(Signal(1), {0, 1, 2}), StopBook::Action::kQuery);
  EXPECT_EQ(book.OnStep(0, 41), StopBook::Action::kNone);
  EXPECT_EQ(book.OnStep(2, -1), StopBook::Action::kNone);
  EXPECT_EQ(book.OnStep(1, 42), StopBook::Action::kDecided);
  EXPECT_EQ(book.stop_step(), int64_t{43});
  EXPECT_EQ(book.OnStep(1, 44), StopBook::Action::kNone);  // answered already
}

TEST(StopBook, ARequesterThatAsksShouldStopIsArmedBeforeItsArmedMessageArrives) {
  // The request overtook the requester's "armed" (sent on its channel's next tick):
  // the request says so itself, and the stop is agreed, not immediate.
  StopBook book;
  StopRequest request = Signal(1, 0);
  request.reason = "time limit";
  request.armed = true;
  EXPECT_EQ(book.OnRequest(request, {0, 1}), StopBook::Action::kQuery);
  EXPECT_TRUE(book.any_armed());
  EXPECT_EQ(book.OnStep(0, 0), StopBook::Action::kNone);
  EXPECT_EQ(book.OnStep(1, 1), StopBook::Action::kDecided);
  EXPECT_EQ(book.stop_step(), int64_t{2});
}

TEST(StopBook, ARequesterThatNeverAskedShouldStopAloneStillEndsTheJobAtOnce) {
  StopBook book;
  StopRequest request = Signal(1, 0);
  request.armed = false;
  EXPECT_EQ(book.OnRequest(request, {0, 1}), StopBook::Action::kStopNow);
}

TEST(StopBook, AProcessThatLeavesIsNotAwaited) {
  StopBook book;
  book.OnArmed(0);
  EXPECT_EQ(book.OnRequest(Signal(0), {0, 1}), StopBook::Action::kQuery);
  EXPECT_EQ(book.OnStep(0, 5), StopBook::Action::kNone);
  EXPECT_EQ(book.OnGone(1), StopBook::Action::kDecided);
  EXPECT_EQ(book.stop_step(), int64_t{6});
}

TEST(StopBook, OnlyTheFirstRequestCountsButASecondSignalEndsTheJobNow) {
  StopBook book;
  book.OnArmed(0);
  EXPECT_EQ(book.OnRequest(Signal(1, SIGUSR1), {0, 1}), StopBook::Action::kQuery);
  EXPECT_EQ(book.OnRequest(Signal(0), {0, 1}), StopBook::Action::kNone);
  EXPECT_EQ(book.request()->signal_number, SIGUSR1);
  EXPECT_EQ(book.OnRequest(Signal(1, SIGTERM, /*urgent=*/true), {0, 1}),
            StopBook::Action::kStopNow);
  EXPECT_EQ(book.OnStep(0, 1), StopBook::Action::kNone);  // nothing left to agree
}

}  // namespace
}  // namespace kdist
