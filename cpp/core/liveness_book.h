// The liveness channel's decisions, apart from any socket: what process 0
// makes of what its connections saw (LivenessBook), and what any process does
// on a notice from process 0 (DecideOnNotice) and the line it prints about a
// peer's failure (DescribeFailure). Pure: liveness_hub.cc and liveness_spoke.cc
// only move the bytes, and the tests drive these by hand.
//
// A process whose connection closes without a finish message died: the
// kernel closes a dead process's socket at once, so there is no heartbeat to
// wait out.
#ifndef KDIST_LIVENESS_BOOK_H_
#define KDIST_LIVENESS_BOOK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "liveness_wire.h"
#include "status.h"

namespace kdist {

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

}  // namespace kdist

#endif  // KDIST_LIVENESS_BOOK_H_
