// The nodes' rendezvous's decisions, apart from any socket and any clock: which
// agents are admitted, when the job forms, who runs what in each attempt, and
// what comes after an attempt. Time is passed in (`now`, a monotonic instant).
// One class, its concerns in one file each: admission (rendezvous_admission.cc),
// forming an attempt (rendezvous_forming.cc), an attempt's end and the restart
// rule, kept by the job's ledger (rendezvous_attempts.cc, job/attempt_ledger.h),
// a machine lost, drained or added (rendezvous_elastic.cc), and what they share
// (rendezvous_book.cc).
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
// against --max-restarts, the thrash guard does (job/attempt_ledger.h). Fewer
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
// rank is within the new roster (never node 0's), else it comes last. A failure
// -> the same nodes again, as the ledger's one restart rule says (the same
// failure at the same point twice: status 1; no restart left: the failure's
// status). The first failure is the first report received that names one (a
// JobFailure of its own), else the first failed report.
//
// A book kept in a store (`--rendezvous etcd://...`, rendezvous/rendezvous_state.h):
// its whole state is saved after each change (EncodeState) and restored on another
// machine (Restore) when the machine that ran it is lost; it decides exactly as the
// original would (rendezvous_takeover.cc). A restored book's nodes are detached until
// their agents come back: a hello whose purpose is kRejoin from the same agent (its node name,
// host and pid) takes its node back, rank, attempt and all, and is sent what it may have
// missed (the running attempt's roster, a stop, the end); a node whose agent is gone
// (NodeGone: its key in the store expired) or not back within `reconnect_window` is lost,
// as a closed connection is.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_BOOK_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_BOOK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/hmac_sha256.h"
#include "base/status.h"
#include "config/policies.h"
#include "job/attempt_ledger.h"
#include "job/job_failure.h"
#include "rendezvous/rendezvous_wire.h"
#include "roll_call/consistency.h"

namespace kdist {

// The most nodes a line names (the progress line, an admission, a refusal, a timeout):
// then "and N more". Each agent is sent such a line, so its length must not grow with the job.
inline constexpr size_t kListedNodes = 16;

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
  // --max-restarts and the thrash guard (job/attempt_ledger.h).
  LedgerOptions ledger;
  // Growth: a node admitted while the job runs with fewer than MAX waits this long (for
  // others to arrive with it), then the attempt stops at one agreed step and the next
  // runs with it. nullopt (`--scale-up-after never`): a running job admits nobody.
  std::optional<Nanos> scale_up_after = std::chrono::seconds(30);
  std::string token;  // "" only on loopback (the caller's rule)
  // The job's run (NodeReply::run_id): the same in every attempt, another in any other job.
  std::string run_id;
  // Environment entries whose difference refuses a node; the others are notes.
  std::vector<std::string> must_match = {"jax", "jaxlib", "device platform", "local devices"};
  ConsistencyPolicy consistency = ConsistencyPolicy::kWarn;
  // A restored book: how long a detached node's agent has to come back before its node
  // is lost (the unreachable window).
  Nanos reconnect_window = std::chrono::seconds(20);
  // Each node's environment fingerprint kept after its admission: a book kept in a store
  // (its state holds them). Off for the embedded rendezvous, which never reads them again.
  bool keep_environments = false;
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

  // The book's whole state (rendezvous_state.cc): every time in it an offset from the
  // book's origin, so two saves of an unchanged book are the same bytes. JSON.
  std::string EncodeState() const;
  // The time `now` as such an offset (saved beside the state: a restored book's timers
  // go on from the last save).
  Nanos OffsetOf(Nanos now) const { return now - origin_; }
  // A book that goes on from `state` (EncodeState's), `now` being `saved_offset` in its
  // times (the save's offset, plus the time since the save when known):
  // its nodes detached (above). kInvalidArgument for a malformed state;
  // kFailedPrecondition when it is another job's (its id, --nodes or -n differ).
  static Result<RendezvousBook> Restore(RendezvousOptions options, std::string_view state,
                                        Nanos saved_offset, Nanos now);
  // The agent of node `name` is gone (its key in the store expired): as if its connection
  // closed (Leave), whether or not its node is attached.
  std::vector<NodeMessage> NodeGone(const std::string& name, Nanos now);

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
  // The rendezvous's own machine leaves (its agent drained or gone) while the job still
  // gathers: every agent is told it lost the rendezvous (kEnd, 69, naming `why`). Once the
  // job has formed, nothing (the rendezvous goes on serving it).
  std::vector<NodeMessage> Abandon(const std::string& why, Nanos now);
  bool formed() const { return !ledger_.rows().empty(); }
  // When Tick next has something to decide (for the server's wait); nullopt
  // when nothing is timed.
  std::optional<Nanos> NextDeadline() const;

  Phase phase() const { return phase_; }
  int64_t attempt() const { return attempt_; }
  // The nodes whose agents have not come back since the book was restored, by name.
  std::vector<std::string> DetachedNodes() const;
  int64_t exit_status() const { return exit_status_; }
  // The nodes admitted, in rank order (before the job forms, in admission order).
  std::vector<std::string> NodeNames() const;
  // The job's state for `kdist status` and `/metrics`, JSON schema 1 (rendezvous_status.cc):
  // schema, job_id, state (gathering / running / stopping / finished / failed), attempt,
  // nodes, processes, step, restarts (cause -> count), attempts, goodput, exit_status; at
  // most `limit` bytes (the oldest attempts left off first, counted in attempts_left_off).
  std::string StatusJson(Nanos now, size_t limit = kMaxStatusBytes) const;
  // The line the server prints every few seconds while gathering.
  std::string ProgressLine(Nanos now) const;
  // One table of the attempts (AttemptLedger::Table), and its rows.
  std::string AttemptTable() const { return ledger_.Table(); }
  const std::vector<AttemptRow>& Attempts() const { return ledger_.rows(); }
  // Where the job's time went so far (job/goodput.h), one line.
  std::string GoodputLine(Nanos now) const { return ledger_.GoodputAt(now).Line(); }
  // The nonce of the agent on `connection` (its replies are signed over it).
  std::optional<Nonce> AgentNonce(uint64_t connection) const;
  const RendezvousOptions& options() const { return options_; }
  // From now on, each node admitted keeps its environment (a book kept in a store).
  void KeepEnvironments() { options_.keep_environments = true; }

 private:
  // A restored node's connection until its agent comes back: kDetachedConnection + its id
  // (no server's connection is numbered so high; messages to it go nowhere).
  static constexpr uint64_t kDetachedConnection = uint64_t{1} << 62;
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
    Nanos admitted_at{0};   // when it was admitted (`kdist status`: joined since)
    Nanos detached_since{0};  // restored, its agent not back yet (connection: Detached)
    bool detached() const { return connection >= kDetachedConnection; }
  };
  // A node lost while the job ran, as the 75 at the end of a new gathering names it.
  struct LostNode {
    std::string text;  // "node b (host box-b, at 10.0.0.2)"
    int64_t attempt = 0;
    Nanos since{0};
  };
  // Admission (rendezvous_admission.cc): each check returns the refusal, if any.
  NodeMessage Refuse(uint64_t connection, StatusCode code, std::string message) const;
  std::string Describe(const NodeHello& hello, const std::string& peer) const;
  std::optional<std::string> TokenRefusal(const NodeHello& hello, const Arrival& arrival) const;
  std::optional<NodeMessage> ShapeRefusal(uint64_t connection, const NodeHello& hello,
                                          const std::string& refused);
  std::optional<NodeMessage> NameRefusal(uint64_t connection, const NodeHello& hello,
                                         const Arrival& arrival, const std::string& refused) const;
  std::optional<NodeMessage> FormedRefusal(uint64_t connection, bool grows,
                                           const std::string& refused) const;
  std::optional<NodeMessage> EnvironmentRefusal(uint64_t connection, const NodeHello& hello,
                                                int64_t id, const std::string& refused);
  // `kdist stop`: every node stops the attempt at one agreed step and leaves with 143
  // (while gathering: at once); the asker is answered and is no node.
  std::vector<NodeMessage> StopJob(uint64_t connection, const NodeHello& hello,
                                   const Arrival& arrival);
  // `kdist status`: the job's state (StatusJson) to the asker, who is no node; another job
  // id is refused.
  std::vector<NodeMessage> StatusAnswer(uint64_t connection, const NodeHello& hello,
                                        const Arrival& arrival, Nanos now) const;
  static StepReport StepsOf(const NodeReport& report);
  std::vector<NodeMessage> Admit(uint64_t connection, const NodeHello& hello,
                                 const Arrival& arrival, int64_t id, bool grows, Nanos now);
  // "node a" for a live node's admission number (the environment comparison's names).
  std::function<std::string(int64_t)> NodeNamer() const;

  // Forming (rendezvous_forming.cc).
  std::vector<NodeMessage> Seal();
  // Every node's roster of the next attempt; after a failure its line (`first_failure`),
  // after a re-form how the last attempt ended (`ended`, no failure).
  std::vector<NodeMessage> Rosters(const std::string& first_failure, const std::string& ended);
  std::string CoordinatorHost() const;
  std::vector<NodeMessage> GatheringTimedOut(Nanos now);

  // An attempt's end (rendezvous_attempts.cc).
  std::vector<NodeMessage> AfterAttempt(Nanos now);
  void NoteFailure(const Node& node, const NodeReport& report);
  std::vector<NodeMessage> RefuseReport(uint64_t connection, const std::string& why) const;

  // Elastic (rendezvous_elastic.cc).
  // Every lost or drained node gone and the joining ones in: the next attempt, a new
  // gathering, or the end (the thrash guard; nobody left).
  std::vector<NodeMessage> Reform(Nanos now);
  // The lost and drained nodes out of the roster (the drained told to end with 143); the
  // re-form's cause ("node lost: ...; drained: ...; grown: ... joined").
  std::string RemoveLeavers(std::vector<NodeMessage>& out);
  std::vector<NodeMessage> GatherAgain(const std::string& cause, const std::string& ended,
                                       Nanos now);
  // What the agents print after a re-form: "attempt 1 ended: node h1 (...) joined".
  static std::string EndedText(int64_t attempt, const std::string& cause) {
    return "attempt " + std::to_string(attempt) + " ended: " + cause;
  }
  std::string LostText(Nanos now) const;
  // A drain notice: every node still running the attempt is told to stop it at one agreed
  // step (kStop); while gathering, the node leaves at once (kEnd, 143).
  std::vector<NodeMessage> Drain(Node& node);
  std::vector<NodeMessage> DrainWhileGathering(Node& node);
  std::vector<NodeMessage> ReportOfJoining(Node& node, const NodeReport& report,
                                           std::string_view frame);
  // Growth: the running attempt stops at one agreed step once the first joining node
  // waited `scale_up_after`.
  std::vector<NodeMessage> Grow(Nanos now);
  // The joining nodes into the roster (a returning node at its last rank when free);
  // their texts.
  std::vector<std::string> AdmitJoining();
  // kStop (at one agreed step, because `why`) to every node still running the attempt.
  std::vector<NodeMessage> StopRunningNodes(const std::string& why) const;

  // A restored book (rendezvous_takeover.cc): a detached node taken back by its agent,
  // and what it is sent then; detached nodes not back in time are lost.
  std::vector<NodeMessage> Rejoin(uint64_t connection, const NodeHello& hello,
                                  const Arrival& arrival, const std::string& refused);
  std::vector<NodeMessage> CatchUp(const Node& node, size_t rank) const;
  std::vector<NodeMessage> LoseDetached(Nanos now);
  std::optional<Nanos> DetachedDeadline() const;
  Node* NodeNamed(const std::string& name);

  // Shared (rendezvous_book.cc).
  std::vector<NodeMessage> EndAll(StatusCode code, std::string message, int64_t status);
  NodeMessage EndOne(const Node& node, StatusCode code, std::string message, int64_t status) const;
  void ResetConsistency();
  std::string NodeText(const Node& node) const;
  // The first kListedNodes nodes ("a at 10.0.0.1, ..."), then how many more.
  std::string JoinedList() const;
  // Finding a node by its connection costs O(1), never a scan: each message would
  // otherwise cost O(N), and a round of N messages O(N * N).
  // The node on `connection` in nodes_ (joining false) or joining_ (true), or nullptr.
  Node* Placed(uint64_t connection, bool joining);
  // The node on `connection` in nodes_, unless lost.
  Node* NodeOn(uint64_t connection);
  // places_ anew after nodes_ or joining_ changed order (O(N), once per event that does).
  void Reindex();
  // `node`'s name is free again (it left, was lost or drained).
  void ReleaseName(const Node& node);
  void Forget(std::vector<Node>& nodes, uint64_t connection);

  RendezvousOptions options_;
  Nanos origin_;          // what the state's times are offsets from
  AttemptLedger ledger_;  // the attempts, the restart rule and the thrash guard
  Nanos now_{0};  // the time of the event being decided (each public call sets it)
  Nanos start_;   // of the gathering in progress (the first, or one after a loss)
  Nanos last_join_{0};
  Phase phase_ = Phase::kGathering;
  int64_t attempt_ = 0;
  int64_t exit_status_ = 0;
  int64_t next_id_ = 0;
  std::vector<Node> nodes_;    // admission order while gathering, rank order after
  std::vector<Node> joining_;  // admitted while the job runs: in the next attempt
  bool growing_ = false;       // the running attempt was told to stop for them
  int64_t regather_first_id_ = 0;  // the first node admitted in a gathering after a loss
  std::map<std::string, int64_t> last_rank_;  // each node name's rank in its last roster
  std::optional<ConsistencyCheck> consistency_;
  // The node whose environment the others are compared with (its id and fingerprint, as its
  // hello carried it), so that a restored book compares as the original did.
  int64_t consistency_reference_id_ = -1;
  std::string consistency_reference_;
  std::string consistency_notes_;
  // The running attempt's roster (every node's but for its rank), and the end once
  // decided, as sent: what a node that comes back to a restored book is sent again.
  NodeReply roster_;
  NodeReply end_;
  // The attempt in progress: its first failure (kNone until one is reported), and whether
  // a node named it as its own (not only "its processes ended").
  JobFailure first_failure_;
  bool first_failure_named_ = false;
  // A node reported progress in the running attempt (a backup saved, a step past its
  // start): the thrash guard does not count the re-form that ends it.
  bool progressed_ = false;
  std::vector<LostNode> lost_;  // since the last attempt that ran with MIN or more
  std::string stopped_by_;      // `kdist stop` asked the job to stop: who
  // Where each node is: its connection -> nodes_ or joining_, and its index there.
  struct Place {
    bool joining = false;
    size_t index = 0;
  };
  std::unordered_map<uint64_t, Place> places_;
  // Each live node's name -> its connection (one live agent per name).
  std::unordered_map<std::string, uint64_t> name_holders_;
  // Nodes of the running attempt that have neither reported nor been lost.
  int64_t unreported_ = 0;
  // A restored book may still have detached nodes (false: none, no scan for them).
  bool detached_ = false;
};

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_BOOK_H_
