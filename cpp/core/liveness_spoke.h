// The liveness channel, every other process's side: one connection to
// process 0's hub (liveness_hub.h), joined with the nonce from "go" right
// after it, and watched by one thread (a PollThread) that hands each notice
// from process 0 to the process's handler. What the process does on a notice
// is DecideOnNotice's (liveness_book.h).
//
// Process 0 gone is a death too: its connection closing before "every process
// finished" is reported as process 0's kDied.
#ifndef KDIST_LIVENESS_SPOKE_H_
#define KDIST_LIVENESS_SPOKE_H_

#include <memory>
#include <mutex>
#include <string>

#include "clock.h"
#include "liveness_book.h"
#include "liveness_connection.h"
#include "liveness_wire.h"
#include "poll_thread.h"
#include "socket.h"
#include "status.h"

namespace kdist {

// Every other process's side. Thread-safe.
class LivenessSpoke {
 public:
  // Connects to process 0's hub at `hub`, sends `join` and waits for the
  // admission, all within options.join_timeout; then starts the thread.
  // kUnavailable when the hub cannot be reached or refuses (the message says
  // why: a firewall that drops the port shows as a timeout).
  static Result<std::unique_ptr<LivenessSpoke>> Join(const Endpoint& hub, const LiveJoin& join,
                                                     LiveMember coordinator,
                                                     LivenessOptions options,
                                                     NoticeHandler on_notice, Clock& clock);
  ~LivenessSpoke();
  LivenessSpoke(const LivenessSpoke&) = delete;
  LivenessSpoke& operator=(const LivenessSpoke&) = delete;

  // Tells process 0, bounded by send_timeout.
  Status ReportFailure(const std::string& message);
  Status Finish(bool barrier);
  void Stop();

 private:
  LivenessSpoke(Fd fd, LiveJoin join, LiveMember coordinator, LivenessOptions options,
                NoticeHandler on_notice);
  Status Send(const LiveNotice& notice);
  void Run();

  Fd fd_;
  LiveJoin join_;
  LiveMember coordinator_;
  LivenessOptions options_;
  NoticeHandler on_notice_;
  std::mutex send_mutex_;
  PollThread thread_;  // runs Run(); its stopping() is the spoke's "stopped"
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_SPOKE_H_
