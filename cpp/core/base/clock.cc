#include "base/clock.h"

#include <ctime>

#include <cmath>
#include <thread>

namespace kdist {

Nanos SecondsToNanos(double seconds) {
  if (!(seconds > 0)) return Nanos(0);  // also NaN
  constexpr double kMaxSeconds = 9.2e9;  // below INT64_MAX nanoseconds
  if (seconds >= kMaxSeconds) return Nanos(static_cast<int64_t>(kMaxSeconds * 1e9));
  return Nanos(static_cast<int64_t>(std::llround(seconds * 1e9)));
}

double NanosToSeconds(Nanos value) { return static_cast<double>(value.count()) / 1e9; }

Nanos RealClock::Now() {
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
}

void RealClock::Sleep(Nanos duration) {
  if (duration.count() > 0) std::this_thread::sleep_for(duration);
}

void FakeClock::Sleep(Nanos duration) {
  sleeps_.push_back(duration);
  if (duration.count() > 0) now_ += duration;
}

int64_t WallClockMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string WallClockTime(int64_t unix_millis) {
  const std::time_t seconds = static_cast<std::time_t>(unix_millis / 1000);
  std::tm parts{};
  if (localtime_r(&seconds, &parts) == nullptr) return "an unknown time";
  char buffer[16];
  if (std::strftime(buffer, sizeof buffer, "%H:%M:%S", &parts) == 0) return "an unknown time";
  return buffer;
}

}  // namespace kdist
