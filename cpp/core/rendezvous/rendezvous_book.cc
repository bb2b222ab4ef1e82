// What the book's concerns share: the end of the job (for everyone, for one node),
// how a node is named, and finding a node by its connection. The concerns are in
// rendezvous_admission.cc, rendezvous_forming.cc, rendezvous_attempts.cc and
// rendezvous_elastic.cc.
#include "rendezvous/rendezvous_book.h"

#include <algorithm>
#include <utility>

#include "base/text.h"

namespace kdist {

RendezvousBook::RendezvousBook(RendezvousOptions options, Nanos start)
    : options_(std::move(options)),
      origin_(start),
      ledger_(options_.ledger, start),
      start_(start),
      last_join_(start) {
  ledger_.Gathering(start);  // the first gathering is goodput's waiting
}

RendezvousBook::Node* RendezvousBook::Placed(uint64_t connection, bool joining) {
  const auto it = places_.find(connection);
  if (it == places_.end() || it->second.joining != joining) return nullptr;
  return &(joining ? joining_ : nodes_)[it->second.index];
}

RendezvousBook::Node* RendezvousBook::NodeOn(uint64_t connection) {
  Node* node = Placed(connection, false);
  return node != nullptr && !node->lost ? node : nullptr;
}

void RendezvousBook::Reindex() {
  places_.clear();
  places_.reserve(nodes_.size() + joining_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) places_[nodes_[i].connection] = {false, i};
  for (size_t i = 0; i < joining_.size(); ++i) places_[joining_[i].connection] = {true, i};
}

void RendezvousBook::ReleaseName(const Node& node) {
  const auto it = name_holders_.find(node.hello.node_name);
  if (it != name_holders_.end() && it->second == node.connection) name_holders_.erase(it);
}

void RendezvousBook::Forget(std::vector<Node>& nodes, uint64_t connection) {
  for (auto it = nodes.begin(); it != nodes.end(); ++it) {
    if (it->connection != connection) continue;
    if (consistency_.has_value()) consistency_->Remove(it->id);
    ReleaseName(*it);
    nodes.erase(it);
    break;
  }
  Reindex();
  if (nodes_.empty() && joining_.empty()) ResetConsistency();
}

void RendezvousBook::ResetConsistency() {
  consistency_.reset();
  consistency_reference_id_ = -1;
  consistency_reference_.clear();
}

std::string RendezvousBook::JoinedList() const {
  if (nodes_.empty()) return "none";
  // At most kListedNodes names: the list goes into every admitted agent's reply and every
  // progress line, so its length (and the time to write it) must not grow with the job.
  std::string out;
  const size_t listed = std::min(nodes_.size(), kListedNodes);
  for (size_t i = 0; i < listed; ++i) {
    if (i > 0) out += ", ";
    out += nodes_[i].hello.node_name + " at " + nodes_[i].peer_host;
  }
  if (listed < nodes_.size()) out += " and " + std::to_string(nodes_.size() - listed) + " more";
  return out;
}

std::string RendezvousBook::NodeText(const Node& node) const {
  return "node " + node.hello.node_name + " (host " + SafeText(node.hello.host) + ", at " +
         node.peer_host + ")";
}

std::vector<NodeMessage> RendezvousBook::EndAll(StatusCode code, std::string message,
                                                int64_t status) {
  phase_ = Phase::kEnded;
  exit_status_ = status;
  ledger_.Over(now_);
  end_ = NodeReply{};
  end_.kind = NodeReplyKind::kEnd;
  end_.code = code;
  end_.message = message;
  end_.attempt = attempt_;
  end_.exit_status = status;
  end_.first_failure = first_failure_.failed() ? first_failure_.Text() : "";
  std::vector<NodeMessage> out;
  out.reserve(nodes_.size() + joining_.size());
  for (const std::vector<Node>* nodes : {&nodes_, &joining_}) {
    for (const Node& node : *nodes) {
      if (node.lost) continue;
      NodeMessage m = EndOne(node, code, message, status);
      m.reply.first_failure = end_.first_failure;
      out.push_back(std::move(m));
    }
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
  const auto it = places_.find(connection);
  if (it == places_.end() || it->second.joining) return std::nullopt;
  const Node& node = nodes_[it->second.index];
  if (node.lost) return std::nullopt;
  return node.hello.nonce;
}

}  // namespace kdist
