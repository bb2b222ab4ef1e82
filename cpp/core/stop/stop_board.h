// This process's steps and the job's stop, as three parties see them: the
// program's thread (should_stop(step), barrier), a signal handler (a stop
// signal), and the liveness channel's thread (the agreement with process 0).
//
// The program's common path is a few atomic operations and takes no lock:
// Report() stores the step, counts a beat and reads whether a stop is being
// agreed. Agreement follows the preemption sync point of JAX and TSL: when a
// stop is requested anywhere, process 0 asks every process for its step, and
// the stop step is one past the largest (the first step every process can
// still reach). A process that reaches the step after the one it reported
// before the decision waits for it (WaitForDecision), so no process runs past
// the step the others stop at. The step store and the pending flag are a
// Dekker pair: the program stores its step, then reads the flag; the channel
// sets the flag, then reads the step (both sequentially consistent), so either
// the program sees the agreement or the channel sees the new step.
//
// The signal side is async-signal-safe: atomics and one write() to the
// channel's wake pipe.
#ifndef KDIST_STOP_STOP_BOARD_H_
#define KDIST_STOP_STOP_BOARD_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>

#include "base/clock.h"

namespace kdist {

class StopBoard {
 public:
  // No step reported yet.
  static constexpr int64_t kNoStep = -1;

  enum class Answer {
    kGoOn,  // not the stop step
    kStop,  // the agreed stop step (or later)
    kWait,  // a stop is being agreed and this step may be it: WaitForDecision, then ask again
  };

  StopBoard() = default;
  StopBoard(const StopBoard&) = delete;
  StopBoard& operator=(const StopBoard&) = delete;

  // --- the program's thread ---------------------------------------------------------

  // should_stop(step): records the step as this process's progress (the first
  // call arms the stall watchdog) and answers.
  Answer Report(int64_t step);
  // Progress without a step (a barrier reached).
  void Beat() { beats_.fetch_add(1, std::memory_order_relaxed); }
  // Waits until the stop step is decided, the agreement is abandoned, or
  // `timeout` passes; returns whether it is decided.
  bool WaitForDecision(Nanos timeout);

  // --- a signal handler (async-signal-safe) ---------------------------------------

  // Records a stop signal that arrived at `now` (monotonic: the relay reads
  // CLOCK_MONOTONIC) and wakes the channel (a byte on `wake_fd`, when set).
  // One within kRepeatWindow of the first is the same stop delivered twice, not
  // a second one: Slurm's time limit sends every task SIGTERM, SIGCONT and
  // SIGTERM again within a few milliseconds (measured on slurm-wlm 22.05), and
  // taking the repeat for the user's "now" would end the job before it saves.
  void OnSignal(int signal_number, Nanos now);
  static constexpr Nanos kRepeatWindow = std::chrono::seconds(1);
  void SetWakeFd(int fd) { wake_fd_.store(fd); }

  // --- the liveness channel's thread ------------------------------------------------

  // The first stop signal not yet taken (0 when none), and how many stop
  // signals arrived in all, repeats within kRepeatWindow of the first not
  // counted (a second one asks for the job to end at once).
  int TakeSignal();
  int signals_received() const { return signals_.load(); }
  // True once: the first time after the program's first Report.
  bool TakeArmed();
  bool armed() const { return step_.load() != kNoStep || beats_.load() != 0; }
  // The agreement starts: from now on Report() takes its slow path. Returns the
  // step to tell process 0 (read after the flag is set: see the header comment).
  int64_t BeginAgreement();
  // The stop step, as process 0 decided it (wakes WaitForDecision), and the
  // signal that asked for it (0: a request from code).
  void Decide(int64_t stop_step, int signal_number = 0);
  int64_t stop_step() const { return stop_step_.load(); }
  int stop_signal() const { return stop_signal_.load(); }
  // Whether this process reached the stop step (should_stop answered True).
  bool stopped() const { return decided() && step_.load() >= stop_step_.load(); }
  bool decided() const { return stop_step_.load() != kUndecided; }
  int64_t step() const { return step_.load(); }
  // Counts every Report and Beat: the stall watchdog compares two readings.
  uint64_t beats() const { return beats_.load(std::memory_order_relaxed); }

 private:
  static constexpr int64_t kUndecided = std::numeric_limits<int64_t>::max();

  std::atomic<int64_t> step_{kNoStep};
  std::atomic<uint64_t> beats_{0};
  std::atomic<bool> pending_{false};
  std::atomic<int64_t> stop_step_{kUndecided};
  std::atomic<int> stop_signal_{0};
  std::atomic<bool> armed_taken_{false};
  // Signals: the first one's number (until taken), when the first came, and the count.
  static constexpr int64_t kNoSignalYet = std::numeric_limits<int64_t>::min();
  std::atomic<int> signal_{0};
  std::atomic<int64_t> first_signal_at_{kNoSignalYet};
  std::atomic<int> signals_{0};
  std::atomic<int> wake_fd_{-1};
  // The slow path only: WaitForDecision sleeps here.
  std::mutex mutex_;
  std::condition_variable decided_;
};

}  // namespace kdist

#endif  // KDIST_STOP_STOP_BOARD_H_
