#include "base/backoff.h"

#include <set>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, GrowsExponentiallyUpToTheCapWithoutJitter) {
  BackoffPolicy policy{milliseconds(10), milliseconds(100), 2.0, 0.0};
  Backoff backoff(policy, 1);
  const int64_t want[] = {10, 20, 40, 80, 100, 100, 100};
  for (int64_t ms : want) {
    EXPECT_EQ(backoff.Next().count(), Nanos(milliseconds(ms)).count());
  }
  EXPECT_EQ(backoff.steps(), int64_t{7});
}

TEST(Backoff, JitterStaysWithinItsFraction) {
  BackoffPolicy policy{milliseconds(10), milliseconds(80), 2.0, 0.5};
  Backoff backoff(policy, 42);
  int64_t base = 10;
  for (int i = 0; i < 200; ++i) {
    const Nanos delay = backoff.Next();
    EXPECT_LE(delay.count(), Nanos(milliseconds(base)).count());
    EXPECT_GE(delay.count(), Nanos(milliseconds(base)).count() / 2);
    EXPECT_GE(delay.count(), backoff.MinDelay().count());
    base = std::min<int64_t>(base * 2, 80);
  }
}

TEST(Backoff, SameSeedSameDelaysOtherSeedOtherDelays) {
  BackoffPolicy policy;
  Backoff a(policy, 7), b(policy, 7), c(policy, 8);
  bool differs = false;
  for (int i = 0; i < 10; ++i) {
    const Nanos x = a.Next();
    EXPECT_EQ(x.count(), b.Next().count());
    if (x != c.Next()) differs = true;
  }
  EXPECT_TRUE(differs);
}

TEST(Backoff, SpreadsProcessesStartedTogether) {
  // 32 workers with different seeds: their 5th delays are not all equal.
  std::set<int64_t> fifth;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    Backoff backoff(BackoffPolicy{}, seed);
    for (int i = 0; i < 4; ++i) (void)backoff.Next();
    fifth.insert(backoff.Next().count());
  }
  EXPECT_GE(fifth.size(), size_t{16});
}

TEST(Backoff, MaxAttemptsBoundsAnyScheduleWithinTheWindow) {
  BackoffPolicy policy{milliseconds(10), milliseconds(1000), 2.0, 0.5};
  Backoff probe(policy, 3);
  const Nanos window = milliseconds(3000);
  const int64_t bound = probe.MaxAttemptsWithin(window);
  // Count the attempts a retry loop makes: one, then one after each delay.
  Backoff backoff(policy, 3);
  FakeClock clock;
  int64_t attempts = 1;
  while (true) {
    const Nanos delay = backoff.Next();
    if (clock.Now() + delay > window) break;
    clock.Sleep(delay);
    ++attempts;
  }
  EXPECT_LE(attempts, bound);
  EXPECT_GE(attempts, int64_t{5});
  EXPECT_EQ(probe.MaxAttemptsWithin(Nanos(0)), int64_t{1});
}

TEST(Backoff, NonsensePoliciesAreMadeSafe) {
  BackoffPolicy policy{Nanos(0), Nanos(-5), 0.1, 7.0};
  Backoff backoff(policy, 0);
  for (int i = 0; i < 10; ++i) EXPECT_GE(backoff.Next().count(), int64_t{1});
  EXPECT_GE(backoff.MinDelay().count(), int64_t{1});
}

TEST(SplitMix64, UnitIsInRange) {
  SplitMix64 random(123);
  for (int i = 0; i < 1000; ++i) {
    const double u = random.NextUnit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace kdist
