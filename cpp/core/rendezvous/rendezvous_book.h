// The nodes' rendezvous's decisions, apart from any socket and any clock: which
// agents are admitted, when the job forms, who runs what in each attempt, and
// what comes after an attempt. Time is passed in (`now`, a monotonic instant).
//
// Admission, in order, for each hello (a refusal goes to that agent only and
// never disturbs the others or a running job):
//   1. the token: when the rendezvous has one or the hello carries a MAC, the
//      MAC must verify over the challenge sent on that connection
//      (rendezvous/rendezvous_wire.h); no message shows a token or a MAC;
//   2. the job id, the processes per node and MIN:MAX must be the rendezvous's;
//   3. the node name: letters, digits, '.', '_', '-'; one live agent per name
//      (the second is refused, naming both addresses);
//   4. the environment (roll_call/consistency.h): compared with the first admitted
//      node's; a difference in an entry marked must-match (jax, jaxlib,
//      platform, local device count) refuses the node, others are notes;
//   5. the job has not formed yet, or it runs with fewer than MAX nodes and grows
//      (`scale_up_after`); otherwise a late agent is refused, naming the job's nodes.
//
// Forming: when MAX nodes are in, or MIN are and none joined for `last_call`;
// at `join_timeout` with fewer than MIN, every agent is told to exit 75
// (kExitNotEnoughNodes), naming how many of how many joined, and which.
//
// The roster of an attempt: node 0 is the first admitted agent on the
// rendezvous's own machine (its connection came from the address it reached),
// else the first admitted; then the others in the order they were admitted, the
// same in every attempt. Node r runs process ids r*n .. r*n+n-1. The coordinator
// is node 0's IP as the other agents reached it, on the free port node 0 offered
// for that attempt (in its hello, then in each report).
//
// After an attempt (every node reported, or was lost): all passed -> the end,
// status 0; a node lost (its connection closed or its host unreachable) -> the
// next attempt without it, at once, while at least MIN nodes remain (survivors
// keep their order, so node 0 stays the rendezvous's machine); it does not count
// against --max-restarts, the thrash guard does: more than `max_reforms` re-forms
// within `reform_window` end the job with status 1, naming each cause. Fewer
// than MIN remain -> gathering again (returning or new nodes are admitted) for up
// to `join_timeout`, then the end with 75 naming each lost node, its host and
// since when. A node drained (its agent's drain notice, sent when it received
// SIGTERM) -> every node still running is told to stop the attempt at one agreed
// step (kStop: SIGTERM to its processes, so BackupAndRestore saves there); once all
// reported, the drained node is told to end with 143 and the next attempt runs
// without it, as after a loss (not counted; the thrash guard counts it); every node
// drained -> the end, 143. A node admitted while the job runs (growth) -> after
// `scale_up_after`, every node is told to stop the attempt at one agreed step
// (kStop); once all reported, the next attempt runs with it (not counted; the
// thrash guard counts it). A node that comes back takes its last rank when that
// rank is within the new roster (never node 0's), else it comes last. A failure -> the same nodes again while restarts are left, unless
// the first failure is the same as the previous attempt's (then the end, status
// 1); otherwise the end with the first failure's status. The first failure is the
// first report received that names one (its text), else the first failed report.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_BOOK_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_BOOK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/hmac_sha256.h"
#include "base/status.h"
#include "config/policies.h"
#include "rendezvous/rendezvous_wire.h"
#include "roll_call/consistency.h"

namespace kdist {

// The agents' exit statuses that the rendezvous decides or causes.
inline constexpr int64_t kExitNotEnoughNodes = 75;   // EX_TEMPFAIL: fewer than MIN nodes joined
inline constexpr int64_t kExitLostRendezvous = 69;   // EX_UNAVAILABLE: the rendezvous is gone
inline constexpr int64_t kExitDrained = 143;         // 128 + SIGTERM: this machine was drained

struct RendezvousOptions {
  std::string job_id;
  int64_t min_nodes = 1;
  int64_t max_nodes = 1;
  int64_t processes_per_node = 1;  // 0: the first admitted agent's (`kdist rendezvous serve`)
  Nanos last_call = std::chrono::seconds(30);
  Nanos join_timeout = std::chrono::seconds(300);
  int64_t max_restarts = 0;
  // The thrash guard: more than this many re-forms (a node lost) within
  // `reform_window` end the job with status 1.
  int64_t max_reforms = 4;
  Nanos reform_window = std::chrono::minutes(10);
  // Growth: a node admitted while the job runs with fewer than MAX waits this long (for
  // others to arrive with it), then the attempt stops at one agreed step and the next
  // runs with it. nullopt (`--scale-up-after never`): a running job admits nobody.
  std::optional<Nanos> scale_up_after = std::chrono::seconds(30);
  std::string token;  // "" only on loopback (the caller's rule)
  // Environment entries whose difference refuses a node; the others are notes.
  std::vector<std::string> must_match = {"jax", "jaxlib", "device platform", "local devices"};
  ConsistencyPolicy consistency = ConsistencyPolicy::kWarn;
};

// One attempt of the job as the rendezvous saw it (a row of its table, and of
// attempts.json in --log-dir).
struct RendezvousAttempt {
  int64_t attempt = 0;
  std::vector<std::string> nodes;  // by rank
  int64_t processes = 0;
  double started_seconds = 0;  // since the rendezvous started
  double ended_seconds = -1;   // -1: still running
  // "finished"; "failed: <the first failure>"; "node lost: ..."; "drained: ...";
  // "grown: ... joined" (several joined by "; "); "" while running.
  std::string ended;
  int64_t exit_status = 0;  // a failure's
  bool counted = true;      // against --max-restarts (a lost, drained or grown one's is not)
};

// What the rendezvous answers on one connection.
struct NodeMessage {
  uint64_t connection = 0;
  NodeReply reply;
};

class RendezvousBook {
 public:
  enum class Phase { kGathering, kRunning, kEnded };

  // How a hello arrived: the nonce of the challenge sent on its connection, the
  // frame as received (its MAC covers it), the agent's address as seen here and
  // the address of this side of the connection (the one the agent reached).
  struct Arrival {
    Nonce nonce{};
    std::string_view frame;
    std::string peer_host;
    std::string local_host;
  };

  RendezvousBook(RendezvousOptions options, Nanos start);

  // A hello: the kAdmitted or kRefused reply for its connection (and, when it
  // completes MAX nodes, every roster of attempt 0 after it).
  std::vector<NodeMessage> Offer(uint64_t connection, const NodeHello& hello,
                                 const Arrival& arrival, Nanos now);
  // A report of how attempt `report.attempt` ended on the node of `connection`;
  // what follows once every node has reported (rosters or the end). A report
  // that does not verify, comes out of order or names another attempt is
  // refused: a kRefused reply to that connection, nothing else changes.
  std::vector<NodeMessage> Report(uint64_t connection, const NodeReport& report,
                                  std::string_view frame, Nanos now);
  // The connection closed: before the job forms, its node leaves; after, the
  // node is lost (it counts as that attempt's failure).
  std::vector<NodeMessage> Leave(uint64_t connection, Nanos now);
  // The time-driven decisions: the job forms, or times out (kEnd, 75, to all).
  std::vector<NodeMessage> Tick(Nanos now);
  // When Tick next has something to decide (for the server's wait); nullopt
  // when nothing is timed.
  std::optional<Nanos> NextDeadline() const;

  Phase phase() const { return phase_; }
  int64_t attempt() const { return attempt_; }
  int64_t exit_status() const { return exit_status_; }
  // The nodes admitted, in rank order (before the job forms, in admission order).
  std::vector<std::string> NodeNames() const;
  // The line the server prints every few seconds while gathering.
  std::string ProgressLine(Nanos now) const;
  // One table of the attempts: attempt, nodes, processes, how each ended.
  std::string AttemptTable() const;
  const std::vector<RendezvousAttempt>& Attempts() const { return attempts_; }
  // The nonce of the agent on `connection` (its replies are signed over it).
  std::optional<Nonce> AgentNonce(uint64_t connection) const;
  const RendezvousOptions& options() const { return options_; }

 private:
  struct Node {
    uint64_t connection = 0;
    int64_t id = 0;  // admission number, for the environment comparison
    NodeHello hello;
    std::string peer_host;
    std::string local_host;
    Nonce challenge{};  // the nonce this side sent on the connection: the agent signs over it
    bool on_rendezvous_machine = false;
    int64_t next_port = 0;
    int64_t last_sequence = 1;
    bool reported = false;
    bool lost = false;
    Nanos lost_since{0};
    bool draining = false;  // its agent sent a drain notice: it leaves after this attempt
    Nanos joined_at{0};     // admitted while the job ran: it joins the next attempt
  };
  // A node lost while the job ran, as the 75 at the end of a new gathering names it.
  struct LostNode {
    std::string text;  // "node b (host box-b, at 10.0.0.2)"
    int64_t attempt = 0;
    Nanos since{0};
  };
  using AttemptRecord = RendezvousAttempt;

  NodeMessage Refuse(uint64_t connection, StatusCode code, std::string message) const;
  std::string Describe(const NodeHello& hello, const std::string& peer) const;
  std::string JoinedList() const;
  std::vector<NodeMessage> Seal();
  std::vector<NodeMessage> Rosters(const std::string& first_failure);
  std::vector<NodeMessage> EndAll(StatusCode code, std::string message, int64_t status);
  std::vector<NodeMessage> AfterAttempt(Nanos now);
  // Every lost node gone: the next attempt without them, or a new gathering.
  std::vector<NodeMessage> Reform(Nanos now);
  std::string LostText(Nanos now) const;
  // A drain notice: every node still running the attempt is told to stop it at one agreed
  // step (kStop); while gathering, the node leaves at once (kEnd, 143).
  std::vector<NodeMessage> Drain(Node& node, Nanos now);
  std::string NodeText(const Node& node) const;
  double SecondsSinceStart(Nanos at) const;
  NodeMessage EndOne(const Node& node, StatusCode code, std::string message, int64_t status) const;
  // Growth: the running attempt stops at one agreed step once the first joining node
  // waited `scale_up_after`.
  std::vector<NodeMessage> Grow(Nanos now);
  // The joining nodes into the roster (a returning node at its last rank when free);
  // their texts.
  std::vector<std::string> AdmitJoining();
  // kStop (at one agreed step, because `why`) to every node still running the attempt.
  std::vector<NodeMessage> StopRunningNodes(const std::string& why) const;
  Node* NodeOn(uint64_t connection);

  RendezvousOptions options_;
  Nanos job_start_;  // the rendezvous's start: the table's times count from it
  Nanos now_{0};     // the time of the event being decided (each public call sets it)
  Nanos start_;  // of the gathering in progress (the first, or one after a loss)
  Nanos last_join_{0};
  Phase phase_ = Phase::kGathering;
  int64_t attempt_ = 0;
  int64_t exit_status_ = 0;
  int64_t next_id_ = 0;
  std::vector<Node> nodes_;  // admission order while gathering, rank order after
  std::vector<Node> joining_;  // admitted while the job runs: in the next attempt
  bool growing_ = false;       // the running attempt was told to stop for them
  int64_t regather_first_id_ = 0;  // the first node admitted in a gathering after a loss
  std::map<std::string, int64_t> last_rank_;  // each node name's rank in its last roster
  std::optional<ConsistencyCheck> consistency_;
  std::string consistency_notes_;
  // The attempt in progress: its first failure and its status.
  std::string first_failure_;
  int64_t first_failure_status_ = 0;
  bool first_failure_named_ = false;  // from a report's own text, not a generic one
  std::string previous_failure_;
  int64_t counted_restarts_ = 0;  // against --max-restarts
  std::vector<LostNode> lost_;    // since the last attempt that ran with MIN or more
  std::vector<std::pair<Nanos, std::string>> reforms_;  // within the window: when, why
  std::vector<AttemptRecord> attempts_;
};

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_BOOK_H_
