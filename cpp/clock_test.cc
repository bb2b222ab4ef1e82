#include "clock.h"

#include <cmath>

#include "testing/check.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

KDIST_TEST(Clock, SecondsConvertBothWays) {
  KDIST_EXPECT_EQ(SecondsToNanos(1.5).count(), int64_t{1500000000});
  KDIST_EXPECT_EQ(SecondsToNanos(0).count(), int64_t{0});
  KDIST_EXPECT_EQ(SecondsToNanos(-3).count(), int64_t{0});
  KDIST_EXPECT_EQ(SecondsToNanos(std::nan("")).count(), int64_t{0});
  KDIST_EXPECT_TRUE(SecondsToNanos(1e300).count() > 0);  // saturates, no overflow
  KDIST_EXPECT_EQ(NanosToSeconds(milliseconds(250)), 0.25);
}

KDIST_TEST(Clock, RealClockIsMonotonicAndSleeps) {
  RealClock clock;
  const Nanos before = clock.Now();
  clock.Sleep(milliseconds(2));
  const Nanos after = clock.Now();
  KDIST_EXPECT_GE((after - before).count(), Nanos(milliseconds(2)).count());
  clock.Sleep(Nanos(-5));  // a negative sleep returns at once
  KDIST_EXPECT_GE(clock.Now().count(), after.count());
}

KDIST_TEST(Clock, FakeClockMovesOnlyWhenTold) {
  FakeClock clock(milliseconds(100));
  KDIST_EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(100)).count());
  clock.Sleep(milliseconds(30));
  KDIST_EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(130)).count());
  clock.Sleep(Nanos(-1));
  KDIST_EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(130)).count());
  clock.Advance(milliseconds(5));
  KDIST_EXPECT_EQ(clock.Now().count(), Nanos(milliseconds(135)).count());
  KDIST_ASSERT_EQ(clock.sleeps().size(), size_t{2});
  KDIST_EXPECT_EQ(clock.sleeps()[0].count(), Nanos(milliseconds(30)).count());
}

}  // namespace
}  // namespace kdist
