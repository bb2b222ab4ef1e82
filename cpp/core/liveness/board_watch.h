// What a liveness channel's thread learns from its own process's StopBoard,
// one tick at a time: the first progress report (the process asks
// should_stop), a stop signal, and a stall — each to be told to process 0
// once. Process 0's hub and every other process's spoke each keep one.
#ifndef KDIST_LIVENESS_BOARD_WATCH_H_
#define KDIST_LIVENESS_BOARD_WATCH_H_

#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "liveness/stall_book.h"
#include "stop/stop_board.h"

namespace kdist {

// What the channel's own process needs besides its board.
struct StopOptions {
  StopBoard* board = nullptr;         // this process's; nullptr: no stop, stall or barrier
  std::optional<Nanos> stall_timeout;  // nullopt: no stall watchdog
  // raise()d on the channel's thread to write this process's Python stacks to
  // its stderr (Python's faulthandler registered for it); 0: no stacks.
  int stack_signal = 0;
  // How long process 0 waits for the answers of a stall round and for the
  // stuck processes' stacks.
  Nanos answer_timeout = std::chrono::seconds(2);
};

// How often a channel's thread looks at its board (a stop signal wakes it at
// once; this bounds how late an armed process or a stall is noticed).
inline constexpr Nanos kBoardTick = std::chrono::milliseconds(100);

struct BoardNews {
  bool armed = false;      // tell kArmed
  int signal_number = 0;   // tell kStopRequest for it
  bool urgent = false;     // a second stop signal
  bool stalled = false;    // tell kStalled (once)
};

class BoardWatch {
 public:
  explicit BoardWatch(const StopOptions& options) : options_(options) {}

  // What changed since the last tick, at `now` (a monotonic time).
  BoardNews Tick(Nanos now);
  // This process's step and idle time at `now`: the board is read again first,
  // so a beat since the last tick counts (an answer to a stall round never
  // depends on when the tick ran).
  ProgressReport Report(int64_t process_id, Nanos now);
  bool active() const { return options_.board != nullptr; }

 private:
  // Reads the board's beat count: the idle time counts from the last change seen.
  void Observe(Nanos now);

  StopOptions options_;
  uint64_t last_beats_ = 0;
  Nanos last_change_{0};
  bool started_ = false;
  bool stall_told_ = false;
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_BOARD_WATCH_H_
