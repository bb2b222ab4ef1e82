#include "stop/signal_relay.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "stop/stop_signals.h"

namespace kdist {
namespace {

constexpr int kMaxSignal = 65;  // above every signal number Linux has (_NSIG)

// The relay's state. Written under g_mutex while no kdist handler can read the
// slot being written (before installation, or after the handler was removed);
// read by the handler without a lock.
struct Slot {
  bool installed = false;
  struct sigaction found;    // what InstallSignalRelay replaced (XLA's handler)
  bool chain_program = false;
  struct sigaction program;  // the program's own, from before JAX started
};

std::mutex g_mutex;
Slot g_slots[kMaxSignal];
std::atomic<StopBoard*> g_board{nullptr};

bool IsFunction(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN &&
         action.sa_handler != nullptr;
}

bool SameHandler(const struct sigaction& a, const struct sigaction& b) {
  if ((a.sa_flags & SA_SIGINFO) != (b.sa_flags & SA_SIGINFO)) return false;
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction == b.sa_sigaction;
  return a.sa_handler == b.sa_handler;
}

void Call(const struct sigaction& action, int signal_number, siginfo_t* info, void* context) {
  if (action.sa_flags & SA_SIGINFO) {
    action.sa_sigaction(signal_number, info, context);
  } else {
    action.sa_handler(signal_number);
  }
}

// CLOCK_MONOTONIC (steady_clock's time base), read the async-signal-safe way.
Nanos SignalSafeNow() {
  struct timespec now;
  if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) return Nanos(0);
  return Nanos(int64_t{now.tv_sec} * 1000000000 + now.tv_nsec);
}

void Relay(int signal_number, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (StopBoard* board = g_board.load()) board->OnSignal(signal_number, SignalSafeNow());
  if (signal_number > 0 && signal_number < kMaxSignal) {
    const Slot& slot = g_slots[signal_number];
    if (slot.installed && IsFunction(slot.found)) Call(slot.found, signal_number, info, context);
    if (slot.installed && slot.chain_program && IsFunction(slot.program) &&
        !(IsFunction(slot.found) && SameHandler(slot.found, slot.program))) {
      Call(slot.program, signal_number, info, context);
    }
  }
  errno = saved_errno;
}

bool IsRelay(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) && action.sa_sigaction == &Relay;
}

}  // namespace

void RememberProgramHandlers(const std::vector<int>& program_handlers) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& slot : g_slots) slot.chain_program = false;
  for (int s : program_handlers) {
    if (s <= 0 || s >= kMaxSignal || g_slots[s].installed) continue;
    struct sigaction current;
    if (sigaction(s, nullptr, &current) != 0 || IsRelay(current)) continue;
    g_slots[s].program = current;
    g_slots[s].chain_program = true;
  }
}

Status InstallSignalRelay(const std::vector<int>& signals, StopBoard* board) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_board.load() != nullptr) {
    return FailedPrecondition("kdist's stop-signal handler is installed already");
  }
  g_board.store(board);
  std::vector<int> done;
  for (int s : signals) {
    if (s <= 0 || s >= kMaxSignal) return InvalidArgument("no signal numbered " + std::to_string(s));
    Slot& slot = g_slots[s];
    struct sigaction current;
    if (sigaction(s, nullptr, &current) != 0) {
      return Internal("cannot read the handler of " + SignalName(s) + ": " + std::strerror(errno));
    }
    slot.found = current;
    slot.installed = true;
    struct sigaction relay;
    std::memset(&relay, 0, sizeof relay);
    relay.sa_sigaction = &Relay;
    relay.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&relay.sa_mask);
    if (sigaction(s, &relay, nullptr) != 0) {
      const int error = errno;
      slot.installed = false;
      for (int undo : done) {
        sigaction(undo, &g_slots[undo].found, nullptr);
        g_slots[undo].installed = false;
      }
      g_board.store(nullptr);
      return Internal("cannot install kdist's handler for " + SignalName(s) + ": " +
                      std::strerror(error));
    }
    done.push_back(s);
  }
  return Status::Ok();
}

void UninstallSignalRelay() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int s = 1; s < kMaxSignal; ++s) {
    Slot& slot = g_slots[s];
    if (!slot.installed) continue;
    struct sigaction current;
    // Put back what was there, unless the program replaced kdist's handler since.
    if (sigaction(s, nullptr, &current) == 0 && IsRelay(current)) {
      sigaction(s, &slot.found, nullptr);
    }
    slot.installed = false;
  }
  g_board.store(nullptr);
}

}  // namespace kdist
