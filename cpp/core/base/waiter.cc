#include "base/waiter.h"

#include <algorithm>

namespace kdist {

Waiter::Waiter(Clock& clock, const WaitOptions& options)
    : clock_(clock), options_(options), next_check_(options.deadline.start()) {
  next_progress_ = NextProgressAfter(clock.Now());
}

Nanos Waiter::ProgressInterval() const {
  return std::max(options_.progress_interval, kMinWaiterInterval);
}

Nanos Waiter::CheckInterval() const { return std::max(options_.check_interval, kMinWaiterInterval); }

Nanos Waiter::NextProgressAfter(Nanos now) const {
  // Lines fall on whole intervals since the start of initialize(), the first
  // one strictly after `now`: one cadence across the phases of a start, and
  // the lines missed by a long stall are skipped instead of printed.
  const Nanos start = options_.deadline.start();
  const Nanos interval = ProgressInterval();
  return start + interval * ((now - start) / interval + 1);
}

Nanos Waiter::Slice(Nanos want) const {
  const Nanos now = clock_.Now();
  Nanos slice = std::min(want, options_.deadline.end() - now);
  if (options_.interrupted) slice = std::min(slice, std::max(Nanos(0), next_check_ - now));
  if (options_.progress) slice = std::min(slice, std::max(Nanos(0), next_progress_ - now));
  return std::max(slice, Nanos(0));
}

Status Waiter::Check(const std::function<std::string()>& line) {
  const Nanos now = clock_.Now();
  if (options_.interrupted && now >= next_check_) {
    next_check_ = now + CheckInterval();
    KDIST_RETURN_IF_ERROR(options_.interrupted());
  }
  if (now >= next_progress_) {
    next_progress_ = NextProgressAfter(now);
    if (options_.progress && line) options_.progress(line());
  }
  return Status::Ok();
}

Status Waiter::Sleep(Nanos duration, const std::function<std::string()>& line) {
  const Nanos until = std::min(clock_.Now() + duration, options_.deadline.end());
  // Each pass sleeps at least 1 ns of a bounded remainder, so the loop ends.
  while (clock_.Now() < until) {
    const Nanos slice = std::max(Nanos(1), std::min(until - clock_.Now(), Slice(until - clock_.Now())));
    clock_.Sleep(slice);
    KDIST_RETURN_IF_ERROR(Check(line));
  }
  return Status::Ok();
}

}  // namespace kdist
