#include "stop/stop_board.h"

#include <unistd.h>

namespace kdist {

StopBoard::Answer StopBoard::Report(int64_t step) {
  step_.store(step);  // sequentially consistent: see the header (the Dekker pair)
  beats_.fetch_add(1, std::memory_order_relaxed);
  if (!pending_.load()) return Answer::kGoOn;
  const int64_t stop_step = stop_step_.load();
  if (stop_step == kUndecided) return Answer::kWait;
  return step >= stop_step ? Answer::kStop : Answer::kGoOn;
}

bool StopBoard::WaitForDecision(Nanos timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return decided_.wait_for(lock, timeout, [this] { return decided(); });
}

void StopBoard::OnSignal(int signal_number, Nanos now) {
  int expected = 0;
  signal_.compare_exchange_strong(expected, signal_number);
  int64_t first = kNoSignalYet;
  if (first_signal_at_.compare_exchange_strong(first, now.count()) ||
      now.count() - first >= kRepeatWindow.count()) {
    signals_.fetch_add(1);
  }
  const int fd = wake_fd_.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = write(fd, &byte, 1);  // async-signal-safe
  }
}

int StopBoard::TakeSignal() { return signal_.exchange(0); }

bool StopBoard::TakeArmed() { return armed() && !armed_taken_.exchange(true); }

int64_t StopBoard::BeginAgreement() {
  pending_.store(true);
  return step_.load();
}

void StopBoard::Decide(int64_t stop_step, int signal_number) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.store(true);
    stop_signal_.store(signal_number);
    stop_step_.store(stop_step);
  }
  decided_.notify_all();
}

}  // namespace kdist
