// The liveness channel, every other process's side: one connection to
// process 0's hub (liveness/liveness_hub.h), joined with the nonce from "go" right
// after it, and watched by one thread (a PollThread) that hands each notice
// from process 0 to the process's handler. What the process does on a notice
// is DecideOnNotice's (liveness/liveness_book.h).
//
// Process 0 gone is a death too: its connection closing before "every process
// finished" is reported as process 0's kDied, or as kUnreachable when it timed
// out (this process lost the coordinator: LostConnectionNotice).
//
// Stopping together: the thread also watches this process's StopBoard
// (BoardWatch) and tells process 0 when the process first asks should_stop,
// when a stop signal arrives and when the process stalls; it answers process
// 0's questions (its step, its idle time), writes its Python stacks when asked,
// and hands barrier verdicts to the thread waiting in Barrier().
#ifndef KDIST_LIVENESS_LIVENESS_SPOKE_H_
#define KDIST_LIVENESS_LIVENESS_SPOKE_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "liveness/board_watch.h"
#include "liveness/liveness_book.h"
#include "liveness/liveness_connection.h"
#include "liveness/liveness_wire.h"
#include "net/poll_thread.h"
#include "net/socket.h"

namespace kdist {

// Every other process's side. Thread-safe.
class LivenessSpoke {
 public:
  // Connects to process 0's hub at `hub`, sends `join` and waits for the
  // admission, all within options.join_timeout; then starts the thread.
  // kUnavailable when the hub cannot be reached or refuses (the message says
  // why: a firewall that drops the port shows as a timeout). The spoke reads
  // time from `clock` (monotonic, thread-safe), which must outlive it.
  static Result<std::unique_ptr<LivenessSpoke>> Join(const Endpoint& hub, const LiveJoin& join,
                                                     LiveMember coordinator,
                                                     LivenessOptions options, StopOptions stop,
                                                     NoticeHandler on_notice, Clock& clock);
  ~LivenessSpoke();
  LivenessSpoke(const LivenessSpoke&) = delete;
  LivenessSpoke& operator=(const LivenessSpoke&) = delete;

  // Tells process 0, bounded by send_timeout.
  Status ReportFailure(const std::string& message);
  Status Finish(bool barrier);
  // request_stop(reason) in this process.
  Status RequestStop(const std::string& reason);
  // This process at its barrier call `index` named `name`: as
  // LivenessHub::Barrier.
  Status Barrier(const std::string& name, int64_t index, Nanos timeout,
                 const std::function<Status()>& interrupted);
  void Stop();

 private:
  LivenessSpoke(Fd fd, FrameAssembler in, LiveJoin join, LiveMember coordinator,
                LivenessOptions options, StopOptions stop, NoticeHandler on_notice,
                Clock& clock);
  Status Send(const LiveNotice& notice);
  void Run();
  // A notice from process 0, on the thread: answered, stored or handed on.
  void OnNotice(const LiveNotice& notice);
  void Tick(Nanos now);

  Clock& clock_;
  Fd fd_;
  FrameAssembler in_;  // what arrived with the admission is read first
  LiveJoin join_;
  LiveMember coordinator_;
  LivenessOptions options_;
  StopOptions stop_;
  NoticeHandler on_notice_;
  BoardWatch watch_;  // the thread's only
  std::mutex send_mutex_;
  // Barrier verdicts from process 0, by call index, for Barrier() to take.
  std::mutex barrier_mutex_;
  std::condition_variable barrier_done_;
  std::map<int64_t, LiveNotice> barriers_;
  PollThread thread_;  // runs Run(); its stopping() is the spoke's "stopped"
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_LIVENESS_SPOKE_H_
