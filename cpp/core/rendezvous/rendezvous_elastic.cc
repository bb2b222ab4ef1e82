// Elastic: a node lost (its connection closed, or its host unreachable), drained (its
// agent's drain notice) or added (admitted while the job runs) ends the running
// attempt; the next one runs at the new size at once, or the job gathers again when
// fewer than MIN remain. None of them counts against --max-restarts; the job's ledger's
// thrash guard counts them (job/attempt_ledger.h).
#include <algorithm>
#include <utility>

#include "base/text.h"
#include "rendezvous/rendezvous_book.h"

namespace kdist {
namespace {

std::string Seconds(Nanos value) {
  const int64_t whole = std::chrono::duration_cast<std::chrono::seconds>(value).count();
  return std::to_string(std::max<int64_t>(whole, 0)) + " s";
}

std::string NodesText(int64_t min_nodes, int64_t max_nodes) {
  return min_nodes == max_nodes ? std::to_string(min_nodes)
                                : std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

// The first kListedNodes of `names`, then how many more: a cause or a notice goes to every
// node, so its length must not grow with the nodes it names.
std::string Listed(const std::vector<std::string>& names) {
  if (names.size() <= kListedNodes) return Join(names, ", ");
  const std::vector<std::string> first(names.begin(), names.begin() + kListedNodes);
  return Join(first, ", ") + " and " + std::to_string(names.size() - kListedNodes) + " more";
}

}  // namespace

std::vector<NodeMessage> RendezvousBook::Leave(uint64_t connection, Nanos now) {
  now_ = now;
  if (phase_ == Phase::kGathering) {
    const size_t before = nodes_.size();
    Forget(nodes_, connection);
    if (nodes_.size() != before) last_join_ = std::max(last_join_, now - options_.last_call);
    return {};
  }
  if (Placed(connection, true) != nullptr) {
    Forget(joining_, connection);  // it never ran: the job is not disturbed
    return {};
  }
  Node* node = NodeOn(connection);
  if (node == nullptr || phase_ == Phase::kEnded) return {};
  // Its processes are ended by the liveness channel (or by its own agent, cut off);
  // what the attempt's end means is decided once every other node has reported.
  node->lost = true;
  node->lost_since = now;
  ReleaseName(*node);
  if (!node->reported) --unreported_;
  node->reported = true;
  return AfterAttempt(now);
}

std::string RendezvousBook::RemoveLeavers(std::vector<NodeMessage>& out) {
  std::vector<std::string> lost_names, drained_names;
  std::vector<Node> survivors;
  for (Node& node : nodes_) {
    if (!node.lost && !node.draining) {
      survivors.push_back(std::move(node));
      continue;
    }
    const std::string text = NodeText(node);
    if (consistency_.has_value()) consistency_->Remove(node.id);
    ReleaseName(node);
    if (node.lost) {
      lost_names.push_back(text);
      lost_.push_back({text, attempt_, node.lost_since});
      continue;
    }
    drained_names.push_back(text);
    const std::string why = stopped_by_.empty() ? text + " was drained"
                                                : "the job was stopped by " + stopped_by_;
    out.push_back(EndOne(node, StatusCode::kOk,
                         why + ": it leaves the job after attempt " + std::to_string(attempt_) +
                             ", which stopped at one agreed step",
                         kExitDrained));
  }
  nodes_ = std::move(survivors);
  growing_ = false;
  const std::vector<std::string> grown_names = AdmitJoining();
  std::vector<std::string> causes;
  if (!lost_names.empty()) causes.push_back("node lost: " + Listed(lost_names));
  if (!drained_names.empty() && !stopped_by_.empty()) {
    causes.push_back("stopped by " + stopped_by_);
  } else if (!drained_names.empty()) {
    causes.push_back("drained: " + Listed(drained_names));
  }
  if (!grown_names.empty()) {
    // "node h1 joined (host h1, at 10.0.0.2)": the event's words first, then where.
    std::vector<std::string> joined;
    for (const std::string& text : grown_names) {
      const size_t where = text.find(" (host ");
      joined.push_back(where == std::string::npos
                           ? text + " joined"
                           : text.substr(0, where) + " joined" + text.substr(where));
    }
    causes.push_back(Listed(joined));
  }
  return Join(causes, "; ");
}

std::vector<NodeMessage> RendezvousBook::Reform(Nanos now) {
  std::vector<NodeMessage> out;  // the drained agents' ends first
  const std::string cause = RemoveLeavers(out);
  const bool drained = !out.empty();
  first_failure_ = JobFailure{};
  const LedgerDecision next = ledger_.Reformed(cause, progressed_, now);
  const std::string ended = EndedText(attempt_, cause);
  const auto with = [&out](std::vector<NodeMessage> more) {
    for (NodeMessage& m : more) out.push_back(std::move(m));
    return std::move(out);
  };
  // Nobody left who wants to run: every node drained (SIGTERM to every agent), or drained
  // and lost: the job stops, as a stop signal stops it on one machine.
  if (nodes_.empty() && drained) {
    phase_ = Phase::kEnded;
    exit_status_ = kExitDrained;
    ledger_.AddToLastEnd("; nobody left");
    return out;
  }
  if (!next.again) return with(EndAll(StatusCode::kFailedPrecondition, next.message, next.exit_status));
  if (static_cast<int64_t>(nodes_.size()) >= options_.min_nodes) {
    lost_.clear();
    ++attempt_;
    return with(Rosters("", ended));
  }
  return with(GatherAgain(cause, ended, now));
}

std::vector<NodeMessage> RendezvousBook::GatherAgain(const std::string& cause,
                                                     const std::string& ended, Nanos now) {
  // Fewer than MIN: gather again, the survivors admitted already, for --join-timeout.
  phase_ = Phase::kGathering;
  ledger_.Gathering(now);
  regather_first_id_ = next_id_;
  start_ = now;
  last_join_ = now;
  if (nodes_.empty()) ResetConsistency();
  const std::string line = cause + "; " + std::to_string(nodes_.size()) + " of " +
                           NodesText(options_.min_nodes, options_.max_nodes) +
                           " nodes remain: gathering again (" + ProgressLine(now) + ")";
  std::vector<NodeMessage> out;
  for (const Node& node : nodes_) {
    NodeMessage m;
    m.connection = node.connection;
    m.reply.kind = NodeReplyKind::kWaiting;
    m.reply.message = line;
    m.reply.ended = ended;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<NodeMessage> RendezvousBook::Abandon(const std::string& why, Nanos now) {
  now_ = now;
  if (phase_ != Phase::kGathering || formed()) return {};
  return EndAll(StatusCode::kUnavailable,
                "the nodes' rendezvous ended while the job gathered: " + why +
                    "; start every agent again (with one --rendezvous address they all reach)",
                kExitLostRendezvous);
}

std::string RendezvousBook::LostText(Nanos now) const {
  if (lost_.empty()) return "";
  std::vector<std::string> parts;
  for (const LostNode& lost : lost_) {
    if (parts.size() == kListedNodes) break;
    parts.push_back(lost.text + " lost since " + Seconds(now - lost.since) + " ago (attempt " +
                    std::to_string(lost.attempt) + ")");
  }
  const size_t more = lost_.size() - parts.size();
  return "; the job had lost " + Join(parts, ", ") +
         (more > 0 ? " and " + std::to_string(more) + " more" : "");
}

std::vector<NodeMessage> RendezvousBook::Grow(Nanos now) {
  if (joining_.empty() || growing_ || !options_.scale_up_after.has_value() ||
      now - joining_.front().joined_at < *options_.scale_up_after) {
    return {};
  }
  growing_ = true;
  std::vector<std::string> names;
  for (const Node& node : joining_) {
    if (names.size() == kListedNodes) break;
    names.push_back(NodeText(node));
  }
  const size_t more = joining_.size() - names.size();
  return StopRunningNodes(Join(names, ", ") +
                          (more > 0 ? " and " + std::to_string(more) + " more" : "") +
                          " joined: attempt " + std::to_string(attempt_) +
                          " stops at one agreed step, the next runs with " +
                          std::to_string(nodes_.size() + joining_.size()) + " nodes");
}

std::vector<NodeMessage> RendezvousBook::StopRunningNodes(const std::string& why) const {
  std::vector<NodeMessage> out;
  out.reserve(static_cast<size_t>(unreported_));
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
  Reindex();
  return names;
}

std::vector<NodeMessage> RendezvousBook::ReportOfJoining(Node& node, const NodeReport& report,
                                                         std::string_view frame) {
  // A joining node runs nothing: its only report is a drain notice, and it leaves.
  if (!report.drain || !NodeFrameVerifies(frame, report.mac, options_.token, node.challenge) ||
      report.sequence <= node.last_sequence) {
    return RefuseReport(node.connection, "the nodes' rendezvous refused a report of joining " +
                                             NodeText(node) + ": it runs no attempt yet");
  }
  std::vector<NodeMessage> out = {
      EndOne(node, StatusCode::kOk, NodeText(node) + " was drained before it joined", kExitDrained)};
  Forget(joining_, node.connection);
  return out;
}

std::vector<NodeMessage> RendezvousBook::Drain(Node& node) {
  if (phase_ == Phase::kGathering) return DrainWhileGathering(node);
  if (node.draining) return {};
  node.draining = true;
  return StopRunningNodes(NodeText(node) + " is drained (its agent received SIGTERM): attempt " +
                          std::to_string(attempt_) +
                          " stops at one agreed step, the next runs without it");
}

std::vector<NodeMessage> RendezvousBook::DrainWhileGathering(Node& node) {
  // Nothing runs: it leaves at once.
  std::vector<NodeMessage> out = {EndOne(node, StatusCode::kOk,
                                         NodeText(node) + " was drained while the job gathered",
                                         kExitDrained)};
  Forget(nodes_, node.connection);
  if (nodes_.empty() && !ledger_.rows().empty()) {
    // Gathering again after a loss or a drain, and the last one left is drained too
    // (SIGTERM to every agent, their signals apart): nobody is left to run the job.
    phase_ = Phase::kEnded;
    exit_status_ = kExitDrained;
    ledger_.AddToLastEnd("; then every other node was drained");
  }
  return out;
}

}  // namespace kdist
