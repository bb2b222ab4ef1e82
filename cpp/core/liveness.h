// The liveness channel: after the roll call's "go", every process keeps one
// TCP connection to process 0, so that a process that fails or dies is known
// to every other process at once, and a process that finishes says so.
//
// Process 0 runs a LivenessHub (a listener on an ephemeral port, announced in
// "go" with a nonce); every other process runs a LivenessSpoke that connects
// to it, presents the nonce and is admitted. Each runs one thread that only
// moves bytes; what an event means is decided by LivenessBook (process 0) and
// DecideOnNotice (every process), apart from any socket.
//
// Events (a LiveNotice):
//   a process -> process 0: "I failed: <message>", "I finished" (and whether
//     it goes through JAX's shutdown barrier, or leaves without it);
//   process 0 -> every process: "process N failed first: ...", "process N
//     died", "every process finished".
// A process whose connection closes without a finish message died: the
// kernel closes a dead process's socket at once, so there is no heartbeat to
// wait out. A host that vanishes is caught by TCP keepalive.
//
// Frames use the framing the roll call also uses (wire.h): the 12-byte header
// with types kFrameLiveJoin and kFrameLiveNotice (declared in wire.h), then
// tagged fields.
#ifndef KDIST_LIVENESS_H_
#define KDIST_LIVENESS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "clock.h"
#include "socket.h"
#include "status.h"
#include "wire.h"

namespace kdist {

// A process asking process 0 to be watched.
struct LiveJoin {
  int64_t process_id = 0;
  std::string nonce;  // from "go"
  std::string host;
  int64_t pid = 0;
};

enum class LiveKind : int64_t {
  kFailed = 1,     // an uncaught exception; `message` says which
  kDied = 2,       // its connection closed without a finish message
  kFinished = 3,   // its work is done; it goes through JAX's shutdown barrier
  kLeft = 4,       // its work is done; it leaves without JAX's barrier (os._exit)
  kAllDone = 5,    // process 0 -> all: every process finished; `barrier`: all use JAX's
  kAdmitted = 6,   // process 0 -> a joining process: you are watched
};
const char* LiveKindName(LiveKind kind);

struct LiveNotice {
  LiveKind kind = LiveKind::kFailed;
  int64_t process_id = 0;  // the process it is about
  std::string host;
  int64_t pid = 0;
  std::string message;     // kFailed: "RuntimeError: injected failure"; kDied: how it ended
  bool barrier = true;     // kAllDone: whether every process goes through JAX's barrier
};

std::string EncodeLiveJoin(const LiveJoin& join);
std::string EncodeLiveNotice(const LiveNotice& notice);
// One whole frame each; kInvalidArgument for anything malformed or of
// another type, kFailedPrecondition for another protocol version.
Result<LiveJoin> DecodeLiveJoin(std::string_view frame);
Result<LiveNotice> DecodeLiveNotice(std::string_view frame);

// A member of the job as process 0 knows it.
struct LiveMember {
  int64_t process_id = 0;
  std::string host;
  int64_t pid = 0;
};

// Process 0's decisions: who is watched, what state each process is in,
// which failure came first, and when every process has finished. Pure; the
// hub feeds it what its sockets saw and sends what it returns.
class LivenessBook {
 public:
  LivenessBook(int64_t num_processes, LiveMember self);

  // Whether a join may be admitted: the nonce matches, the id is in
  // [1, num_processes) and not already watched. The message says why not.
  Status Admit(const LiveJoin& join, std::string_view nonce);

  // What process `from` said about itself (kFailed, kFinished or kLeft; from
  // 0 for process 0's own events). Returns the notice to send to every other
  // process and to act on locally, if any: the first failure only.
  std::optional<LiveNotice> OnNotice(int64_t from, LiveNotice notice);
  // Process `id`'s connection closed. A running process (or one that said it
  // would go through JAX's barrier, before every process finished) died.
  std::optional<LiveNotice> OnClosed(int64_t id);

  // The members (0 included) that have not yet finished, left or ended; empty
  // once every process finished or a failure ended the job.
  std::vector<LiveMember> Waiting() const;
  // The ids in [1, num_processes) that have not joined, while joins are open;
  // the job is not done while one is missing (it may still be on its way).
  std::vector<int64_t> NotJoined() const;
  // Stops waiting for the processes that have not joined (they run without
  // the channel: their join failed, and they said so); returns kAllDone when
  // the watched ones have all finished already.
  std::optional<LiveNotice> CloseJoins();
  // Set once every process finished or left: kAllDone's `barrier`.
  std::optional<bool> all_done() const { return all_done_; }
  const std::optional<LiveNotice>& first_failure() const { return first_failure_; }
  bool watched(int64_t id) const { return states_.count(id) != 0; }

 private:
  enum class State { kRunning, kFinished, kLeft, kFailed, kDied };
  std::optional<LiveNotice> CheckAllDone();

  int64_t num_processes_;
  std::map<int64_t, State> states_;
  std::map<int64_t, LiveMember> members_;
  std::optional<LiveNotice> first_failure_;
  std::optional<bool> all_done_;
  bool joins_closed_ = false;
};

enum class PeerFailurePolicy { kExit, kIgnore };

// What a process does on a notice from process 0.
enum class LiveAction {
  kNone,
  kReport,       // a peer failed; the policy says go on: say so once
  kExitFailure,  // a peer failed or died: say so, leave with status 1
  kExitSuccess,  // every process finished and some leave without JAX's barrier,
                 // and this one already finished: leave with status 0
};
LiveAction DecideOnNotice(const LiveNotice& notice, PeerFailurePolicy policy, bool finishing);

// The one line a process prints about a peer's failure, e.g.
// "kdist: process 1 (host node-1, pid 4242) failed first: RuntimeError: boom;
// stopping process 0".
std::string DescribeFailure(const LiveNotice& notice, int64_t self, LiveAction action);

struct LivenessOptions {
  // How long process 0 waits for a connection's join, a joining process for
  // the connection and its admission, and a send for room in the socket.
  Nanos join_timeout = std::chrono::seconds(5);
  Nanos send_timeout = std::chrono::seconds(2);
  // TCP keepalive (and TCP_USER_TIMEOUT) on every connection: a host that
  // vanishes is noticed after about idle + interval * count.
  Nanos keepalive_idle = std::chrono::seconds(10);
  Nanos keepalive_interval = std::chrono::seconds(5);
  int keepalive_count = 3;
};

// Keepalive settings that notice a vanished host within about
// `heartbeat_timeout` (JAX's own bound for the same thing), at least 1 s each.
LivenessOptions LivenessOptionsFor(Nanos heartbeat_timeout);

// Called on the channel's thread for every notice from process 0 (a
// synthesized kDied for process 0 when its connection closes before kAllDone).
using NoticeHandler = std::function<void(const LiveNotice&)>;

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
  Fd wake_read_, wake_write_;
  std::mutex mutex_;  // guards book_, peers_ writes, queue_
  std::condition_variable changed_;
  LivenessBook book_;
  std::map<uint64_t, std::unique_ptr<Peer>> peers_;
  uint64_t next_key_ = 0;
  std::optional<Nanos> close_joins_at_;  // set by Finish (a RealClock time)
  std::set<int64_t> told_;  // joined after a failure ended the job, and were told it
  // A failure process 0 has not acted on yet (the hub's thread only).
  std::optional<LiveNotice> deferred_;
  Nanos deferred_until_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

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
  Fd wake_read_, wake_write_;
  std::mutex send_mutex_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Keepalive and TCP_USER_TIMEOUT on a connected socket (best effort).
void SetKeepalive(int fd, const LivenessOptions& options);

}  // namespace kdist

#endif  // KDIST_LIVENESS_H_
