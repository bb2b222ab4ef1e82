#include "rendezvous/rendezvous_book.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/text.h"
#include "roll_call/roll_call.h"  // SafeText

namespace kdist {
namespace {

bool IsNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string Seconds(Nanos value) {
  const int64_t whole = std::chrono::duration_cast<std::chrono::seconds>(value).count();
  return std::to_string(std::max<int64_t>(whole, 0)) + " s";
}

std::string NodesText(int64_t min_nodes, int64_t max_nodes) {
  return min_nodes == max_nodes ? std::to_string(min_nodes)
                                : std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

bool IsLoopbackText(std::string_view host) {
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "localhost";
}

}  // namespace

RendezvousBook::RendezvousBook(RendezvousOptions options, Nanos start)
    : options_(std::move(options)), job_start_(start), start_(start), last_join_(start) {}

double RendezvousBook::SecondsSinceStart(Nanos at) const {
  return std::chrono::duration<double>(at - job_start_).count();
}

std::string RendezvousBook::Describe(const NodeHello& hello, const std::string& peer) const {
  return "node " + SafeText(hello.node_name) + " (host " + SafeText(hello.host) + ", pid " +
         std::to_string(hello.pid) + ", at " + peer + ")";
}

NodeMessage RendezvousBook::Refuse(uint64_t connection, StatusCode code,
                                   std::string message) const {
  NodeMessage out;
  out.connection = connection;
  out.reply.kind = NodeReplyKind::kRefused;
  out.reply.code = code;
  out.reply.message = std::move(message);
  return out;
}

RendezvousBook::Node* RendezvousBook::NodeOn(uint64_t connection) {
  for (Node& node : nodes_) {
    if (node.connection == connection && !node.lost) return &node;
  }
  return nullptr;
}

std::string RendezvousBook::JoinedList() const {
  std::vector<std::string> parts;
  for (const Node& node : nodes_) parts.push_back(node.hello.node_name + " at " + node.peer_host);
  return parts.empty() ? "none" : Join(parts, ", ");
}

std::vector<NodeMessage> RendezvousBook::Offer(uint64_t connection, const NodeHello& hello,
                                               const Arrival& arrival, Nanos now) {
  now_ = now;
  const std::string who = Describe(hello, arrival.peer_host);
  const std::string refused = "the nodes' rendezvous refused " + who + ": ";

  // 1. The token, before anything else: an agent that cannot prove it belongs to the
  //    job learns nothing more about it.
  if (!NodeFrameVerifies(arrival.frame, hello.mac, options_.token, arrival.nonce)) {
    std::string why;
    if (options_.token.empty()) {
      why = "it has a token (KDIST_ROLL_CALL_TOKEN or --token-file) but the rendezvous has none";
    } else if (hello.mac.empty()) {
      why = "it sent no proof of the job's token but the rendezvous requires one";
    } else {
      why = "its token is not the rendezvous's (its hello's MAC does not verify)";
    }
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + why + "; give every agent of the job the same token "
                   "(KDIST_ROLL_CALL_TOKEN or --token-file)")};
  }
  if (hello.sequence != 1) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   refused + "its hello is frame " + std::to_string(hello.sequence) +
                       " of its connection; expected the first")};
  }
  // 2. The job's shape.
  if (hello.job_id != options_.job_id) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + "it belongs to job id " + Quote(hello.job_id) +
                       "; this rendezvous forms job id " + Quote(options_.job_id) +
                       "; start every agent with the same --job-id")};
  }
  // `kdist rendezvous serve` runs nothing itself: the first admitted agent's -n is the job's.
  if (options_.processes_per_node == 0 && nodes_.empty() && hello.processes_per_node > 0) {
    options_.processes_per_node = hello.processes_per_node;
  }
  if (hello.processes_per_node != options_.processes_per_node) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + "it runs -n " + std::to_string(hello.processes_per_node) +
                       " processes per node; the job runs -n " +
                       std::to_string(options_.processes_per_node) +
                       "; start every agent with the same -n")};
  }
  if (hello.min_nodes != options_.min_nodes || hello.max_nodes != options_.max_nodes) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + "it was started with --nodes " +
                       NodesText(hello.min_nodes, hello.max_nodes) + "; the job has --nodes " +
                       NodesText(options_.min_nodes, options_.max_nodes) +
                       "; start every agent with the same --nodes")};
  }
  if (hello.coordinator_port < 1) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   refused + "it offered no coordinator port (expected 1-65535, received " +
                       std::to_string(hello.coordinator_port) + ")")};
  }
  // 3. The node's name.
  if (!IsNodeName(hello.node_name)) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   refused + "its node name " + Quote(hello.node_name) +
                       " is not made of letters, digits, '.', '_' and '-' (at most " +
                       std::to_string(kMaxNodeNameBytes) + " bytes); give it --node-name")};
  }
  std::vector<const Node*> live;
  for (const Node& node : nodes_) live.push_back(&node);
  for (const Node& node : joining_) live.push_back(&node);
  for (const Node* held : live) {
    const Node& node = *held;
    if (node.hello.node_name == hello.node_name && !node.lost) {
      return {Refuse(connection, StatusCode::kAlreadyExists,
                     refused + "node name " + hello.node_name +
                         " is already held by the live agent at " + node.peer_host + " (pid " +
                         std::to_string(node.hello.pid) + "); this agent is at " +
                         arrival.peer_host + "; give each machine its own --node-name")};
    }
  }
  // 5. A job that has formed admits only a node it can grow by (checked before the
  //    environment, which would otherwise record a node that never joins).
  const int64_t members = static_cast<int64_t>(nodes_.size() + joining_.size());
  const bool grows = phase_ == Phase::kRunning && options_.scale_up_after.has_value() &&
                     members < options_.max_nodes;
  if (phase_ != Phase::kGathering && !grows) {
    std::string why = "; a node cannot join a running job";
    if (phase_ == Phase::kRunning && !options_.scale_up_after.has_value()) {
      why += " (--scale-up-after never)";
    } else if (phase_ == Phase::kRunning) {
      why = "; the job already has its --nodes MAX " + std::to_string(options_.max_nodes);
    }
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + "the job has already formed with " +
                       std::to_string(nodes_.size()) + " nodes (" + JoinedList() + ")" + why)};
  }
  // 4. The environment, against the first admitted node's.
  Result<Fingerprint> theirs = DecodeFingerprint(hello.environment);
  if (!theirs.ok()) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   refused + "its environment fingerprint is malformed: " +
                       theirs.status().message())};
  }
  const int64_t id = next_id_;
  if (!consistency_.has_value()) {
    Fingerprint reference = *theirs;
    for (FingerprintEntry& entry : reference) {
      entry.must_match = std::find(options_.must_match.begin(), options_.must_match.end(),
                                   entry.name) != options_.must_match.end();
    }
    consistency_.emplace(std::move(reference), options_.consistency);
  } else {
    const auto host_of = [&](int64_t node_id) {
      for (const Node* node : live) {
        if (node->id == node_id) return "node " + node->hello.node_name;
      }
      return node_id == id ? "node " + hello.node_name : std::string("node ?");
    };
    Status status = consistency_->Add(id, *theirs, host_of);
    if (!status.ok()) {
      consistency_->Remove(id);
      return {Refuse(connection, StatusCode::kFailedPrecondition,
                     refused + "its environment cannot work with the job's nodes: " +
                         status.message())};
    }
  }
  ++next_id_;

  Node node;
  node.connection = connection;
  node.id = id;
  node.hello = hello;
  node.peer_host = arrival.peer_host;
  node.local_host = arrival.local_host;
  node.challenge = arrival.nonce;
  node.on_rendezvous_machine = !arrival.peer_host.empty() && arrival.peer_host == arrival.local_host;
  node.next_port = hello.coordinator_port;
  if (grows) {
    node.joined_at = now;
    joining_.push_back(std::move(node));
    NodeMessage admitted;
    admitted.connection = connection;
    admitted.reply.kind = NodeReplyKind::kAdmitted;
    admitted.reply.message =
        "admitted as node " + hello.node_name + " while the job runs attempt " +
        std::to_string(attempt_) + " with " + std::to_string(nodes_.size()) + " nodes (" +
        JoinedList() + "); after " + Seconds(*options_.scale_up_after) +
        " (--scale-up-after) it stops at one agreed step and the next attempt runs with " +
        std::to_string(nodes_.size() + joining_.size()) + " nodes";
    return {std::move(admitted)};
  }
  nodes_.push_back(std::move(node));
  last_join_ = now;

  NodeMessage admitted;
  admitted.connection = connection;
  admitted.reply.kind = NodeReplyKind::kAdmitted;
  admitted.reply.message = "admitted as node " + hello.node_name + ": " + ProgressLine(now);
  std::vector<NodeMessage> out = {std::move(admitted)};
  if (static_cast<int64_t>(nodes_.size()) >= options_.max_nodes) {
    for (NodeMessage& m : Seal()) out.push_back(std::move(m));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::Tick(Nanos now) {
  now_ = now;
  if (phase_ == Phase::kRunning) return Grow(now);
  if (phase_ != Phase::kGathering) return {};
  const int64_t joined = static_cast<int64_t>(nodes_.size());
  if (joined >= options_.min_nodes && now - last_join_ >= options_.last_call) return Seal();
  if (now - start_ >= options_.join_timeout) {
    exit_status_ = kExitNotEnoughNodes;
    if (!lost_.empty() && !attempts_.empty()) {
      attempts_.back().ended += "; fewer than MIN nodes came back";
    }
    return EndAll(StatusCode::kDeadlineExceeded,
                  "the nodes' rendezvous timed out after " + Seconds(options_.join_timeout) +
                      " (--join-timeout) with " + std::to_string(joined) + " of " +
                      NodesText(options_.min_nodes, options_.max_nodes) + " nodes joined (" +
                      JoinedList() + ")" + LostText(now) + "; start `kdist launch --nodes` "
                      "with the same --rendezvous on " +
                      std::to_string(options_.min_nodes - joined) +
                      " more machine(s), or lower --nodes MIN",
                  kExitNotEnoughNodes);
  }
  return {};
}

std::string RendezvousBook::LostText(Nanos now) const {
  if (lost_.empty()) return "";
  std::vector<std::string> parts;
  for (const LostNode& lost : lost_) {
    parts.push_back(lost.text + " lost since " + Seconds(now - lost.since) + " ago (attempt " +
                    std::to_string(lost.attempt) + ")");
  }
  return "; the job had lost " + Join(parts, ", ");
}

std::optional<Nanos> RendezvousBook::NextDeadline() const {
  if (phase_ == Phase::kRunning && !joining_.empty() && !growing_ &&
      options_.scale_up_after.has_value()) {
    return joining_.front().joined_at + *options_.scale_up_after;
  }
  if (phase_ != Phase::kGathering) return std::nullopt;
  Nanos next = start_ + options_.join_timeout;
  if (static_cast<int64_t>(nodes_.size()) >= options_.min_nodes) {
    next = std::min(next, last_join_ + options_.last_call);
  }
  return next;
}

std::string RendezvousBook::ProgressLine(Nanos now) const {
  const int64_t joined = static_cast<int64_t>(nodes_.size());
  std::string line = std::to_string(joined) + " of " +
                     NodesText(options_.min_nodes, options_.max_nodes) + " nodes joined (" +
                     JoinedList() + ")";
  if (phase_ != Phase::kGathering) return line;
  if (joined >= options_.min_nodes) {
    line += "; the job forms when " + std::to_string(options_.max_nodes) +
            " have joined or none joins for " +
            Seconds(last_join_ + options_.last_call - now) + " more (--last-call)";
  } else {
    line += "; waiting for " + std::to_string(options_.min_nodes - joined) + " more";
  }
  return line + "; " + Seconds(now - start_) + " of " + Seconds(options_.join_timeout) +
         " (--join-timeout)";
}

std::vector<NodeMessage> RendezvousBook::Seal() {
  phase_ = Phase::kRunning;
  // After a gathering that followed a loss, the attempt after the last one; the nodes
  // that came meanwhile take their last ranks when free, as growth's do.
  const std::string after_loss = lost_.empty() ? "" : attempts_.back().ended;
  if (!lost_.empty()) {
    std::vector<Node> kept;
    for (Node& node : nodes_) {
      (node.id < regather_first_id_ ? kept : joining_).push_back(std::move(node));
    }
    nodes_ = std::move(kept);
    (void)AdmitJoining();
  }
  if (!attempts_.empty()) ++attempt_;
  lost_.clear();
  // Node 0: the first agent on the rendezvous's own machine, else the first admitted;
  // the others keep their order of admission.
  auto local = std::find_if(nodes_.begin(), nodes_.end(),
                            [](const Node& n) { return n.on_rendezvous_machine; });
  if (local != nodes_.end()) std::rotate(nodes_.begin(), local, local + 1);
  if (consistency_.has_value()) {
    consistency_notes_ = consistency_->Differences([&](int64_t node_id) {
      for (const Node& node : nodes_) {
        if (node.id == node_id) return "node " + node.hello.node_name;
      }
      return std::string("node ?");
    });
  }
  return Rosters(after_loss);
}

std::vector<NodeMessage> RendezvousBook::Rosters(const std::string& first_failure) {
  const Node& zero = nodes_.front();
  // Node 0's address as the other agents reached it: for an agent on the rendezvous's
  // machine, the address they connected to (the first that is not loopback); for one
  // elsewhere, its address as the rendezvous saw it.
  std::string coordinator_host = zero.peer_host;
  if (zero.on_rendezvous_machine) {
    coordinator_host = zero.local_host;
    for (const Node& node : nodes_) {
      if (&node != &zero && !IsLoopbackText(node.local_host) && !node.local_host.empty()) {
        coordinator_host = node.local_host;
        break;
      }
    }
  }
  std::vector<RosterNode> roster;
  const int64_t previous_processes =
      attempts_.empty() ? 0
                        : static_cast<int64_t>(attempts_.back().nodes.size()) *
                              options_.processes_per_node;
  AttemptRecord record;
  record.attempt = attempt_;
  record.processes = static_cast<int64_t>(nodes_.size()) * options_.processes_per_node;
  record.started_seconds = SecondsSinceStart(now_);
  for (size_t rank = 0; rank < nodes_.size(); ++rank) {
    const Node& node = nodes_[rank];
    roster.push_back({node.hello.node_name, node.peer_host});
    record.nodes.push_back(node.hello.node_name);
    last_rank_[node.hello.node_name] = static_cast<int64_t>(rank);
  }
  attempts_.push_back(std::move(record));
  first_failure_.clear();
  first_failure_named_ = false;
  first_failure_status_ = 0;

  std::vector<NodeMessage> out;
  for (size_t rank = 0; rank < nodes_.size(); ++rank) {
    Node& node = nodes_[rank];
    node.reported = false;
    NodeMessage m;
    m.connection = node.connection;
    m.reply.kind = NodeReplyKind::kRoster;
    m.reply.attempt = attempt_;
    m.reply.node_rank = static_cast<int64_t>(rank);
    m.reply.processes_per_node = options_.processes_per_node;
    m.reply.coordinator_host = coordinator_host;
    m.reply.coordinator_port = zero.next_port;
    m.reply.nodes = roster;
    m.reply.previous_processes = previous_processes;
    m.reply.first_failure = first_failure;
    m.reply.message = consistency_notes_;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::EndAll(StatusCode code, std::string message,
                                                int64_t status) {
  phase_ = Phase::kEnded;
  exit_status_ = status;
  std::vector<NodeMessage> out;
  std::vector<const Node*> everyone;
  for (const Node& node : nodes_) everyone.push_back(&node);
  for (const Node& node : joining_) everyone.push_back(&node);
  for (const Node* each : everyone) {
    const Node& node = *each;
    if (node.lost) continue;
    NodeMessage m;
    m.connection = node.connection;
    m.reply.kind = NodeReplyKind::kEnd;
    m.reply.code = code;
    m.reply.message = message;
    m.reply.attempt = attempt_;
    m.reply.exit_status = status;
    m.reply.first_failure = first_failure_;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::Report(uint64_t connection, const NodeReport& report,
                                                std::string_view frame, Nanos now) {
  now_ = now;
  for (auto it = joining_.begin(); it != joining_.end(); ++it) {
    if (it->connection != connection) continue;
    // A joining node runs nothing: its only report is a drain notice, and it leaves.
    if (!report.drain || !NodeFrameVerifies(frame, report.mac, options_.token, it->challenge) ||
        report.sequence <= it->last_sequence) {
      return {Refuse(connection, StatusCode::kFailedPrecondition,
                     "the nodes' rendezvous refused a report of joining " + NodeText(*it) +
                         ": it runs no attempt yet")};
    }
    std::vector<NodeMessage> out = {EndOne(*it, StatusCode::kOk,
                                           NodeText(*it) + " was drained before it joined",
                                           kExitDrained)};
    if (consistency_.has_value()) consistency_->Remove(it->id);
    joining_.erase(it);
    return out;
  }
  Node* node = NodeOn(connection);
  if (node == nullptr) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   "the nodes' rendezvous received a report from a connection that holds no node")};
  }
  const std::string who = "node " + node->hello.node_name + " (at " + node->peer_host + ")";
  if (!NodeFrameVerifies(frame, report.mac, options_.token, node->challenge)) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   "the nodes' rendezvous refused a report of " + who +
                       ": its MAC does not verify against the challenge of its connection")};
  }
  if (report.sequence <= node->last_sequence) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   "the nodes' rendezvous refused a report of " + who + ": frame " +
                       std::to_string(report.sequence) + " comes after frame " +
                       std::to_string(node->last_sequence) + " (a replay?)")};
  }
  if (report.drain) {  // a notice, not the attempt's end
    if (phase_ == Phase::kEnded || report.attempt > attempt_) {
      return {Refuse(connection, StatusCode::kFailedPrecondition,
                     "the nodes' rendezvous refused a drain notice of " + who + " about attempt " +
                         std::to_string(report.attempt) + ": the job's attempt is " +
                         std::to_string(attempt_))};
    }
    node->last_sequence = report.sequence;
    return Drain(*node, now);
  }
  if (phase_ != Phase::kRunning || report.attempt != attempt_ || node->reported) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   "the nodes' rendezvous refused a report of " + who + " about attempt " +
                       std::to_string(report.attempt) + ": the job's attempt is " +
                       std::to_string(attempt_) + (node->reported ? ", already reported" : ""))};
  }
  node->last_sequence = report.sequence;
  node->reported = true;
  node->next_port = report.coordinator_port;
  // The first report that names a failure (the node where it began) wins over one that
  // only says its processes failed (a consequence: the liveness channel ended them).
  if (report.exit_status != 0 && (first_failure_.empty() || !first_failure_named_) &&
      (first_failure_.empty() || !report.failure.empty())) {
    first_failure_named_ = !report.failure.empty();
    first_failure_ = first_failure_named_
                         ? report.failure
                         : "node " + node->hello.node_name + "'s processes ended with status " +
                               std::to_string(report.exit_status);
    first_failure_status_ = report.exit_status;
  }
  return AfterAttempt(now);
}

std::vector<NodeMessage> RendezvousBook::Leave(uint64_t connection, Nanos now) {
  now_ = now;
  if (phase_ == Phase::kGathering) {
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
      if (it->connection != connection) continue;
      if (consistency_.has_value()) consistency_->Remove(it->id);
      nodes_.erase(it);
      if (nodes_.empty()) consistency_.reset();
      last_join_ = std::max(last_join_, now - options_.last_call);
      return {};
    }
    return {};
  }
  for (auto it = joining_.begin(); it != joining_.end(); ++it) {
    if (it->connection != connection) continue;
    if (consistency_.has_value()) consistency_->Remove(it->id);
    joining_.erase(it);  // it never ran: the job is not disturbed
    return {};
  }
  Node* node = NodeOn(connection);
  if (node == nullptr || phase_ == Phase::kEnded) return {};
  // Its processes are ended by the liveness channel (or by its own agent, cut off);
  // what the attempt's end means is decided once every other node has reported.
  node->lost = true;
  node->lost_since = now;
  node->reported = true;
  return AfterAttempt(now);
}

std::vector<NodeMessage> RendezvousBook::AfterAttempt(Nanos now) {
  bool any_lost = false;
  bool any_survivor = false;
  bool any_drained = false;
  for (const Node& node : nodes_) {
    if (!node.reported) return {};
    any_lost = any_lost || node.lost;
    any_survivor = any_survivor || !node.lost;
    any_drained = any_drained || node.draining;
  }
  AttemptRecord& record = attempts_.back();
  record.ended_seconds = SecondsSinceStart(now);
  // Every survivor's processes passed: the job finished (its processes could not have
  // without the lost node's).
  if (first_failure_.empty() && any_survivor) {
    record.ended = "finished";
    return EndAll(StatusCode::kOk, "every node's processes passed", 0);
  }
  if (any_lost || any_drained || growing_) return Reform(now);
  record.ended = "failed: " + first_failure_;
  record.exit_status = first_failure_status_;
  if (!previous_failure_.empty() && first_failure_ == previous_failure_) {
    return EndAll(StatusCode::kFailedPrecondition,
                  "attempt " + std::to_string(attempt_) + " failed as attempt " +
                      std::to_string(attempt_ - 1) + " did, at the same point (" +
                      first_failure_ + "); not restarting again",
                  1);
  }
  if (counted_restarts_ >= options_.max_restarts) {
    return EndAll(StatusCode::kFailedPrecondition,
                  "the job failed and no restart is left (--max-restarts " +
                      std::to_string(options_.max_restarts) + "): " + first_failure_,
                  first_failure_status_);
  }
  ++counted_restarts_;
  previous_failure_ = first_failure_;
  const std::string failure = first_failure_;
  (void)AdmitJoining();  // a new attempt anyway: with them
  ++attempt_;
  return Rosters(failure);
}

std::vector<NodeMessage> RendezvousBook::Reform(Nanos now) {
  AttemptRecord& record = attempts_.back();
  std::vector<std::string> lost_names, drained_names;
  std::vector<Node> survivors;
  std::vector<NodeMessage> out;  // the drained agents' ends first
  for (Node& node : nodes_) {
    if (!node.lost && !node.draining) {
      survivors.push_back(std::move(node));
      continue;
    }
    const std::string text = NodeText(node);
    if (consistency_.has_value()) consistency_->Remove(node.id);
    if (node.lost) {
      lost_names.push_back(text);
      lost_.push_back({text, attempt_, node.lost_since});
      continue;
    }
    drained_names.push_back(text);
    out.push_back(EndOne(node, StatusCode::kOk,
                         text + " was drained: it leaves the job after attempt " +
                             std::to_string(attempt_) + ", which stopped at one agreed step",
                         kExitDrained));
  }
  nodes_ = std::move(survivors);
  growing_ = false;
  const std::vector<std::string> grown_names = AdmitJoining();
  std::vector<std::string> causes;
  if (!lost_names.empty()) causes.push_back("node lost: " + Join(lost_names, ", "));
  if (!drained_names.empty()) causes.push_back("drained: " + Join(drained_names, ", "));
  if (!grown_names.empty()) causes.push_back("grown: " + Join(grown_names, ", ") + " joined");
  const std::string cause = Join(causes, "; ");
  record.ended = cause;
  record.exit_status = 0;
  record.counted = false;
  previous_failure_.clear();  // a program's failure is compared with the same shape's only
  first_failure_ = cause;
  const auto with_ends = [&out](std::vector<NodeMessage> more) {
    for (NodeMessage& m : more) out.push_back(std::move(m));
    return std::move(out);
  };
  // Nobody left who wants to run: every node drained (SIGTERM to every agent), or drained
  // and lost: the job stops, as a stop signal stops it on one machine.
  if (nodes_.empty() && !drained_names.empty()) {
    phase_ = Phase::kEnded;
    exit_status_ = kExitDrained;
    record.ended += "; nobody left";
    return out;
  }
  // The thrash guard: the re-forms within the window, this one included.
  reforms_.erase(std::remove_if(reforms_.begin(), reforms_.end(),
                                [&](const auto& r) { return now - r.first >= options_.reform_window; }),
                 reforms_.end());
  reforms_.emplace_back(now, "attempt " + std::to_string(attempt_) + ": " + cause);
  if (static_cast<int64_t>(reforms_.size()) > options_.max_reforms) {
    std::vector<std::string> all;
    for (const auto& r : reforms_) all.push_back(r.second);
    return with_ends(EndAll(StatusCode::kFailedPrecondition,
                            "the job re-formed " + std::to_string(reforms_.size()) +
                                " times within " + Seconds(options_.reform_window) +
                                " (more than " + std::to_string(options_.max_reforms) +
                                ": the thrash guard ends it): " + Join(all, "; "),
                            1));
  }
  if (static_cast<int64_t>(nodes_.size()) >= options_.min_nodes) {
    lost_.clear();
    ++attempt_;
    return with_ends(Rosters(cause));
  }
  // Fewer than MIN: gather again, the survivors admitted already, for --join-timeout.
  phase_ = Phase::kGathering;
  regather_first_id_ = next_id_;
  start_ = now;
  last_join_ = now;
  if (nodes_.empty()) consistency_.reset();
  const std::string line = cause + "; " + std::to_string(nodes_.size()) + " of " +
                           NodesText(options_.min_nodes, options_.max_nodes) +
                           " nodes remain: gathering again (" + ProgressLine(now) + ")";
  for (const Node& node : nodes_) {
    NodeMessage m;
    m.connection = node.connection;
    m.reply.kind = NodeReplyKind::kWaiting;
    m.reply.message = line;
    m.reply.first_failure = cause;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::Grow(Nanos now) {
  if (joining_.empty() || growing_ || !options_.scale_up_after.has_value() ||
      now - joining_.front().joined_at < *options_.scale_up_after) {
    return {};
  }
  growing_ = true;
  std::vector<std::string> names;
  for (const Node& node : joining_) names.push_back(NodeText(node));
  const std::string why = Join(names, ", ") + " joined: attempt " + std::to_string(attempt_) +
                          " stops at one agreed step, the next runs with " +
                          std::to_string(nodes_.size() + joining_.size()) + " nodes";
  return StopRunningNodes(why);
}

std::vector<NodeMessage> RendezvousBook::StopRunningNodes(const std::string& why) const {
  std::vector<NodeMessage> out;
  for (const Node& node : nodes_) {
    if (node.reported || node.lost) continue;
    NodeMessage m;
    m.connection = node.connection;
    m.reply.kind = NodeReplyKind::kStop;
    m.reply.attempt = attempt_;
    m.reply.message = why;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> RendezvousBook::AdmitJoining() {
  std::vector<std::string> names;
  for (Node& node : joining_) {
    names.push_back(NodeText(node));
    auto last = last_rank_.find(node.hello.node_name);
    const int64_t size = static_cast<int64_t>(nodes_.size());
    if (last != last_rank_.end() && size > 0 && last->second >= 1 && last->second <= size) {
      nodes_.insert(nodes_.begin() + last->second, std::move(node));
    } else {
      nodes_.push_back(std::move(node));
    }
  }
  joining_.clear();
  return names;
}

std::string RendezvousBook::NodeText(const Node& node) const {
  return "node " + node.hello.node_name + " (host " + SafeText(node.hello.host) + ", at " +
         node.peer_host + ")";
}

NodeMessage RendezvousBook::EndOne(const Node& node, StatusCode code, std::string message,
                                   int64_t status) const {
  NodeMessage m;
  m.connection = node.connection;
  m.reply.kind = NodeReplyKind::kEnd;
  m.reply.code = code;
  m.reply.message = std::move(message);
  m.reply.attempt = attempt_;
  m.reply.exit_status = status;
  return m;
}

std::vector<NodeMessage> RendezvousBook::Drain(Node& node, Nanos /*now*/) {
  const std::string text = NodeText(node);
  if (phase_ == Phase::kGathering) {  // nothing runs: it leaves at once
    std::vector<NodeMessage> out = {
        EndOne(node, StatusCode::kOk, text + " was drained while the job gathered", kExitDrained)};
    const uint64_t connection = node.connection;
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
      if (it->connection != connection) continue;
      if (consistency_.has_value()) consistency_->Remove(it->id);
      nodes_.erase(it);
      break;
    }
    if (nodes_.empty()) consistency_.reset();
    if (nodes_.empty() && !attempts_.empty()) {
      // Gathering again after a loss or a drain, and the last one left is drained too
      // (SIGTERM to every agent, their signals apart): nobody is left to run the job.
      phase_ = Phase::kEnded;
      exit_status_ = kExitDrained;
      attempts_.back().ended += "; then every other node was drained";
    }
    return out;
  }
  if (node.draining) return {};
  node.draining = true;
  const std::string why = text + " is drained (its agent received SIGTERM): attempt " +
                          std::to_string(attempt_) +
                          " stops at one agreed step, the next runs without it";
  return StopRunningNodes(why);
}

std::vector<std::string> RendezvousBook::NodeNames() const {
  std::vector<std::string> names;
  for (const Node& node : nodes_) names.push_back(node.hello.node_name);
  return names;
}

std::optional<Nonce> RendezvousBook::AgentNonce(uint64_t connection) const {
  for (const Node& node : nodes_) {
    if (node.connection == connection && !node.lost) return node.hello.nonce;
  }
  return std::nullopt;
}

std::string RendezvousBook::AttemptTable() const {
  const auto seconds = [](double value) {
    if (value < 0) return std::string("-");
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", value);
    return std::string(text);
  };
  std::vector<std::vector<std::string>> rows = {
      {"attempt", "nodes", "processes", "start", "end", "counted", "ended"}};
  for (const AttemptRecord& record : attempts_) {
    std::string ended = record.ended.empty() ? "running" : record.ended;
    if (record.exit_status != 0) ended += " (status " + std::to_string(record.exit_status) + ")";
    rows.push_back({std::to_string(record.attempt), Join(record.nodes, ","),
                    std::to_string(record.processes), seconds(record.started_seconds),
                    seconds(record.ended_seconds),
                    record.counted ? "yes" : "not counted against --max-restarts", ended});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += "\n";
  }
  return out;
}

}  // namespace kdist
