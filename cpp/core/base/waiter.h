// A deadline cut into bounded waits: each blocking call waits at most a slice
// (to the deadline, the next interrupt check, the next progress line), and
// between slices the interrupt hook is asked and progress lines are written.
// What every wait of a start uses: the roll call, name resolution, probes.
#ifndef KDIST_BASE_WAITER_H_
#define KDIST_BASE_WAITER_H_

#include <chrono>
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/deadline.h"
#include "base/status.h"

namespace kdist {

// What a Waiter waits by.
struct WaitOptions {
  // The deadline of the whole start, made when initialize() began, on the
  // time base of the Clock the call is given. Messages and progress lines
  // count from its start ("12 s of 300 s"). A default Deadline has no budget:
  // set one.
  Deadline deadline;
  // A progress line every `progress_interval` while waiting, on whole
  // intervals counted from the start of initialize(). The Waiter reads this
  // and check_interval as at least kMinWaiterInterval.
  Nanos progress_interval = std::chrono::seconds(5);
  std::function<void(const std::string&)> progress;  // may be empty
  // Asked at least every `check_interval` while waiting; a non-ok Status
  // stops the roll call at once (sockets closed) and is returned as is. The
  // Python binding uses it for Ctrl-C.
  Nanos check_interval = std::chrono::milliseconds(100);
  std::function<Status()> interrupted;  // may be empty
};

// The shortest progress and check interval a Waiter uses: a smaller (or zero,
// or negative) setting would turn waits into busy loops.
inline constexpr Nanos kMinWaiterInterval = std::chrono::milliseconds(1);

// The options' deadline, cut into bounded waits. Not thread-safe; one per call.
class Waiter {
 public:
  Waiter(Clock& clock, const WaitOptions& options);

  Clock& clock() { return clock_; }
  const Deadline& deadline() const { return options_.deadline; }
  Nanos Elapsed() const { return options_.deadline.Elapsed(clock_); }
  Nanos Remaining() const { return options_.deadline.Remaining(clock_); }  // 0 once passed
  bool Expired() const { return options_.deadline.Expired(clock_); }
  // "12 s of 300 s".
  std::string Progress() const { return options_.deadline.Progress(clock_); }

  // How long the next blocking call may wait: `want`, shortened to the
  // deadline, to the next interrupt check and to the next progress line.
  Nanos Slice(Nanos want) const;

  // Between waits: asks the interrupt hook (at most every check_interval)
  // and, when due, calls progress with line(). Returns the hook's status.
  Status Check(const std::function<std::string()>& line);

  // Sleeps `duration`, cut at the deadline, in slices with Check() between.
  Status Sleep(Nanos duration, const std::function<std::string()>& line);

 private:
  Nanos ProgressInterval() const;
  Nanos CheckInterval() const;
  // The first progress time on the cadence strictly after `now`.
  Nanos NextProgressAfter(Nanos now) const;

  Clock& clock_;
  const WaitOptions& options_;
  Nanos next_progress_;
  Nanos next_check_;
};

}  // namespace kdist

#endif  // KDIST_BASE_WAITER_H_
