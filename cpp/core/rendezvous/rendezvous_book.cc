// What the book's concerns share: the end of the job (for everyone, for one node),
// how a node is named, and finding a node by its connection. The concerns are in
// rendezvous_admission.cc, rendezvous_forming.cc, rendezvous_attempts.cc and
// rendezvous_elastic.cc.
#include "rendezvous/rendezvous_book.h"

#include <utility>

#include "base/text.h"

namespace kdist {

RendezvousBook::RendezvousBook(RendezvousOptions options, Nanos start)
    : options_(std::move(options)),
      origin_(start),
      ledger_(options_.ledger, start),
      start_(start),
      last_join_(start) {}

RendezvousBook::Node* RendezvousBook::NodeOn(uint64_t connection) {
  for (Node& node : nodes_) {
    if (node.connection == connection && !node.lost) return &node;
  }
  return nullptr;
}

void RendezvousBook::Forget(std::vector<Node>& nodes, uint64_t connection) {
  for (auto it = nodes.begin(); it != nodes.end(); ++it) {
    if (it->connection != connection) continue;
    if (consistency_.has_value()) consistency_->Remove(it->id);
    nodes.erase(it);
    break;
  }
  if (nodes_.empty() && joining_.empty()) ResetConsistency();
}

void RendezvousBook::ResetConsistency() {
  consistency_.reset();
  consistency_reference_id_ = -1;
  consistency_reference_.clear();
}

std::vector<const RendezvousBook::Node*> RendezvousBook::LiveNodes() const {
  std::vector<const Node*> live;
  for (const Node& node : nodes_) live.push_back(&node);
  for (const Node& node : joining_) live.push_back(&node);
  return live;
}

std::string RendezvousBook::JoinedList() const {
  std::vector<std::string> parts;
  for (const Node& node : nodes_) parts.push_back(node.hello.node_name + " at " + node.peer_host);
  return parts.empty() ? "none" : Join(parts, ", ");
}

std::string RendezvousBook::NodeText(const Node& node) const {
  return "node " + node.hello.node_name + " (host " + SafeText(node.hello.host) + ", at " +
         node.peer_host + ")";
}

std::vector<NodeMessage> RendezvousBook::EndAll(StatusCode code, std::string message,
                                                int64_t status) {
  phase_ = Phase::kEnded;
  exit_status_ = status;
  end_ = NodeReply{};
  end_.kind = NodeReplyKind::kEnd;
  end_.code = code;
  end_.message = message;
  end_.attempt = attempt_;
  end_.exit_status = status;
  end_.first_failure = first_failure_.failed() ? first_failure_.Text() : "";
  std::vector<NodeMessage> out;
  for (const Node* node : LiveNodes()) {
    if (node->lost) continue;
    NodeMessage m = EndOne(*node, code, message, status);
    m.reply.first_failure = end_.first_failure;
    out.push_back(std::move(m));
  }
  return out;
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

}  // namespace kdist
