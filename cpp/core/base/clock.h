// Clock: the one source of time for everything that waits.
//
// Deadlines, backoff and progress intervals read time through a Clock passed
// in by the caller, so tests drive them with a FakeClock in microseconds. The
// real clock is monotonic (std::chrono::steady_clock): a wall-clock jump never
// shortens or stretches a deadline.
#ifndef KDIST_BASE_CLOCK_H_
#define KDIST_BASE_CLOCK_H_

#include <chrono>
#include <string>
#include <cstdint>
#include <vector>

namespace kdist {

using Nanos = std::chrono::nanoseconds;

// Whole and fractional seconds as Nanos (negative or NaN input gives 0, huge
// input saturates at about 292 years).
Nanos SecondsToNanos(double seconds);
double NanosToSeconds(Nanos value);

// The wall clock (system_clock) in milliseconds since the Unix epoch, for the
// lines that say when something happened; never for a deadline.
int64_t WallClockMillis();
// A wall-clock time as the local "HH:MM:SS" ("an unknown time" when it cannot be).
std::string WallClockTime(int64_t unix_millis);

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time since an arbitrary, fixed origin.
  virtual Nanos Now() = 0;
  // Blocks the calling thread for `duration` (nothing when not positive).
  virtual void Sleep(Nanos duration) = 0;
};

// steady_clock and std::this_thread::sleep_for.
class RealClock final : public Clock {
 public:
  Nanos Now() override;
  void Sleep(Nanos duration) override;
};

// Time that moves only when told to: Sleep() advances it at once and records
// the request, Advance() moves it by hand.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Nanos start = Nanos(0)) : now_(start) {}
  Nanos Now() override { return now_; }
  void Sleep(Nanos duration) override;
  void Advance(Nanos duration) { now_ += duration; }
  const std::vector<Nanos>& sleeps() const { return sleeps_; }

 private:
  Nanos now_;
  std::vector<Nanos> sleeps_;
};

}  // namespace kdist

#endif  // KDIST_BASE_CLOCK_H_
