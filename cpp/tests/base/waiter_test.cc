#include "base/waiter.h"

#include <vector>

#include "base/clock.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t Ns(Nanos value) { return value.count(); }

TEST(Waiter, SleepStopsAtTheDeadlineAndLogsAtTheInterval) {
  FakeClock clock;
  std::vector<std::string> lines;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(300));
  options.progress_interval = seconds(5);
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Waiter waiter(clock, options);
  KDIST_EXPECT_OK(waiter.Sleep(seconds(1000), [&] { return "waiting, " + waiter.Progress(); }));
  EXPECT_EQ(Ns(clock.Now()), Ns(seconds(300)));
  EXPECT_TRUE(waiter.Expired());
  EXPECT_EQ(lines.size(), size_t{60});
  ASSERT_TRUE(!lines.empty());
  EXPECT_EQ(lines.front(), std::string("waiting, 5.0 s of 300 s"));
  EXPECT_EQ(lines[1], std::string("waiting, 10 s of 300 s"));
  for (Nanos slept : clock.sleeps()) EXPECT_LE(Ns(slept), Ns(seconds(5)));
}

TEST(Waiter, InterruptIsAskedEveryCheckIntervalAndStopsTheWait) {
  FakeClock clock;
  int asked = 0;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(60));
  options.check_interval = milliseconds(100);
  options.interrupted = [&]() -> Status {
    ++asked;
    if (clock.Now() >= seconds(2)) return Internal("interrupted");
    return Status::Ok();
  };
  Waiter waiter(clock, options);
  KDIST_EXPECT_ERROR(waiter.Sleep(seconds(30), nullptr), StatusCode::kInternal, "interrupted");
  EXPECT_LE(Ns(clock.Now()), Ns(milliseconds(2100)));
  EXPECT_GE(asked, 20);
  for (Nanos slept : clock.sleeps()) EXPECT_LE(Ns(slept), Ns(milliseconds(100)));
}

TEST(Waiter, SliceRespectsDeadlineChecksAndProgress) {
  FakeClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(3));
  options.progress_interval = seconds(1);
  options.progress = [](const std::string&) {};
  Waiter waiter(clock, options);
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), Ns(seconds(1)));  // next progress line
  clock.Advance(milliseconds(2500));
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), Ns(Nanos(0)));  // a line is overdue
  KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), Ns(milliseconds(500)));  // the deadline
  clock.Advance(seconds(1));
  EXPECT_EQ(Ns(waiter.Remaining()), int64_t{0});
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), int64_t{0});
}

TEST(Waiter, TimeSpentBeforeTheCallCountsAgainstTheDeadline) {
  FakeClock clock(seconds(1000));
  WaitOptions options;
  options.deadline = Deadline(clock.Now() - milliseconds(500), seconds(3));
  Waiter waiter(clock, options);
  EXPECT_EQ(Ns(waiter.Remaining()), Ns(milliseconds(2500)));
  EXPECT_EQ(waiter.Progress(), std::string("0.5 s of 3 s"));
  KDIST_EXPECT_OK(waiter.Sleep(seconds(10), nullptr));
  EXPECT_EQ(Ns(clock.Now()), Ns(milliseconds(1002500)));
  EXPECT_EQ(waiter.Progress(), std::string("3.0 s of 3 s"));
}

TEST(Waiter, ProgressKeepsItsCadenceAcrossCalls) {
  FakeClock clock;
  std::vector<std::string> lines;
  WaitOptions options;
  // An earlier phase used 1.7 s.
  options.deadline = Deadline(clock.Now() - milliseconds(1700), seconds(10));
  options.progress_interval = milliseconds(500);
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Waiter waiter(clock, options);
  KDIST_EXPECT_OK(waiter.Check([&] { return waiter.Progress(); }));
  EXPECT_EQ(lines.size(), size_t{0});  // nothing due at once
  KDIST_EXPECT_OK(waiter.Sleep(milliseconds(900), [&] { return waiter.Progress(); }));
  ASSERT_EQ(lines.size(), size_t{2});
  EXPECT_EQ(lines[0], std::string("2.0 s of 10 s"));
  EXPECT_EQ(lines[1], std::string("2.5 s of 10 s"));
}

TEST(Waiter, AStallSkipsMissedLinesInsteadOfFlooding) {
  FakeClock clock;
  int lines = 0;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(300));
  options.progress_interval = seconds(1);
  options.progress = [&](const std::string&) { ++lines; };
  Waiter waiter(clock, options);
  clock.Advance(seconds(50));
  KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
  KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
  EXPECT_EQ(lines, 1);
}

TEST(Waiter, ZeroOrNegativeIntervalsDoNotSpin) {
  for (Nanos interval : {Nanos(0), Nanos(-5), Nanos(1)}) {
    FakeClock clock;
    int64_t lines = 0;
    int64_t asked = 0;
    WaitOptions options;
    options.deadline = Deadline::StartingNow(clock, seconds(10));
    options.progress_interval = interval;
    options.check_interval = interval;
    options.progress = [&](const std::string&) { ++lines; };
    options.interrupted = [&]() -> Status {
      ++asked;
      return Status::Ok();
    };
    Waiter waiter(clock, options);
    // Read as 1 ms: at most one line and one check per millisecond.
    KDIST_EXPECT_OK(waiter.Sleep(seconds(60), [] { return std::string("x"); }));
    EXPECT_EQ(Ns(clock.Now()), Ns(seconds(10)));
    EXPECT_LE(lines, int64_t{10001});
    EXPECT_LE(asked, int64_t{10001});
    // At most one wake for each line and one for each check.
    EXPECT_LE(static_cast<int64_t>(clock.sleeps().size()), int64_t{20002});
    for (Nanos slept : clock.sleeps()) EXPECT_LE(Ns(slept), Ns(milliseconds(1)));
    // A stall of a million hours costs one step, not one per missed interval.
    clock.Advance(std::chrono::hours(1'000'000));
    const int64_t before = lines;
    KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
    KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
    EXPECT_EQ(lines, before + 1);
  }
}

}  // namespace
}  // namespace kdist
