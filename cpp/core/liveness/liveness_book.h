// The liveness channel's decisions, apart from any socket: what process 0
// makes of what its connections saw (LivenessBook), and what any process does
// on a notice from process 0 (DecideOnNotice) and the line it prints about a
// peer's failure (DescribeFailure). Pure: liveness/liveness_hub.cc and liveness/liveness_spoke.cc
// only move the bytes, and the tests drive these by hand.
//
// A process whose connection closes without a finish message died: the
// kernel closes a dead process's socket at once, so there is no heartbeat to
// wait out. A connection that times out instead (the kernel's keepalive and
// user timeout gave up: nothing answers from the peer's host) is about a host
// that lost power or its network, or a firewall: its process is unreachable,
// not known dead (ClassifyConnectionEnd).
#ifndef KDIST_LIVENESS_LIVENESS_BOOK_H_
#define KDIST_LIVENESS_LIVENESS_BOOK_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/policies.h"
#include "liveness/liveness_wire.h"

namespace kdist {

// A member of the job as process 0 knows it.
struct LiveMember {
  int64_t process_id = 0;
  std::string host;
  int64_t pid = 0;
  // The IP address its connection came from (process 0's, as the process
  // reached it); "" where unknown.
  std::string address;
};

// How a liveness connection ended, as its socket reported it: the errno of
// the read that failed (0: end of file, bytes that are not kdist's), when
// (wall clock, milliseconds since the Unix epoch), and the unreachable
// timeout the kernel was given (LivenessOptions::unreachable_timeout).
struct ConnectionEnd {
  int error = 0;
  int64_t at_unix_millis = 0;
  std::chrono::nanoseconds unreachable_timeout{0};
  // When the peer was last heard from (the kernel's word: SinceLastHeard), 0: unknown
  // (then the window before `at_unix_millis` stands for it).
  int64_t last_heard_unix_millis = 0;
};

// What an ended connection says about its peer.
enum class ConnectionLoss {
  kClosed,       // its process closed it or its kernel reset it: the process ended
  kUnreachable,  // nothing answers from its host (ETIMEDOUT: the keepalive probes and
                 // TCP_USER_TIMEOUT expired; EHOSTUNREACH, ENETUNREACH, EHOSTDOWN,
                 // ENETDOWN: no way there any more)
};
ConnectionLoss ClassifyConnectionEnd(int error);

// The notice about `peer` whose connection ended as `end` said: kUnreachable
// (since the window's start) or kDied with `closed_message`.
LiveNotice LostConnectionNotice(const LiveMember& peer, const ConnectionEnd& end,
                                std::string closed_message);

// Process 0's decisions: who is watched, what state each process is in,
// which failure came first, and when every process has finished. Pure; the
// hub feeds it what its sockets saw and sends what it returns.
class LivenessBook {
 public:
  LivenessBook(int64_t num_processes, LiveMember self);

  // Whether a join may be admitted: the nonce matches, the id is in
  // [1, num_processes) and not already watched. The message says why not.
  // `address`: where its connection came from, for the lines about it.
  Status Admit(const LiveJoin& join, std::string_view nonce, std::string address = "");

  // What process `from` said about itself (kFailed, kFinished or kLeft; from
  // 0 for process 0's own events). Returns the notice to send to every other
  // process and to act on locally, if any: the first failure only.
  std::optional<LiveNotice> OnNotice(int64_t from, LiveNotice notice);
  // Process `id`'s connection ended as `end` says. A running process (or
  // one that said it would go through JAX's barrier, before every process
  // finished) died, or is unreachable when the connection timed out.
  std::optional<LiveNotice> OnClosed(int64_t id, const ConnectionEnd& end = {});

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
  // The job ends by a decision of process 0 (kStopNow, kJobStalled): from now
  // on a closed connection is a process leaving, not a death, and a process
  // that joins late hears `notice`. False when the job had ended already.
  bool EndJob(const LiveNotice& notice);
  // The processes still running: admitted and neither finished, left, failed
  // nor dead, process 0 included; `with_unjoined` adds those that have not
  // joined yet while joins are open (they are on their way).
  std::set<int64_t> Running(bool with_unjoined) const;
  // Running(with_unjoined).size(), without building the set (O(1)).
  int64_t RunningCount(bool with_unjoined) const;
  // Set once every process finished or left: kAllDone's `barrier`.
  std::optional<bool> all_done() const { return all_done_; }
  const std::optional<LiveNotice>& first_failure() const { return first_failure_; }
  bool watched(int64_t id) const { return states_.count(id) != 0; }
  // How process `id` ended, as a message says it: "finished", "left",
  // "failed", "died"; "ended" while it runs or is unknown.
  const char* HowEnded(int64_t id) const;
  // The member with id `id` as it joined (nullptr when it did not).
  const LiveMember* member(int64_t id) const;

 private:
  enum class State { kRunning, kFinished, kLeft, kFailed, kDied };
  std::optional<LiveNotice> CheckAllDone();

  int64_t num_processes_;
  std::map<int64_t, State> states_;
  int64_t running_ = 0;  // the states_ that are kRunning
  void SetState(State& state, State to);  // keeps running_
  std::map<int64_t, LiveMember> members_;
  std::optional<LiveNotice> first_failure_;
  std::optional<bool> all_done_;
  bool joins_closed_ = false;
};

// What a process does on a notice from process 0.
enum class LiveAction {
  kNone,
  kReport,       // a peer failed; the policy says go on: say so once
  kExitFailure,  // a peer failed or died: say so, leave with status 1
  kExitSuccess,  // every process finished and some leave without JAX's barrier,
                 // and this one already finished: leave with status 0
  kSayStop,      // the job agreed on a stop step: say so, go on to it
  kExitStopped,  // the job stops now: say so, leave with StopExitStatus
  kExitStalled,  // the job stalled: say so, leave with status 1
};
LiveAction DecideOnNotice(const LiveNotice& notice, PeerFailurePolicy policy, bool finishing);

// Whether a notice of this kind from process 0 is the job's end: a failure,
// a death, an unreachable process, a stop now or a stall.
bool EndsTheJob(LiveKind kind);

// The one line a process prints about a peer's failure, e.g.
// "kdist: process 1 (host node-1, pid 4242) failed first: RuntimeError: boom;
// stopping process 0", or "kdist: process 2 (host node-2, pid 977, address
// 10.0.0.3) is unreachable since 20:01:07 (...)". A kUnreachable about process
// 0 in another process is this process losing the coordinator. Times are in
// this machine's local time.
std::string DescribeFailure(const LiveNotice& notice, int64_t self, LiveAction action);

// The line a process prints about its own uncaught exception, before it tells
// the others and leaves: "kdist: process 1 (host node-1, pid 4242) failed:
// RuntimeError: boom; told the other processes; stopping process 1".
std::string DescribeOwnFailure(const LiveMember& self, const std::string& message);

// What asked the job to stop, from a kStopQuery, kStopAt or kStopNow: the
// signal's name ("SIGTERM"), or request_stop("<reason>").
std::string DescribeStopCause(const LiveNotice& notice);

// The status every process leaves with when the job stops now: 128 + the stop
// signal (143 for SIGTERM), as a shell reports a process that signal ended; a
// request from code counts as SIGTERM.
int StopExitStatus(const LiveNotice& notice);

// The lines about the job's stop and stall (kStopAt, kStopNow, kJobStalled):
//   kdist: process 1 (host node-1, pid 4242) asked to stop (SIGTERM); every
//     process stops at step 1043
//   kdist: process 1 (host node-1, pid 4242) asked to stop (SIGTERM) and no
//     process calls kdist.should_stop(step); stopping process 0 (status 143)
//   kdist: the job stalled: process 1 (host node-1, pid 4242) made no progress
//     for 600 s at step 1042; ...; stopping process 0
std::string DescribeStop(const LiveNotice& notice, int64_t self);

}  // namespace kdist

#endif  // KDIST_LIVENESS_LIVENESS_BOOK_H_
