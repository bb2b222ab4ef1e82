// A thread that runs a poll loop, and the pipe that wakes it.
//
// The loop polls wake_fd() beside its own descriptors; Wake() makes that
// poll return at once (a byte in the pipe), so a loop that sleeps until its
// next deadline hears news or a stop without waiting it out. Stop() asks the
// loop to end, wakes it and joins the thread. The liveness channel's hub and
// spoke each run one.
#ifndef KDIST_NET_POLL_THREAD_H_
#define KDIST_NET_POLL_THREAD_H_

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "base/status.h"
#include "net/socket.h"

namespace kdist {

class PollThread {
 public:
  PollThread() = default;
  ~PollThread() { Stop(); }
  PollThread(const PollThread&) = delete;
  PollThread& operator=(const PollThread&) = delete;

  // Makes the wake pipe (non-blocking, close-on-exec), then runs `loop` on
  // the thread; `loop` returns once stopping() is true. kInternal when the
  // pipe cannot be made ("cannot create <owner>'s wake pipe: ..."; no thread
  // is started then), kFailedPrecondition when started before.
  Status Start(std::string_view owner, std::function<void()> loop);

  // The pipe's read end, to poll for POLLIN; -1 before Start.
  int wake_fd() const { return wake_read_.get(); }
  // The pipe's write end, for a signal handler to wake the loop with one
  // write() (async-signal-safe, unlike Wake's callers); -1 before Start.
  int wake_write_fd() const { return wake_write_.get(); }
  // Makes the loop's current or next poll return (any thread; best effort:
  // a full pipe is already a pending wake). Does nothing before Start.
  void Wake();
  // Empties the pipe; the loop calls it when its poll saw wake_fd() ready.
  void DrainWake();

  // Whether Stop() was called; the loop ends once it is.
  bool stopping() const { return stop_.load(); }
  // Sets stopping(), wakes the loop and waits for the thread to end. Returns
  // true for the call that stopped it, false for every later (or concurrent)
  // one, which returns at once. Never call it from the loop itself.
  bool Stop();

 private:
  Fd wake_read_, wake_write_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kdist

#endif  // KDIST_NET_POLL_THREAD_H_
