// This process's end of the liveness channel, and what the process does when the
// job's end reaches it.
//
// One object per process: process 0's hub (liveness/liveness_hub.h; a job of one
// process, or a process outside a job, has one too, without a listener) or another
// process's spoke (liveness/liveness_spoke.h), behind one interface. On each notice
// from the channel's thread it acts as DecideOnNotice (liveness/liveness_book.h)
// says: prints this process's one line about the job's end, appends the verdict
// record (liveness/verdict_record.h) to the job's verdict file, and leaves with the
// exit status the end gives: 1 for a failure or a stall, 128 + the signal for a stop,
// 0 once every process finished. All of it on the channel's thread, without the GIL,
// so that it works while the program's main thread is stuck in a collective.
//
// Leaving is passed in (ChannelHooks): Python's flush, the line's writer and the exit
// itself, so that the C++ tests drive the whole exit policy with a fake exit and a
// manual clock; the defaults write to stderr and call _exit.
//
// Every setting comes from the ClusterSpec (LivenessOptionsOf, StopOptionsOf): the
// process count and hosts, the unreachable window, on_peer_failure, the stall
// watchdog, the verdict file.
#ifndef KDIST_LIVENESS_LIVENESS_CHANNEL_H_
#define KDIST_LIVENESS_LIVENESS_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/waiter.h"
#include "config/cluster_spec.h"
#include "liveness/board_watch.h"
#include "liveness/liveness_book.h"
#include "liveness/liveness_connection.h"
#include "liveness/liveness_hub.h"
#include "liveness/liveness_spoke.h"
#include "liveness/liveness_wire.h"
#include "liveness/verdict_record.h"
#include "net/address.h"
#include "stop/stop_board.h"

namespace kdist {

// How this process leaves. Each may be empty: the default is used.
struct ChannelHooks {
  // Flushes what the program printed, waiting at most `bound` (the bindings flush
  // Python's sys.stdout and sys.stderr). Default: nothing to flush.
  std::function<void(Nanos bound)> flush;
  // Writes one line (without its newline) where the user reads it. Default: stderr.
  std::function<void(const std::string& line)> say;
  // Ends the process with `status`. Default: _exit. A test's may return: the
  // channel then behaves as if the process had left (it says nothing more).
  std::function<void(int status)> exit;
  // How long a flush may take before the process leaves without it.
  Nanos flush_bound = std::chrono::seconds(1);
  // The channel's clock (monotonic, thread-safe, outliving the channel); nullptr:
  // the channel's own RealClock.
  Clock* clock = nullptr;
};

// The channel's settings, from the spec (the keepalive sized from the unreachable
// timeout), and this process's stop options (`board`: its StopBoard, or nullptr).
LivenessOptions LivenessOptionsOf(const ClusterSpec& spec);
StopOptions StopOptionsOf(const ClusterSpec& spec, StopBoard* board);

// This process as the channel names it: `process_id`, its host name (uname's, as
// the roll call names it) and pid.
LiveMember ThisProcess(int64_t process_id);

// How a finish ended (LivenessChannel::Finish).
enum class FinishOutcome {
  kBarrier,    // every process goes through JAX's shutdown barrier
  kNoBarrier,  // JAX's barrier cannot complete: a process left without it, or a
               // peer's failure was let pass (on_peer_failure "ignore")
  kEnding,     // the job ended meanwhile: the channel's thread is ending this process
};

class LivenessChannel {
 public:
  // Process 0: a hub listening on an ephemeral port, admitting joins with a fresh
  // nonce it draws itself (read them back with port() and nonce(), for "go");
  // `alone`: this process's own channel outside a job (no listener).
  static Result<std::unique_ptr<LivenessChannel>> StartHub(const ClusterSpec& spec,
                                                           StopBoard* board, bool alone,
                                                           ChannelHooks hooks = {});
  // Another process, after "go": joins the hub at `hub` with the `nonce` "go"
  // carried, within `join_timeout`; `coordinator` names process 0 (its host and
  // pid from "go", the address that answered).
  static Result<std::unique_ptr<LivenessChannel>> Join(const ClusterSpec& spec, StopBoard* board,
                                                       const Endpoint& hub,
                                                       const std::string& nonce,
                                                       LiveMember coordinator,
                                                       Nanos join_timeout,
                                                       ChannelHooks hooks = {});
  ~LivenessChannel();
  LivenessChannel(const LivenessChannel&) = delete;
  LivenessChannel& operator=(const LivenessChannel&) = delete;

  // Process 0's listening port and the nonce it admits (0 and "" elsewhere).
  uint16_t port() const;
  const std::string& nonce() const { return nonce_; }
  const LiveMember& self() const { return self_; }

  // This process failed with `message`: records it, tells every process (best
  // effort, bounded) and returns the line to print about it.
  std::string ReportFailure(const std::string& message);
  // request_stop(reason), and this process's barrier call: as the hub's and spoke's.
  Status RequestStop(const std::string& reason);
  Status Barrier(const std::string& name, int64_t index, Nanos timeout,
                 const std::function<Status()>& interrupted);
  // This process's work is done (`barrier`: it goes through JAX's shutdown
  // barrier). Process 0 then waits until every process finished, at most
  // `timeout`, with wait.progress naming whom it waits for every
  // wait.progress_interval, and wait.interrupted asked between waits; once all
  // finished and some leave without JAX's barrier, it gives their connections a
  // moment to close, so that it leaves last. kDeadlineExceeded: process 0 waited
  // `timeout` (the message names whom); the caller leaves anyway.
  Result<FinishOutcome> Finish(bool barrier, Nanos timeout, const WaitOptions& wait);

  // Acts on a notice from process 0 (or, in process 0, from its own hub), as the
  // channel's thread does.
  void Act(const LiveNotice& notice);

  // The lines said about peers' failures that were let pass ("ignore").
  std::vector<std::string> Reported();
  // Whether the job's end was decided (a failure, a stop, a stall).
  bool JobEnded();
  // The process ids that joined process 0's hub (empty elsewhere).
  std::vector<int64_t> Watched();
  void Stop();

 private:
  LivenessChannel(const ClusterSpec& spec, int64_t process_id, ChannelHooks hooks);
  void Record(VerdictEvent event, const LiveMember& about, const std::string& message,
              int64_t step, int exit_status, const std::string& line);
  void Say(const LiveNotice& notice, const std::string& line, int exit_status);
  void Leave(const LiveNotice& notice, const std::string& line, int status);
  void Exit(int status);

  RealClock own_clock_;
  Clock& clock_;
  ChannelHooks hooks_;
  LiveMember self_;
  PeerFailurePolicy policy_;
  std::string verdict_file_;
  std::string nonce_;
  std::unique_ptr<LivenessHub> hub_;
  std::unique_ptr<LivenessSpoke> spoke_;
  std::atomic<bool> finishing_{false};
  std::atomic<bool> ended_{false};
  std::atomic<bool> leaving_{false};
  std::mutex mutex_;
  std::vector<std::string> reported_;
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_LIVENESS_CHANNEL_H_
