#include "base/deadline.h"

#include <algorithm>
#include <cstdio>

namespace kdist {

Deadline::Deadline(Nanos start, Nanos budget)
    : start_(start), budget_(std::max(budget, Nanos(0))) {}

Deadline Deadline::StartingNow(Clock& clock, Nanos budget) { return Deadline(clock.Now(), budget); }

Nanos Deadline::Elapsed(Clock& clock) const { return std::max(Nanos(0), clock.Now() - start_); }

Nanos Deadline::Remaining(Clock& clock) const { return std::max(Nanos(0), end() - clock.Now()); }

std::string Deadline::Budget() const { return FormatTimeout(budget_); }

std::string Deadline::Progress(Clock& clock) const {
  return FormatElapsed(Elapsed(clock)) + " of " + Budget();
}

std::string FormatElapsed(Nanos elapsed) {
  const double seconds = std::max(0.0, NanosToSeconds(elapsed));
  char buffer[32];
  if (seconds < 10) {
    std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.0f s", seconds);
  }
  return buffer;
}

std::string FormatTimeout(Nanos timeout) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", NanosToSeconds(timeout));
  return buffer;
}

}  // namespace kdist
