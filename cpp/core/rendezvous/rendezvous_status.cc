// `kdist status` and `/metrics`: the book's state as one JSON object (schema 1), answered to
// a hello whose purpose is kStatus from anyone who proves the job's token, while the job
// gathers, runs, and after it ended (while the rendezvous still serves).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "base/text.h"
#include "rendezvous/rendezvous_book.h"

namespace kdist {
namespace {

using Json = nlohmann::ordered_json;

Json RowJson(const AttemptRow& row) {
  return Json{{"attempt", row.attempt},
              {"port", row.port},
              {"nodes", row.nodes},
              {"processes", row.processes},
              {"started_seconds", row.started_seconds},
              {"ended_seconds", row.ended_seconds < 0 ? Json() : Json(row.ended_seconds)},
              {"ended", row.ended_seconds < 0 ? "running" : row.ended},
              {"exit_status", row.ended_seconds < 0 ? Json() : Json(row.exit_status)},
              {"counted", row.counted},
              {"first_step", row.first_step < 0 ? Json() : Json(row.first_step)},
              {"step", row.step < 0 ? Json() : Json(row.step)}};
}

Json GoodputJson(const Goodput& g) {
  return Json{{"productive_seconds", g.productive_seconds},
              {"starting_seconds", g.starting_seconds},
              {"restarting_seconds", g.restarting_seconds},
              {"recomputing_seconds", g.recomputing_seconds},
              {"waiting_seconds", g.waiting_seconds},
              {"ratio", g.ratio()}};
}

}  // namespace

std::string RendezvousBook::StatusJson(Nanos now, size_t limit) const {
  const auto seconds = [this](Nanos at) {
    return std::chrono::duration<double>(at - origin_).count();
  };
  std::string state;
  if (phase_ == Phase::kGathering) {
    state = "gathering";
  } else if (phase_ == Phase::kEnded) {
    state = exit_status_ == 0 ? "finished" : "failed";
  } else {
    const bool draining = std::any_of(nodes_.begin(), nodes_.end(),
                                      [](const Node& n) { return n.draining; });
    state = draining || growing_ || !stopped_by_.empty() ? "stopping" : "running";
  }
  int64_t per_node = options_.processes_per_node;
  if (per_node <= 0 && !nodes_.empty()) per_node = nodes_.front().hello.processes_per_node;
  Json nodes = Json::array();
  int64_t processes = 0;
  for (size_t rank = 0; rank < nodes_.size(); ++rank) {
    const Node& node = nodes_[rank];
    Json ids = Json::array();
    if (phase_ == Phase::kRunning && !node.lost) {
      for (int64_t i = 0; i < per_node; ++i) ids.push_back(static_cast<int64_t>(rank) * per_node + i);
    }
    processes += static_cast<int64_t>(ids.size());
    nodes.push_back(Json{{"name", node.hello.node_name},
                         {"host", SafeText(node.hello.host)},
                         {"address", node.peer_host},
                         {"rank", formed() ? Json(rank) : Json()},
                         {"processes", std::move(ids)},
                         {"joined_seconds", seconds(node.admitted_at)},
                         {"draining", node.draining},
                         {"lost", node.lost},
                         {"detached", node.detached()},
                         {"joining", false}});
  }
  for (const Node& node : joining_) {
    nodes.push_back(Json{{"name", node.hello.node_name},
                         {"host", SafeText(node.hello.host)},
                         {"address", node.peer_host},
                         {"rank", Json()},
                         {"processes", Json::array()},
                         {"joined_seconds", seconds(node.admitted_at)},
                         {"draining", node.draining},
                         {"lost", false},
                         {"detached", false},
                         {"joining", true}});
  }
  const int64_t step = ledger_.NewestStep();
  Json restarts = Json::object();
  for (const auto& [cause, count] : ledger_.Restarts()) restarts[cause] = count;
  const std::vector<AttemptRow>& rows = ledger_.rows();
  const Goodput goodput = ledger_.GoodputAt(now);
  Json status{{"schema", 1},
              {"job_id", options_.job_id},
              {"state", state},
              {"attempt", formed() ? Json(attempt_) : Json()},
              {"nodes", std::move(nodes)},
              {"processes", processes},
              {"step", step < 0 ? Json() : Json(step)},
              {"restarts", std::move(restarts)},
              {"attempts", Json::array()},
              {"goodput", GoodputJson(goodput)},
              {"elapsed_seconds", goodput.wall_seconds()},
              {"exit_status", phase_ == Phase::kEnded ? Json(exit_status_) : Json()},
              {"attempts_left_off", 0}};
  // The attempts, the newest kept when they do not all fit.
  size_t first = 0;
  while (true) {
    Json attempts = Json::array();
    for (size_t i = first; i < rows.size(); ++i) attempts.push_back(RowJson(rows[i]));
    status["attempts"] = std::move(attempts);
    status["attempts_left_off"] = first;
    std::string text = status.dump();
    if (text.size() <= limit || first >= rows.size()) {
      if (text.size() > limit) {  // the nodes alone are too many: name how many, list none
        status["nodes_left_off"] = status["nodes"].size();
        status["nodes"] = Json::array();
        text = status.dump();
      }
      return text;
    }
    first = std::max(first + 1, first + (rows.size() - first) / 4);
  }
}

std::vector<NodeMessage> RendezvousBook::StatusAnswer(uint64_t connection, const NodeHello& hello,
                                                      const Arrival& arrival, Nanos now) const {
  if (hello.job_id != options_.job_id) {
    return {Refuse(connection, StatusCode::kFailedPrecondition,
                   "the nodes' rendezvous refused kdist status (host " + SafeText(hello.host) +
                       ", at " + arrival.peer_host + "): it names job id " + Quote(hello.job_id) +
                       "; this rendezvous forms job id " + Quote(options_.job_id) +
                       "; give kdist status the job's --job-id")};
  }
  NodeMessage answer;
  answer.connection = connection;
  answer.reply.kind = NodeReplyKind::kStatus;
  answer.reply.attempt = attempt_;
  answer.reply.status = StatusJson(now);
  return {answer};
}

}  // namespace kdist
