// The roll call's decisions, apart from any socket: given the hellos that
// arrive (and the connections that close), who has joined, who is missing,
// and whether a hello is accepted, refused alone, or fails the whole job.
//
// Checks, in order, for each hello:
//   1. token: when process 0 has KDIST_ROLL_CALL_TOKEN or the hello carries
//      a MAC, the MAC must verify: HMAC-SHA-256 under process 0's token over
//      the nonce it sent on that connection and the hello's bytes
//      (roll_call/roll_call_wire.h), compared in constant time. A failure refuses that
//      hello only: a process that cannot prove it belongs to the job cannot
//      stop it. No message shows a token or a MAC.
//   2. num_processes, 3. coordinator address, 4. config fingerprint: a
//      difference fails the roll call for every process, naming both values.
//   5. process id out of [0, num_processes), 6. an id already present
//      (process 0 included): fail the roll call, naming both claimants.
#ifndef KDIST_ROLL_CALL_ROLL_CALL_H_
#define KDIST_ROLL_CALL_ROLL_CALL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "roll_call/consistency.h"
#include "roll_call/roll_call_wire.h"

namespace kdist {


// "process 1 (host node-1, pid 4242)".
std::string DescribeProcess(const Hello& hello);

class RollCall {
 public:
  enum class Outcome { kJoined, kRefused, kFailed };
  struct Verdict {
    Outcome outcome = Outcome::kJoined;
    Status status;  // kRefused: sent to that process only; kFailed: sent to every process
  };
  struct Member {
    uint64_t connection = 0;
    Hello hello;
  };

  // How a hello arrived: the nonce process 0 challenged its connection with,
  // and the bytes its MAC covers (FrameMacInput of the frame received). With
  // no mac_input (the default) no MAC can verify. (No member initializers:
  // `= {}` below value-initializes it, the nonce to zeros.)
  struct Arrival {
    Nonce nonce;
    std::string_view mac_input;
  };

  // `own` is process 0's hello; its token is the key every hello's MAC must
  // be made with. `fingerprint` is process 0's environment fingerprint, which
  // every hello's is compared with under `consistency` (roll_call/consistency.h).
  // `process_hosts`, by process id, names the hosts of processes that have
  // not arrived (from the job's address list, when it names every process).
  explicit RollCall(Hello own, Fingerprint fingerprint = {},
                    ConsistencyPolicy consistency = ConsistencyPolicy::kOff,
                    std::vector<std::string> process_hosts = {});

  Verdict Offer(uint64_t connection, const Hello& hello, const Arrival& arrival = {});
  // The process on `connection` went away: its id is missing again. Returns
  // that id, or nullopt when the connection held no member.
  std::optional<int64_t> Leave(uint64_t connection);
  // The connection holding `process_id`, if any.
  std::optional<uint64_t> ConnectionOf(int64_t process_id) const;

  int64_t joined() const { return static_cast<int64_t>(members_.size()) + 1; }  // + process 0
  bool complete() const { return joined() >= own_.num_processes; }
  const std::map<int64_t, Member>& members() const { return members_; }
  std::vector<int64_t> MissingIds() const;

  // The environment differences let pass, one line each ("" when none): for
  // every process to warn with, once all have joined.
  std::string ConsistencyNotes() const;

  // A connection that did not speak the protocol was dropped.
  void NoteDropped(const std::string& reason);
  int64_t dropped() const { return dropped_; }

  // "2 of 4 processes joined; missing process ids [1, 3]; 12 s of 300 s".
  // Lists the missing ids: O(num_processes), for the periodic progress line.
  std::string ProgressLine(const std::string& times) const;
  // "2 of 4 processes joined; 12 s of 300 s": the acknowledgement of each
  // hello, in constant time.
  std::string JoinedLine(const std::string& times) const;
  // The status at the deadline: "the roll call timed out after 3 s with 1 of
  // 2 joined; missing process ids [1]. ..." `where` says where process 0 listened.
  Status TimedOut(const std::string& timeout_text, const std::string& where) const;

 private:
  std::string Self() const;  // process 0 described
  std::string Notes() const;
  // Offer's checks, in order; each returns the verdict when the hello fails it.
  std::optional<Verdict> TokenRefusal(const std::string& who, const Hello& hello,
                                      const Arrival& arrival);
  std::optional<Verdict> SettingDisagreement(const std::string& who, const Hello& hello) const;
  std::optional<Verdict> IdConflict(uint64_t connection, const std::string& who,
                                    const Hello& hello) const;

  std::string HostOf(int64_t process_id) const;
  // "missing process ids [1, 3-5]", with " on hosts node-[1,3-5]" where known.
  std::string MissingText() const;

  Hello own_;
  ConsistencyCheck consistency_;
  std::vector<std::string> process_hosts_;
  std::map<int64_t, Member> members_;          // by process id
  std::map<uint64_t, int64_t> by_connection_;  // connection -> process id
  int64_t dropped_ = 0;
  std::vector<std::string> notes_;  // first refusals and drops, for the timeout message
  int64_t unnoted_ = 0;
};

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_ROLL_CALL_H_
