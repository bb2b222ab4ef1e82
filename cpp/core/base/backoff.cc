#include "base/backoff.h"

#include <algorithm>

namespace kdist {

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::NextUnit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

namespace {

BackoffPolicy Sanitize(BackoffPolicy policy) {
  if (policy.initial.count() < 1) policy.initial = Nanos(1);
  if (policy.cap < policy.initial) policy.cap = policy.initial;
  if (!(policy.multiplier >= 1.0)) policy.multiplier = 1.0;
  if (!(policy.jitter >= 0.0)) policy.jitter = 0.0;
  if (policy.jitter > 0.99) policy.jitter = 0.99;
  return policy;
}

}  // namespace

Backoff::Backoff(BackoffPolicy policy, uint64_t seed)
    : policy_(Sanitize(policy)),
      random_(seed),
      base_ns_(static_cast<double>(policy_.initial.count())) {}

Nanos Backoff::Next() {
  const double cap = static_cast<double>(policy_.cap.count());
  const double base = std::min(base_ns_, cap);
  const double delay = base * (1.0 - policy_.jitter * random_.NextUnit());
  base_ns_ = std::min(base * policy_.multiplier, cap);
  ++steps_;
  return Nanos(std::max<int64_t>(1, static_cast<int64_t>(delay)));
}

Nanos Backoff::MinDelay() const {
  const double delay = static_cast<double>(policy_.initial.count()) * (1.0 - policy_.jitter);
  return Nanos(std::max<int64_t>(1, static_cast<int64_t>(delay)));
}

int64_t Backoff::MaxAttemptsWithin(Nanos window) const {
  if (window.count() <= 0) return 1;
  return window.count() / MinDelay().count() + 2;
}

}  // namespace kdist
