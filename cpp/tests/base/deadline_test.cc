#include "base/deadline.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t Ns(Nanos value) { return value.count(); }

TEST(Deadline, CountsFromItsStartOnTheClocksTimeBase) {
  FakeClock clock(seconds(1000));
  const Deadline deadline = Deadline::StartingNow(clock, seconds(300));
  EXPECT_EQ(Ns(deadline.start()), Ns(seconds(1000)));
  EXPECT_EQ(Ns(deadline.budget()), Ns(seconds(300)));
  EXPECT_EQ(Ns(deadline.end()), Ns(seconds(1300)));
  EXPECT_EQ(Ns(deadline.Elapsed(clock)), int64_t{0});
  EXPECT_EQ(Ns(deadline.Remaining(clock)), Ns(seconds(300)));
  clock.Advance(seconds(12));
  EXPECT_EQ(Ns(deadline.Elapsed(clock)), Ns(seconds(12)));
  EXPECT_EQ(Ns(deadline.Remaining(clock)), Ns(seconds(288)));
  EXPECT_FALSE(deadline.Expired(clock));
}

TEST(Deadline, TimeSpentBeforeItIsAskedCounts) {
  // Made when a start began, asked 0.5 s later by its first wait.
  FakeClock clock(seconds(1000));
  const Deadline deadline(seconds(1000) - milliseconds(500), seconds(3));
  EXPECT_EQ(Ns(deadline.Remaining(clock)), Ns(milliseconds(2500)));
  EXPECT_EQ(deadline.Progress(clock), std::string("0.5 s of 3 s"));
}

TEST(Deadline, RemainingStopsAtZeroOnceItPassed) {
  FakeClock clock;
  const Deadline deadline = Deadline::StartingNow(clock, seconds(3));
  clock.Advance(seconds(3));
  EXPECT_TRUE(deadline.Expired(clock));
  EXPECT_EQ(Ns(deadline.Remaining(clock)), int64_t{0});
  clock.Advance(seconds(10));
  EXPECT_EQ(Ns(deadline.Remaining(clock)), int64_t{0});
  EXPECT_EQ(Ns(deadline.Elapsed(clock)), Ns(seconds(13)));
  EXPECT_EQ(deadline.Progress(clock), std::string("13 s of 3 s"));
}

TEST(Deadline, ElapsedIsZeroBeforeTheStart) {
  FakeClock clock(seconds(5));
  const Deadline deadline(seconds(10), seconds(3));
  EXPECT_EQ(Ns(deadline.Elapsed(clock)), int64_t{0});
  EXPECT_EQ(Ns(deadline.Remaining(clock)), Ns(seconds(8)));
}

TEST(Deadline, ANegativeBudgetReadsAsNone) {
  FakeClock clock(seconds(5));
  const Deadline deadline = Deadline::StartingNow(clock, seconds(-2));
  EXPECT_EQ(Ns(deadline.budget()), int64_t{0});
  EXPECT_TRUE(deadline.Expired(clock));
  EXPECT_EQ(deadline.Budget(), std::string("0 s"));
}

TEST(Deadline, ADefaultDeadlineHasExpiredOnAnyClock) {
  FakeClock fake;
  RealClock real;
  const Deadline deadline;
  EXPECT_TRUE(deadline.Expired(fake));
  EXPECT_TRUE(deadline.Expired(real));
}

TEST(Deadline, TheBudgetReadsAsInMessages) {
  FakeClock clock;
  EXPECT_EQ(Deadline::StartingNow(clock, seconds(300)).Budget(), std::string("300 s"));
  EXPECT_EQ(Deadline::StartingNow(clock, milliseconds(600)).Budget(), std::string("0.6 s"));
  const Deadline deadline = Deadline::StartingNow(clock, seconds(300));
  clock.Advance(seconds(12));
  EXPECT_EQ(deadline.Progress(clock), std::string("12 s of 300 s"));
}

TEST(Deadline, ARealClockDeadlineRunsOut) {
  RealClock clock;
  const Deadline deadline = Deadline::StartingNow(clock, milliseconds(20));
  EXPECT_LE(Ns(deadline.Remaining(clock)), Ns(milliseconds(20)));
  clock.Sleep(milliseconds(25));
  EXPECT_TRUE(deadline.Expired(clock));
  EXPECT_GE(Ns(deadline.Elapsed(clock)), Ns(milliseconds(25)));
}

TEST(Deadline, TimesReadWell) {
  EXPECT_EQ(FormatElapsed(milliseconds(400)), std::string("0.4 s"));
  EXPECT_EQ(FormatElapsed(milliseconds(9940)), std::string("9.9 s"));
  EXPECT_EQ(FormatElapsed(seconds(12)), std::string("12 s"));
  EXPECT_EQ(FormatElapsed(Nanos(-5)), std::string("0.0 s"));
  EXPECT_EQ(FormatTimeout(seconds(300)), std::string("300 s"));
  EXPECT_EQ(FormatTimeout(milliseconds(2500)), std::string("2.5 s"));
}

}  // namespace
}  // namespace kdist
