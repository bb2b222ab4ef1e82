// The liveness channel, process 0's side: after the roll call's "go", every
// other process keeps one TCP connection to process 0, so that a process that
// fails or dies is known to every other process at once, and a process that
// finishes says so.
//
// Process 0 runs a LivenessHub: a listener on an ephemeral port, announced in
// "go" with a nonce; every other process runs a LivenessSpoke
// (liveness_spoke.h) that connects to it, presents the nonce and is admitted.
// The hub's one thread (a PollThread) only moves bytes (liveness_wire.h,
// liveness_connection.h); what an event means is decided by LivenessBook
// (liveness_book.h), apart from any socket.
#ifndef KDIST_LIVENESS_HUB_H_
#define KDIST_LIVENESS_HUB_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clock.h"
#include "liveness_book.h"
#include "liveness_connection.h"
#include "liveness_wire.h"
#include "poll_thread.h"
#include "socket.h"
#include "status.h"

namespace kdist {

// The longest process 0 delays acting on a failure (under policy "exit": its
// own exit) so that processes still joining hear of it rather than waiting in
// JAX for a process 0 that is gone.
inline constexpr Nanos kMaxExitDelay = std::chrono::seconds(2);

// Process 0's side. Thread-safe.
class LivenessHub {
 public:
  // Listens on an ephemeral port on every interface; `nonce` is what joins
  // must present. The thread starts at once.
  static Result<std::unique_ptr<LivenessHub>> Start(int64_t num_processes, LiveMember self,
                                                    std::string nonce, LivenessOptions options,
                                                    NoticeHandler on_notice);
  ~LivenessHub();
  LivenessHub(const LivenessHub&) = delete;
  LivenessHub& operator=(const LivenessHub&) = delete;

  uint16_t port() const { return port_; }

  // Process 0's own events: its failure (sent to every process before this
  // returns, bounded by send_timeout) or its finish. After its finish, the
  // processes that have not joined get options.join_timeout more to join;
  // then the job's end no longer waits for them.
  Status ReportFailure(const std::string& message);
  Status Finish(bool barrier);
  // Waits until every watched process finished (returns kAllDone's barrier),
  // a failure ended the job (kFailedPrecondition), `timeout` passed
  // (kDeadlineExceeded), or `interrupted` says stop. `progress` gets a line
  // naming whom it waits for, at once and every `progress_interval`.
  Result<bool> WaitAllDone(Nanos timeout, Nanos progress_interval,
                           const std::function<void(const std::string&)>& progress,
                           const std::function<Status()>& interrupted);
  // The processes that joined the channel (admitted), by id.
  std::vector<int64_t> Watched();
  // Stops the thread and closes every connection (idempotent).
  void Stop();

 private:
  LivenessHub(Listener listener, int64_t num_processes, LiveMember self, std::string nonce,
              LivenessOptions options, NoticeHandler on_notice);
  void Run();
  void Broadcast(const LiveNotice& notice);
  void Act(const std::optional<LiveNotice>& notice, std::vector<LiveNotice>& local);
  // Hands queued notices to on_notice_ (see Run); a failure waits while a
  // process has not joined and not been told, at most kMaxExitDelay.
  void Deliver(std::vector<LiveNotice>& local);
  // Process 0's own failure or finish: told to every process (a finish also
  // starts the countdown to close_joins_at_).
  Status OwnEvent(const LiveNotice& notice);
  bool AnyoneUntold();

  struct Peer;
  Listener listener_;
  uint16_t port_ = 0;
  std::string nonce_;
  LivenessOptions options_;
  NoticeHandler on_notice_;
  std::mutex mutex_;  // guards book_, peers_, close_joins_at_ and told_
  std::condition_variable changed_;
  LivenessBook book_;
  std::map<uint64_t, std::unique_ptr<Peer>> peers_;
  uint64_t next_key_ = 0;
  std::optional<Nanos> close_joins_at_;  // set by Finish (a RealClock time)
  std::set<int64_t> told_;  // joined after a failure ended the job, and were told it
  // A failure process 0 has not acted on yet (the hub's thread only).
  std::optional<LiveNotice> deferred_;
  Nanos deferred_until_{0};
  PollThread thread_;  // runs Run(); its stopping() is the hub's "stopped"
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_HUB_H_
