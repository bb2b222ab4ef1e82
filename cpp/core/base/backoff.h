// Capped, jittered exponential backoff for retry loops.
//
// The k-th delay is min(cap, initial * multiplier^k), shortened by a random
// fraction of up to `jitter` of itself, so processes started together spread
// their retries instead of arriving in lock-step. Randomness comes from a seed
// the caller passes in, so a test sees the same delays every run.
#ifndef KDIST_BASE_BACKOFF_H_
#define KDIST_BASE_BACKOFF_H_

#include <cstdint>

#include "base/clock.h"

namespace kdist {

struct BackoffPolicy {
  Nanos initial = std::chrono::milliseconds(25);
  Nanos cap = std::chrono::milliseconds(1000);
  double multiplier = 2.0;  // >= 1
  double jitter = 0.5;      // in [0, 1): the largest fraction taken off a delay
};

// splitmix64: a small, fast generator, good enough to spread retries.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, 1).
  double NextUnit();

 private:
  uint64_t state_;
};

class Backoff {
 public:
  Backoff(BackoffPolicy policy, uint64_t seed);

  // The delay to wait before the next attempt; each call moves one step up
  // the exponential until the cap.
  Nanos Next();
  // Number of delays handed out so far.
  int64_t steps() const { return steps_; }
  // The shortest delay Next() can return.
  Nanos MinDelay() const;
  // An upper bound on the attempts that fit in `window` (at least 1): the cap
  // every retry loop driven by this backoff uses as its loop bound.
  int64_t MaxAttemptsWithin(Nanos window) const;

 private:
  BackoffPolicy policy_;
  SplitMix64 random_;
  double base_ns_;  // the un-jittered delay of the next step
  int64_t steps_ = 0;
};

}  // namespace kdist

#endif  // KDIST_BASE_BACKOFF_H_
