// Forming an attempt: the gathering's timed decisions (the last call, the join
// timeout), the roster of each attempt, and the progress line while gathering.
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

bool IsLoopbackText(std::string_view host) {
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "localhost";
}

}  // namespace

std::vector<NodeMessage> RendezvousBook::Tick(Nanos now) {
  now_ = now;
  if (std::vector<NodeMessage> lost = LoseDetached(now); !lost.empty()) return lost;
  if (phase_ == Phase::kRunning) return Grow(now);
  if (phase_ != Phase::kGathering) return {};
  const int64_t joined = static_cast<int64_t>(nodes_.size());
  if (joined >= options_.min_nodes && now - last_join_ >= options_.last_call) return Seal();
  if (now - start_ >= options_.join_timeout) return GatheringTimedOut(now);
  return {};
}

std::vector<NodeMessage> RendezvousBook::GatheringTimedOut(Nanos now) {
  const int64_t joined = static_cast<int64_t>(nodes_.size());
  exit_status_ = kExitNotEnoughNodes;
  if (!lost_.empty() && !ledger_.rows().empty()) {
    ledger_.AddToLastEnd("; fewer than MIN nodes came back");
  }
  return EndAll(StatusCode::kDeadlineExceeded,
                "the nodes' rendezvous timed out after " + Seconds(options_.join_timeout) +
                    " (--join-timeout) with " + std::to_string(joined) + " of " +
                    NodesText(options_.min_nodes, options_.max_nodes) + " nodes joined (" +
                    JoinedList() + ")" + LostText(now) +
                    "; start `kdist launch --nodes` with the same --rendezvous on " +
                    std::to_string(options_.min_nodes - joined) +
                    " more machine(s), or lower --nodes MIN",
                kExitNotEnoughNodes);
}

std::optional<Nanos> RendezvousBook::NextDeadline() const {
  std::optional<Nanos> next = DetachedDeadline();
  const auto sooner = [&next](Nanos at) { next = next.has_value() ? std::min(*next, at) : at; };
  if (phase_ == Phase::kRunning && !joining_.empty() && !growing_ &&
      options_.scale_up_after.has_value()) {
    sooner(joining_.front().joined_at + *options_.scale_up_after);
  }
  if (phase_ != Phase::kGathering) return next;
  sooner(start_ + options_.join_timeout);
  if (static_cast<int64_t>(nodes_.size()) >= options_.min_nodes) {
    sooner(last_join_ + options_.last_call);
  }
  return next;
}

std::string RendezvousBook::ProgressLine(Nanos now) const {
  const int64_t joined = static_cast<int64_t>(nodes_.size());
  std::string line = std::to_string(joined) + " of " +
                     NodesText(options_.min_nodes, options_.max_nodes) + " nodes joined (" +
                     JoinedList() + ")";
  if (phase_ != Phase::kGathering) return line;
  if (joined >= options_.max_nodes) return line + ": the job forms now";
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
  const std::string after_loss = lost_.empty() ? "" : ledger_.rows().back().ended;
  if (!lost_.empty()) {
    std::vector<Node> kept;
    for (Node& node : nodes_) {
      (node.id < regather_first_id_ ? kept : joining_).push_back(std::move(node));
    }
    nodes_ = std::move(kept);
    (void)AdmitJoining();
  }
  if (!ledger_.rows().empty()) ++attempt_;
  lost_.clear();
  // Node 0: the first agent on the rendezvous's own machine, else the first admitted;
  // the others keep their order of admission.
  auto local = std::find_if(nodes_.begin(), nodes_.end(),
                            [](const Node& n) { return n.on_rendezvous_machine; });
  if (local != nodes_.end()) std::rotate(nodes_.begin(), local, local + 1);
  Reindex();
  if (consistency_.has_value()) consistency_notes_ = consistency_->Differences(NodeNamer());
  return Rosters("", after_loss.empty() ? "" : EndedText(attempt_ - 1, after_loss));
}

std::string RendezvousBook::CoordinatorHost() const {
  // Node 0's address as the other agents reached it: for an agent on the rendezvous's
  // machine, the address they connected to (the first that is not loopback); for one
  // elsewhere, its address as the rendezvous saw it.
  const Node& zero = nodes_.front();
  if (!zero.on_rendezvous_machine) return zero.peer_host;
  for (const Node& node : nodes_) {
    if (&node != &zero && !IsLoopbackText(node.local_host) && !node.local_host.empty()) {
      return node.local_host;
    }
  }
  return zero.local_host;
}

std::vector<NodeMessage> RendezvousBook::Rosters(const std::string& first_failure,
                                                 const std::string& ended) {
  const Node& zero = nodes_.front();
  const std::string coordinator_host = CoordinatorHost();
  const int64_t previous_processes =
      ledger_.rows().empty() ? 0 : ledger_.rows().back().processes;
  std::vector<std::string> names;
  names.reserve(nodes_.size());
  for (size_t rank = 0; rank < nodes_.size(); ++rank) {
    const Node& node = nodes_[rank];
    names.push_back(node.hello.node_name);
    last_rank_[node.hello.node_name] = static_cast<int64_t>(rank);
  }
  ledger_.Begin(zero.next_port, std::move(names),
                static_cast<int64_t>(nodes_.size()) * options_.processes_per_node, now_);
  first_failure_ = JobFailure{};
  first_failure_named_ = false;
  progressed_ = false;

  // Each roster says how many nodes run the attempt, not which: O(1) bytes each. The
  // running attempt's roster is kept (roster_): a node back at a restored book is sent it.
  roster_ = NodeReply{};
  roster_.kind = NodeReplyKind::kRoster;
  roster_.attempt = attempt_;
  roster_.processes_per_node = options_.processes_per_node;
  roster_.coordinator_host = coordinator_host;
  roster_.coordinator_port = zero.next_port;
  roster_.node_count = static_cast<int64_t>(nodes_.size());
  roster_.previous_processes = previous_processes;
  roster_.run_id = options_.run_id;
  roster_.first_failure = first_failure;
  roster_.ended = ended;
  roster_.message = consistency_notes_;
  std::vector<NodeMessage> out;
  out.reserve(nodes_.size());
  unreported_ = static_cast<int64_t>(nodes_.size());
  for (size_t rank = 0; rank < nodes_.size(); ++rank) {
    Node& node = nodes_[rank];
    node.reported = false;
    NodeMessage m;
    m.connection = node.connection;
    m.reply = roster_;
    m.reply.node_rank = static_cast<int64_t>(rank);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace kdist
