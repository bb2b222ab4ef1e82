// Admission: each hello is checked in order — the token, the job's shape, the node's
// name, whether the job can take a node now, its environment — and a refusal goes to
// that agent only, never disturbing the others or a running job.
#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

#include "base/text.h"
#include "rendezvous/rendezvous_book.h"

namespace kdist {
namespace {

bool IsNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::string NodesText(int64_t min_nodes, int64_t max_nodes) {
  return min_nodes == max_nodes ? std::to_string(min_nodes)
                                : std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

}  // namespace

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

std::vector<NodeMessage> RendezvousBook::Offer(uint64_t connection, const NodeHello& hello,
                                               const Arrival& arrival, Nanos now) {
  now_ = now;
  const std::string refused =
      "the nodes' rendezvous refused " + Describe(hello, arrival.peer_host) + ": ";
  // 1. The token, before anything else: an agent that cannot prove it belongs to the
  //    job learns nothing more about it.
  if (std::optional<std::string> why = TokenRefusal(hello, arrival)) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + *why + "; give every agent of the job the same token "
                   "(KDIST_ROLL_CALL_TOKEN or --token-file)")};
  }
  if (hello.sequence != 1) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   refused + "its hello is frame " + std::to_string(hello.sequence) +
                       " of its connection; expected the first")};
  }
  if (hello.purpose == NodePurpose::kStop) return StopJob(connection, hello, arrival);
  if (hello.purpose == NodePurpose::kStatus) return StatusAnswer(connection, hello, arrival, now);
  // 2. The job's shape; then an agent that comes back to a restored book takes its node
  //    back (rendezvous_takeover.cc); 3. the node's name.
  if (std::optional<NodeMessage> no = ShapeRefusal(connection, hello, refused)) return {*no};
  if (hello.purpose == NodePurpose::kRejoin) return Rejoin(connection, hello, arrival, refused);
  if (std::optional<NodeMessage> no = NameRefusal(connection, hello, arrival, refused)) {
    return {*no};
  }
  // 5. A job that has formed admits only a node it can grow by (checked before the
  //    environment, which would otherwise record a node that never joins).
  const int64_t members = static_cast<int64_t>(nodes_.size() + joining_.size());
  const bool grows = phase_ == Phase::kRunning && options_.scale_up_after.has_value() &&
                     members < options_.max_nodes;
  if (std::optional<NodeMessage> no = FormedRefusal(connection, grows, refused)) return {*no};
  // 4. The environment, against the first admitted node's.
  const int64_t id = next_id_;
  if (std::optional<NodeMessage> no = EnvironmentRefusal(connection, hello, id, refused)) {
    return {*no};
  }
  ++next_id_;
  return Admit(connection, hello, arrival, id, grows, now);
}

std::vector<NodeMessage> RendezvousBook::StopJob(uint64_t connection, const NodeHello& hello,
                                                 const Arrival& arrival) {
  const std::string who = "kdist stop (host " + SafeText(hello.host) + ", pid " +
                          std::to_string(hello.pid) + ", at " + arrival.peer_host + ")";
  if (hello.job_id != options_.job_id) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   "the nodes' rendezvous refused " + who + ": it names job id " +
                       Quote(hello.job_id) + "; this rendezvous forms job id " +
                       Quote(options_.job_id) + "; give kdist stop the job's --job-id")};
  }
  NodeMessage answer;
  answer.connection = connection;
  answer.reply.kind = NodeReplyKind::kEnd;
  answer.reply.attempt = attempt_;
  if (phase_ == Phase::kEnded) {
    answer.reply.message = "the job had already ended, with status " + std::to_string(exit_status_);
    return {answer};
  }
  stopped_by_ = who;
  std::vector<NodeMessage> out;
  if (phase_ == Phase::kGathering) {
    out = EndAll(StatusCode::kOk, "the job was stopped by " + who + " while it gathered",
                 kExitDrained);
    if (formed()) ledger_.AddToLastEnd("; then stopped by " + who);
    answer.reply.message = "the job had not formed: its " + std::to_string(out.size()) +
                           " agents leave with " + std::to_string(kExitDrained);
  } else {
    for (Node& node : nodes_) node.draining = true;
    for (const Node& node : joining_) {
      out.push_back(EndOne(node, StatusCode::kOk, "the job was stopped by " + who, kExitDrained));
      ReleaseName(node);
    }
    joining_.clear();
    Reindex();
    for (NodeMessage& m : StopRunningNodes("the job is stopped by " + who + ": attempt " +
                                           std::to_string(attempt_) +
                                           " stops at one agreed step, then every agent "
                                           "leaves with 143")) {
      out.push_back(std::move(m));
    }
    answer.reply.message = "attempt " + std::to_string(attempt_) + " of job " +
                           Quote(options_.job_id) + " stops at one agreed step on its " +
                           std::to_string(nodes_.size()) +
                           " nodes, every process saving there; then every agent leaves with " +
                           std::to_string(kExitDrained);
  }
  out.push_back(std::move(answer));
  return out;
}

std::optional<std::string> RendezvousBook::TokenRefusal(const NodeHello& hello,
                                                        const Arrival& arrival) const {
  if (NodeFrameVerifies(arrival.frame, hello.mac, options_.token, arrival.nonce)) {
    return std::nullopt;
  }
  if (options_.token.empty()) {
    return "it has a token (KDIST_ROLL_CALL_TOKEN or --token-file) but the rendezvous has none";
  }
  if (hello.mac.empty()) return "it sent no proof of the job's token but the rendezvous requires one";
  return "its token is not the rendezvous's (its hello's MAC does not verify)";
}

std::optional<NodeMessage> RendezvousBook::ShapeRefusal(uint64_t connection,
                                                        const NodeHello& hello,
                                                        const std::string& refused) {
  if (hello.job_id != options_.job_id) {
    return Refuse(connection, StatusCode::kFailedPrecondition,
                  refused + "it belongs to job id " + Quote(hello.job_id) +
                      "; this rendezvous forms job id " + Quote(options_.job_id) +
                      "; start every agent with the same --job-id");
  }
  // `kdist rendezvous serve` runs nothing itself: the first admitted agent's -n is the job's.
  if (options_.processes_per_node == 0 && nodes_.empty() && hello.processes_per_node > 0) {
    options_.processes_per_node = hello.processes_per_node;
  }
  if (hello.processes_per_node != options_.processes_per_node) {
    return Refuse(connection, StatusCode::kFailedPrecondition,
                  refused + "it runs -n " + std::to_string(hello.processes_per_node) +
                      " processes per node; the job runs -n " +
                      std::to_string(options_.processes_per_node) +
                      "; start every agent with the same -n");
  }
  if (hello.min_nodes != options_.min_nodes || hello.max_nodes != options_.max_nodes) {
    return Refuse(connection, StatusCode::kFailedPrecondition,
                  refused + "it was started with --nodes " +
                      NodesText(hello.min_nodes, hello.max_nodes) + "; the job has --nodes " +
                      NodesText(options_.min_nodes, options_.max_nodes) +
                      "; start every agent with the same --nodes");
  }
  if (hello.coordinator_port < 1) {
    return Refuse(connection, StatusCode::kInvalidArgument,
                  refused + "it offered no coordinator port (expected 1-65535, received " +
                      std::to_string(hello.coordinator_port) + ")");
  }
  return std::nullopt;
}

std::optional<NodeMessage> RendezvousBook::NameRefusal(uint64_t connection,
                                                       const NodeHello& hello,
                                                       const Arrival& arrival,
                                                       const std::string& refused) const {
  if (!IsNodeName(hello.node_name)) {
    return Refuse(connection, StatusCode::kInvalidArgument,
                  refused + "its node name " + Quote(hello.node_name) +
                      " is not made of letters, digits, '.', '_' and '-' (at most " +
                      std::to_string(kMaxNodeNameBytes) + " bytes); give it --node-name");
  }
  const auto holder = name_holders_.find(hello.node_name);
  if (holder == name_holders_.end()) return std::nullopt;
  const auto place = places_.find(holder->second);
  const Node& node = (place->second.joining ? joining_ : nodes_)[place->second.index];
  return Refuse(connection, StatusCode::kAlreadyExists,
                refused + "node name " + hello.node_name + " is already held by the live agent at " +
                    node.peer_host + " (pid " + std::to_string(node.hello.pid) +
                    "); this agent is at " + arrival.peer_host +
                    "; give each machine its own --node-name");
}

std::optional<NodeMessage> RendezvousBook::FormedRefusal(uint64_t connection, bool grows,
                                                         const std::string& refused) const {
  if (phase_ == Phase::kGathering || grows) return std::nullopt;
  std::string why = "; a node cannot join a running job";
  if (phase_ == Phase::kRunning && !options_.scale_up_after.has_value()) {
    why += " (--scale-up-after never)";
  } else if (phase_ == Phase::kRunning) {
    why = "; the job already has its --nodes MAX " + std::to_string(options_.max_nodes);
  }
  return Refuse(connection, StatusCode::kFailedPrecondition,
                refused + "the job has already formed with " + std::to_string(nodes_.size()) +
                    " nodes (" + JoinedList() + ")" + why);
}

std::optional<NodeMessage> RendezvousBook::EnvironmentRefusal(uint64_t connection,
                                                              const NodeHello& hello, int64_t id,
                                                              const std::string& refused) {
  Result<Fingerprint> theirs = DecodeFingerprint(hello.environment);
  if (!theirs.ok()) {
    return Refuse(connection, StatusCode::kInvalidArgument,
                  refused + "its environment fingerprint is malformed: " +
                      theirs.status().message());
  }
  if (!consistency_.has_value()) {
    Fingerprint reference = *theirs;
    for (FingerprintEntry& entry : reference) {
      entry.must_match = std::find(options_.must_match.begin(), options_.must_match.end(),
                                   entry.name) != options_.must_match.end();
    }
    consistency_.emplace(std::move(reference), options_.consistency);
    consistency_reference_id_ = id;
    consistency_reference_ = hello.environment;
    return std::nullopt;
  }
  // The names are looked up only when a difference refuses the node.
  const std::function<std::string(int64_t)> named = NodeNamer();
  const auto node_named = [&](int64_t node_id) {
    return node_id == id ? "node " + hello.node_name : named(node_id);
  };
  Status status = consistency_->Add(id, *theirs, node_named);
  if (status.ok()) return std::nullopt;
  consistency_->Remove(id);
  return Refuse(connection, StatusCode::kFailedPrecondition,
                refused + "its environment cannot work with the job's nodes: " + status.message());
}

std::function<std::string(int64_t)> RendezvousBook::NodeNamer() const {
  // Built at the first name asked (O(N) once), so that naming every node of a table costs
  // O(N), not a scan per name.
  auto names = std::make_shared<std::unordered_map<int64_t, std::string>>();
  return [this, names](int64_t node_id) {
    if (names->empty()) {
      for (const std::vector<Node>* nodes : {&nodes_, &joining_}) {
        for (const Node& node : *nodes) (*names)[node.id] = "node " + node.hello.node_name;
      }
    }
    const auto it = names->find(node_id);
    return it != names->end() ? it->second : std::string("node ?");
  };
}

std::vector<NodeMessage> RendezvousBook::Admit(uint64_t connection, const NodeHello& hello,
                                               const Arrival& arrival, int64_t id, bool grows,
                                               Nanos now) {
  Node node;
  node.connection = connection;
  node.id = id;
  node.hello = hello;
  node.peer_host = arrival.peer_host;
  node.local_host = arrival.local_host;
  node.challenge = arrival.nonce;
  node.on_rendezvous_machine = !arrival.peer_host.empty() && arrival.peer_host == arrival.local_host;
  node.next_port = hello.coordinator_port;
  node.admitted_at = now;
  // Compared at admission (the consistency check keeps what differs), never read again;
  // but a book kept in a store saves it (a restored book compares as the original did).
  if (!options_.keep_environments) std::string().swap(node.hello.environment);
  name_holders_[hello.node_name] = connection;
  NodeMessage admitted;
  admitted.connection = connection;
  admitted.reply.kind = NodeReplyKind::kAdmitted;
  if (grows) {
    node.joined_at = now;
    places_[connection] = {true, joining_.size()};
    joining_.push_back(std::move(node));
    admitted.reply.message =
        "admitted as node " + hello.node_name + " while the job runs attempt " +
        std::to_string(attempt_) + " with " + std::to_string(nodes_.size()) + " nodes (" +
        JoinedList() + "); after " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(*options_.scale_up_after).count()) +
        " s (--scale-up-after) it stops at one agreed step and the next attempt runs with " +
        std::to_string(nodes_.size() + joining_.size()) + " nodes";
    return {std::move(admitted)};
  }
  places_[connection] = {false, nodes_.size()};
  nodes_.push_back(std::move(node));
  last_join_ = now;
  admitted.reply.message = "admitted as node " + hello.node_name + ": " + ProgressLine(now);
  std::vector<NodeMessage> out = {std::move(admitted)};
  if (static_cast<int64_t>(nodes_.size()) >= options_.max_nodes) {
    for (NodeMessage& m : Seal()) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace kdist
