// Deadline: the bound of a start, as one value from initialize() to every
// wait under it.
//
// A Deadline is the instant its budget began and the budget, both on one
// Clock's time base: made once (initialize() makes it on the real monotonic
// clock; a test makes it on its FakeClock's time), then asked how much is
// spent and how much is left by every phase that waits. Messages count from
// its start ("12 s of 300 s") and name its budget ("timed out after 300 s"),
// so every phase of a start reads the same cadence and the same bound.
#ifndef KDIST_BASE_DEADLINE_H_
#define KDIST_BASE_DEADLINE_H_

#include <string>

#include "base/clock.h"

namespace kdist {

class Deadline {
 public:
  // No budget, from instant 0: expired on any clock (a wait on a deadline
  // nobody set ends at once instead of hanging).
  Deadline() = default;
  // `budget` from `start`, on the time base of the clock it is asked with; a
  // negative budget reads as 0.
  Deadline(Nanos start, Nanos budget);
  // `budget` from now on `clock`.
  static Deadline StartingNow(Clock& clock, Nanos budget);

  // The instant the budget began, the budget, and the instant it ends.
  Nanos start() const { return start_; }
  Nanos budget() const { return budget_; }
  Nanos end() const { return start_ + budget_; }

  // Time spent since the start (0 before it), time left until the end (0 once
  // it passed), and whether it passed, on `clock`.
  Nanos Elapsed(Clock& clock) const;
  Nanos Remaining(Clock& clock) const;
  bool Expired(Clock& clock) const { return Remaining(clock).count() <= 0; }

  // "300 s": the budget, for messages ("timed out after 300 s").
  std::string Budget() const;
  // "12 s of 300 s": the time spent and the budget.
  std::string Progress(Clock& clock) const;

 private:
  Nanos start_{0};
  Nanos budget_{0};
};

// "0.4 s", "12 s": one decimal below ten seconds, whole seconds above.
std::string FormatElapsed(Nanos elapsed);
// "3 s", "2.5 s", "300 s".
std::string FormatTimeout(Nanos timeout);

}  // namespace kdist

#endif  // KDIST_BASE_DEADLINE_H_
