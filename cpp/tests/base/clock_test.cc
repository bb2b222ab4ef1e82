#include "base/clock.h"

#include <cmath>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

TEST(Clock, SecondsConvertBothWays) {
  EXPECT_EQ(SecondsToNanos(1.5).count(), int64_t{1500000000});
  EXPECT_EQ(SecondsToNanos(0).count(), int64_t{0});
  EXPECT_EQ(SecondsToNanos(-3).count(), int64_t{0});
  EXPECT_EQ(SecondsToNanos(std::nan("")).count(), int64_t{0});
  EXPECT_TRUE(SecondsToNanos(1e300).count() > 0);  // saturates, no overflow
  EXPECT_EQ(NanosToSeconds(milliseconds(250)), 0.25);
}

TEST(Clock, RealClockIsMonotonicAndSleeps) {
  RealClock clock;
  const Nanos before = clock.Now();
  clock.Sleep(milliseconds(2));
  const Nanos after = clock.Now();
  EXPECT_GE((after - before).count(), Nanos(milliseconds(2)).count());
  clock.Sleep(Nanos(-5));  // a negative sleep returns at once
  EXPECT_GE(clock.Now().count(), after.count());
}

TEST(Clock, FakeClockMovesOnlyWhenTold) {
  FakeClock clock(milliseconds(100));
  EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(100)).count());
  clock.Sleep(milliseconds(30));
  EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(130)).count());
  clock.Sleep(Nanos(-1));
  EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(130)).count());
  clock.Advance(milliseconds(5));
  EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(135)).count());
  ASSERT_EQ(clock.sleeps().size(), size_t{2});
  EXPECT_EQ(clock.sleeps()[0].count(), Nanos(milliseconds(30)).count());
}

}  // namespace
}  // namespace kdist
