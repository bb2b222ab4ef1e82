// The liveness channel, process 0's side: after the roll call's "go", every
// other process keeps one TCP connection to process 0, so that a process that
// fails or dies is known to every other process at once, a process that
// finishes says so, and the job stops together (a stop request agreed on one
// step, a stall named, barriers with deadlines).
//
// Process 0 runs a LivenessHub: a listener on an ephemeral port, announced in
// "go" with a nonce; every other process runs a LivenessSpoke
// (liveness/liveness_spoke.h) that connects to it, presents the nonce and is admitted.
// A job of one process (no coordinator, or no roll call) runs a hub without a
// listener: the same decisions about its own stop signals, stalls and
// barriers. The hub's one thread (a PollThread) only moves bytes
// (liveness/liveness_wire.h, liveness/liveness_connection.h); what an event means is decided by
// the books, apart from any socket: LivenessBook (failures and finishes),
// StopBook, StallBook and BarrierBook.
//
// The hub's code is in four files, one concern each: liveness_hub.cc (start and stop,
// process 0's own failure and finish, the wait for the end, sending and handing notices
// on), liveness_hub_admission.cc (a joining connection's checks),
// liveness_hub_stopping.cc (request_stop, barriers, the stop agreement and stalls: what
// the books decide, sent) and liveness_hub_loop.cc (the thread: one epoll set, frames
// in, connections closed).
#ifndef KDIST_LIVENESS_LIVENESS_HUB_H_
#define KDIST_LIVENESS_LIVENESS_HUB_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "liveness/barrier_book.h"
#include "liveness/board_watch.h"
#include "liveness/liveness_book.h"
#include "liveness/liveness_connection.h"
#include "liveness/liveness_wire.h"
#include "liveness/stall_book.h"
#include "net/event_poller.h"
#include "net/poll_thread.h"
#include "net/socket.h"
#include "stop/stop_book.h"

namespace kdist {

// The longest process 0 delays acting on a failure (under policy "exit": its
// own exit) so that processes still joining hear of it rather than waiting in
// JAX for a process 0 that is gone.
inline constexpr Nanos kMaxExitDelay = std::chrono::seconds(2);

// Process 0's side. Thread-safe.
class LivenessHub {
 public:
  // Listens on an ephemeral port on every interface (not for a job of one
  // process); `nonce` is what joins must present; `hosts`: the host of each
  // process id where known, for messages. The thread starts at once. Every time
  // the hub keeps (join, barrier and stall deadlines, a deferred failure) is read
  // from `clock`, which must be monotonic, thread-safe and outlive the hub (the
  // bindings' RealClock; a test's shifted one).
  static Result<std::unique_ptr<LivenessHub>> Start(int64_t num_processes, LiveMember self,
                                                    std::string nonce, LivenessOptions options,
                                                    StopOptions stop, NoticeHandler on_notice,
                                                    Clock& clock,
                                                    std::vector<std::string> hosts = {});
  ~LivenessHub();
  LivenessHub(const LivenessHub&) = delete;
  LivenessHub& operator=(const LivenessHub&) = delete;

  uint16_t port() const { return port_; }

  // Process 0's own events: its failure (sent to every process, bounded by
  // send_timeout, and then waited on until the others left, at most
  // kMaxExitDelay: process 0 leaves last) or its finish. After its finish, the
  // processes that have not joined get options.join_timeout more to join;
  // then the job's end no longer waits for them.
  Status ReportFailure(const std::string& message);
  Status Finish(bool barrier);
  // request_stop(reason) in process 0.
  Status RequestStop(const std::string& reason);
  // Process 0 at its barrier call `index` named `name`: returns once every
  // running process has reached it (ok), or fails: kDeadlineExceeded after
  // `timeout` (the message names who did not arrive), kFailedPrecondition when
  // names differ or a process left without it; `interrupted` is asked between
  // waits (Ctrl-C).
  Status Barrier(const std::string& name, int64_t index, Nanos timeout,
                 const std::function<Status()>& interrupted);
  // Waits until every watched process finished (returns kAllDone's barrier),
  // a failure ended the job (kFailedPrecondition), `timeout` passed
  // (kDeadlineExceeded), or `interrupted` says stop. `progress` gets a line
  // naming whom it waits for, at once and every `progress_interval`.
  Result<bool> WaitAllDone(Nanos timeout, Nanos progress_interval,
                           const std::function<void(const std::string&)>& progress,
                           const std::function<Status()>& interrupted);
  // The processes that joined the channel (admitted), by id.
  std::vector<int64_t> Watched();
  // Whether a failure, a stop or a stall ended the job.
  bool JobEnded();
  // Stops the thread and closes every connection (idempotent).
  void Stop();

 private:
  // A connection to the hub: joining until admitted, then a process's.
  struct Peer {
    Fd fd;
    FrameAssembler in;
    int64_t process_id = -1;  // -1 until admitted
    Nanos join_by{0};
  };
  using Peers = std::map<uint64_t, std::unique_ptr<Peer>>;
  // The keys of the hub's one epoll set: the wake pipe, the listener, then each
  // connection by its key in peers_ plus kFirstPeerKey.
  static constexpr uint64_t kWakeKey = 0, kListenerKey = 1, kFirstPeerKey = 2;

  LivenessHub(Listener listener, int64_t num_processes, LiveMember self, std::string nonce,
              LivenessOptions options, StopOptions stop, NoticeHandler on_notice, Clock& clock,
              std::vector<std::string> hosts);

  // --- liveness_hub.cc: sending and handing on ----------------------------------------
  // With mutex_ held: to every admitted process but the one the notice is about.
  void Broadcast(const LiveNotice& notice);
  // With mutex_ held: to every admitted process.
  void SendToAll(const LiveNotice& notice);
  // With mutex_ held: to one admitted process (nothing when it is not admitted).
  void SendTo(int64_t process_id, const LiveNotice& notice);
  void SendFrameTo(int64_t process_id, const std::string& frame);  // an encoded notice
  // With mutex_ held: a notice the book returned, told to every other process and
  // queued in `local` for process 0's own handler.
  void BroadcastAndQueue(const std::optional<LiveNotice>& notice, std::vector<LiveNotice>& local);
  // Hands queued notices to on_notice_ (see Run); a failure waits while a
  // process has not joined and not been told, at most kMaxExitDelay.
  void Deliver(std::vector<LiveNotice>& local);
  // Process 0's own failure or finish: told to every process (a finish also
  // starts the countdown to close_joins_at_).
  Status OwnEvent(const LiveNotice& notice);
  bool AnyoneUntold();

  // --- liveness_hub_admission.cc: joining connections, with mutex_ held ----------------
  // Accepts what the listener has waiting (bounded), each given join_timeout to join.
  void AcceptJoining();
  // Closes (with a reset) the connections whose join time passed unadmitted; returns
  // `next_expiry` shortened to the next one's join time.
  Nanos DropLateJoiners(Nanos now, Nanos next_expiry);
  // A connection's first frame: admits it (true) or refuses it (false), setting
  // `told` when it heard the failure that ended the job (so it is closed, not reset).
  bool AdmitOrRefuse(Peer& peer, const std::string& frame, bool& told);

  // --- liveness_hub_stopping.cc: stopping together, with mutex_ held --------------------
  // Each may queue notices for process 0's own handler in `local`.
  void OnStopRequest(const StopRequest& request, std::vector<LiveNotice>& local);
  void ActOnStop(StopBook::Action action, std::vector<LiveNotice>& local);
  void OnStalled(int64_t from, std::vector<LiveNotice>& local);
  void OnProgressReport(int64_t from, const LiveNotice& notice, std::vector<LiveNotice>& local);
  void ActOnStallVerdict(const std::optional<StallVerdict>& verdict,
                         std::vector<LiveNotice>& local);
  void EndStalled(std::vector<LiveNotice>& local);
  void OnBarrierArrive(int64_t from, const LiveNotice& notice);
  void Deliver(const std::vector<BarrierVerdict>& verdicts);
  // A process left (finished, failed, died): nobody waits for it any more.
  void OnGone(int64_t process_id, std::vector<LiveNotice>& local);
  // What the hub does at every tick: its own board, deadlines.
  void Tick(Nanos now, std::vector<LiveNotice>& local);
  Nanos NextTick(Nanos now) const;

  // --- liveness_hub_loop.cc: the thread ------------------------------------------------
  void Run();
  // With mutex_ held: what an admitted process said.
  void OnPeerNotice(int64_t from, const LiveNotice& notice, std::vector<LiveNotice>& local);
  // With mutex_ held: the frames a connection has ready, then its end when it closed.
  void ReadFrom(Peers::iterator it, std::vector<LiveNotice>& local);

  Clock& clock_;
  Listener listener_;
  uint16_t port_ = 0;
  LiveMember self_;
  std::string nonce_;
  LivenessOptions options_;
  StopOptions stop_;
  NoticeHandler on_notice_;
  // Guards the books, peers_, close_joins_at_, told_ and the stall and barrier
  // state below.
  std::mutex mutex_;
  std::condition_variable changed_;
  LivenessBook book_;
  Peers peers_;
  std::map<int64_t, Peer*> admitted_;  // the peers of peers_ that were admitted, by id
  uint64_t next_key_ = 0;
  std::deque<uint64_t> unjoined_;  // keys of peers_ accepted, maybe not admitted yet, in order
  std::unique_ptr<EventPoller> poller_;  // the hub's thread's epoll set
  std::optional<Nanos> close_joins_at_;  // set by Finish (a clock_ time)
  std::set<int64_t> told_;  // joined after a failure ended the job, and were told it
  // Deliver runs on the hub's thread and on RequestStop's caller: this makes
  // them take turns, so that a deferred notice is handed on once, and guards
  // the failure process 0 has not acted on yet.
  std::mutex deliver_mutex_;
  std::optional<LiveNotice> deferred_;
  Nanos deferred_until_{0};

  StopBook stop_book_;
  BoardWatch watch_;
  std::optional<StallBook> stall_book_;
  Nanos stall_answers_by_{0};       // while the stall round's answers come in
  std::optional<StallVerdict> stall_verdict_;
  std::set<int64_t> dumping_;       // stuck processes whose stacks are awaited
  Nanos dumps_by_{0};
  BarrierBook barrier_book_;
  // Process 0's own barrier results, by call index.
  std::map<int64_t, BarrierVerdict> own_barriers_;

  PollThread thread_;  // runs Run(); its stopping() is the hub's "stopped"
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_LIVENESS_HUB_H_
