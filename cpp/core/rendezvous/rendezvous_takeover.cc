// A book restored on another machine (`--rendezvous etcd://...`: the machine that ran it
// was lost, its state was kept in etcd): its nodes are detached until their agents come
// back. An agent that comes back (a hello whose purpose is kRejoin, from the same node name, host
// and pid, proving the job's token as any hello does) takes its node back, its rank and
// attempt with it, and is sent again what it may have missed: the running attempt's
// roster (unless its node has reported it), a stop of it, the end. A node whose agent is
// gone (NodeGone: its key in the store expired) or not back within `reconnect_window` is
// lost, exactly as one whose connection closed.
#include <algorithm>
#include <utility>

#include "base/text.h"
#include "rendezvous/rendezvous_book.h"

namespace kdist {

RendezvousBook::Node* RendezvousBook::NodeNamed(const std::string& name) {
  const auto holder = name_holders_.find(name);
  if (holder == name_holders_.end()) return nullptr;
  const auto place = places_.find(holder->second);
  if (place == places_.end()) return nullptr;
  Node& node = (place->second.joining ? joining_ : nodes_)[place->second.index];
  return node.lost ? nullptr : &node;
}

std::vector<std::string> RendezvousBook::DetachedNodes() const {
  std::vector<std::string> names;
  for (const std::vector<Node>* nodes : {&nodes_, &joining_}) {
    for (const Node& node : *nodes) {
      if (node.detached() && !node.lost) names.push_back(node.hello.node_name);
    }
  }
  return names;
}

std::vector<NodeMessage> RendezvousBook::Rejoin(uint64_t connection, const NodeHello& hello,
                                                const Arrival& arrival,
                                                const std::string& refused) {
  Node* node = NodeNamed(hello.node_name);
  if (node == nullptr) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   refused + "it comes back as node " + SafeText(hello.node_name) +
                       ", which is not a node of the job now (lost, drained, or never "
                       "admitted); the job goes on without it")};
  }
  if (node->hello.pid != hello.pid || node->hello.host != hello.host) {
    return {Refuse(connection, StatusCode::kAlreadyExists,
                   refused + "node " + node->hello.node_name + " is the agent of host " +
                       SafeText(node->hello.host) + ", pid " + std::to_string(node->hello.pid) +
                       "; this one is not it")};
  }
  // Its connection from now on (an attached node's old one, half closed, is forgotten).
  node->connection = connection;
  name_holders_[node->hello.node_name] = connection;
  node->challenge = arrival.nonce;
  node->hello.nonce = hello.nonce;
  node->last_sequence = 1;
  node->peer_host = arrival.peer_host;
  node->local_host = arrival.local_host;
  node->on_rendezvous_machine =
      !arrival.peer_host.empty() && arrival.peer_host == arrival.local_host;
  node->detached_since = Nanos(0);
  Reindex();  // its connection changed (O(N), once per node that comes back)
  const auto in_roster = std::find_if(nodes_.begin(), nodes_.end(),
                                      [&](const Node& n) { return &n == node; });
  const size_t rank = static_cast<size_t>(in_roster - nodes_.begin());
  NodeMessage admitted;
  admitted.connection = connection;
  admitted.reply.kind = NodeReplyKind::kAdmitted;
  admitted.reply.message =
      "node " + node->hello.node_name + " is back at the job's rendezvous (attempt " +
      std::to_string(attempt_) +
      (in_roster == nodes_.end() ? std::string(", joining")
                                 : ", node " + std::to_string(rank) + " of " +
                                       std::to_string(nodes_.size())) +
      ")";
  std::vector<NodeMessage> out = {std::move(admitted)};
  for (NodeMessage& m : CatchUp(*node, in_roster == nodes_.end() ? nodes_.size() : rank)) {
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::CatchUp(const Node& node, size_t rank) const {
  NodeMessage m;
  m.connection = node.connection;
  if (phase_ == Phase::kEnded) {
    m.reply = end_;
    return {std::move(m)};
  }
  if (phase_ == Phase::kGathering) {
    m.reply.kind = NodeReplyKind::kWaiting;
    m.reply.message = ProgressLine(now_);
    return {std::move(m)};
  }
  if (rank >= nodes_.size() || node.reported) return {};  // joining, or done with it
  m.reply = roster_;
  m.reply.node_rank = static_cast<int64_t>(rank);
  std::vector<NodeMessage> out = {std::move(m)};
  const bool stopping = growing_ || std::any_of(nodes_.begin(), nodes_.end(),
                                                [](const Node& n) { return n.draining; });
  if (stopping) {
    NodeMessage stop;
    stop.connection = node.connection;
    stop.reply.kind = NodeReplyKind::kStop;
    stop.reply.attempt = attempt_;
    stop.reply.message = "attempt " + std::to_string(attempt_) +
                         " stops at one agreed step (told again: the job's rendezvous moved)";
    out.push_back(std::move(stop));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::NodeGone(const std::string& name, Nanos now) {
  now_ = now;
  Node* node = NodeNamed(name);
  if (node == nullptr || phase_ == Phase::kEnded) return {};
  return Leave(node->connection, now);
}

std::optional<Nanos> RendezvousBook::DetachedDeadline() const {
  // No scan once no node is detached (a book never restored, or every agent back): the
  // embedded rendezvous's cost per wake stays O(1).
  if (!detached_) return std::nullopt;
  std::optional<Nanos> first;
  for (const std::vector<Node>* nodes : {&nodes_, &joining_}) {
    for (const Node& node : *nodes) {
      if (!node.detached() || node.lost) continue;
      const Nanos at = node.detached_since + options_.reconnect_window;
      if (!first.has_value() || at < *first) first = at;
    }
  }
  return first;
}

std::vector<NodeMessage> RendezvousBook::LoseDetached(Nanos now) {
  if (phase_ == Phase::kEnded || !detached_) return {};
  std::vector<uint64_t> late;
  bool any = false;
  for (const std::vector<Node>* nodes : {&nodes_, &joining_}) {
    for (const Node& node : *nodes) {
      if (!node.detached() || node.lost) continue;
      any = true;
      if (now - node.detached_since >= options_.reconnect_window) late.push_back(node.connection);
    }
  }
  detached_ = any;
  std::vector<NodeMessage> out;
  for (uint64_t connection : late) {
    for (NodeMessage& m : Leave(connection, now)) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace kdist
