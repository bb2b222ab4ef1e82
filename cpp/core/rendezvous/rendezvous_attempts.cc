// An attempt's end: each node's report (checked: signed, in order, about the running
// attempt), the job's first failure, and once every node reported, what follows — the
// end, a re-form (rendezvous_elastic.cc) or another attempt, as the job's ledger's one
// restart rule decides (job/attempt_ledger.h).
#include <utility>

#include "rendezvous/rendezvous_book.h"

namespace kdist {

StepReport RendezvousBook::StepsOf(const NodeReport& report) {
  StepReport steps;
  steps.first_step = report.first_step;
  steps.first_step_unix_millis = report.first_step_unix_millis;
  steps.step = report.step;
  steps.step_unix_millis = report.step_unix_millis;
  return steps;
}

std::vector<NodeMessage> RendezvousBook::RefuseReport(uint64_t connection,
                                                      const std::string& why) const {
  return {Refuse(connection, StatusCode::kFailedPrecondition, why)};
}

std::vector<NodeMessage> RendezvousBook::Report(uint64_t connection, const NodeReport& report,
                                                std::string_view frame, Nanos now) {
  now_ = now;
  if (Node* joining = Placed(connection, true)) return ReportOfJoining(*joining, report, frame);
  Node* node = NodeOn(connection);
  if (node == nullptr) {
    return RefuseReport(connection, "the nodes' rendezvous received a report from a "
                                    "connection that holds no node");
  }
  const std::string of = "the nodes' rendezvous refused a report of node " +
                         node->hello.node_name + " (at " + node->peer_host + ")";
  if (!NodeFrameVerifies(frame, report.mac, options_.token, node->challenge)) {
    return RefuseReport(connection, of + ": its MAC does not verify against the challenge of "
                                         "its connection");
  }
  if (report.sequence <= node->last_sequence) {
    return {Refuse(connection, StatusCode::kInvalidArgument,
                   of + ": frame " + std::to_string(report.sequence) + " comes after frame " +
                       std::to_string(node->last_sequence) + " (a replay?)")};
  }
  const std::string about = " about attempt " + std::to_string(report.attempt) +
                            ": the job's attempt is " + std::to_string(attempt_);
  if (report.drain) {  // a notice, not the attempt's end
    if (phase_ == Phase::kEnded || report.attempt > attempt_) {
      return RefuseReport(connection, "the nodes' rendezvous refused a drain notice of node " +
                                          node->hello.node_name + " (at " + node->peer_host +
                                          ")" + about);
    }
    node->last_sequence = report.sequence;
    return Drain(*node);
  }
  if (report.steps_only) {  // a step notice: goodput's and `kdist status`'s, nothing else
    node->last_sequence = report.sequence;
    // One that crossed the attempt's end on the wire is late, not wrong: dropped unanswered.
    if (phase_ != Phase::kRunning || report.attempt != attempt_ || node->reported) return {};
    ledger_.NoteSteps(attempt_, StepsOf(report));
    return {};
  }
  if (phase_ != Phase::kRunning || report.attempt != attempt_ || node->reported) {
    return RefuseReport(connection, of + about + (node->reported ? ", already reported" : ""));
  }
  node->last_sequence = report.sequence;
  node->reported = true;
  --unreported_;
  node->next_port = report.coordinator_port;
  progressed_ = progressed_ || report.progressed;
  ledger_.NoteSteps(attempt_, StepsOf(report));
  NoteFailure(*node, report);
  return AfterAttempt(now);
}

void RendezvousBook::NoteFailure(const Node& node, const NodeReport& report) {
  if (report.exit_status == 0 && !report.failure.failed()) return;
  // The first report that names a failure of its own (the node where it began) wins over
  // one that only says its processes ended (a consequence: the liveness channel ended them).
  const bool named = report.failure.failed() && report.failure.kind != FailureKind::kNodeEnded;
  if (first_failure_.failed() && (first_failure_named_ || !named)) return;
  first_failure_named_ = named;
  if (named) {
    first_failure_ = report.failure;
    if (first_failure_.node.empty()) first_failure_.node = node.hello.node_name;
    if (first_failure_.exit_status == 0) first_failure_.exit_status = report.exit_status;
    return;
  }
  first_failure_ = JobFailure{};
  first_failure_.kind = FailureKind::kNodeEnded;
  first_failure_.node = node.hello.node_name;
  first_failure_.host = node.hello.host;
  first_failure_.exit_status = report.exit_status != 0 ? report.exit_status : 1;
}

std::vector<NodeMessage> RendezvousBook::AfterAttempt(Nanos now) {
  if (unreported_ > 0) return {};  // a count, not a scan: each report costs O(1) until the last
  bool any_lost = false;
  bool any_survivor = false;
  bool any_drained = false;
  for (const Node& node : nodes_) {
    any_lost = any_lost || node.lost;
    any_survivor = any_survivor || !node.lost;
    any_drained = any_drained || node.draining;
  }
  // Every survivor's processes passed: the job finished (its processes could not have
  // without the lost node's).
  if (!first_failure_.failed() && any_survivor) {
    (void)ledger_.Finished(now);
    return EndAll(StatusCode::kOk, "every node's processes passed", 0);
  }
  if (any_lost || any_drained || growing_) return Reform(now);
  const LedgerDecision next = ledger_.Failed(first_failure_, now);
  if (!next.again) return EndAll(StatusCode::kFailedPrecondition, next.message, next.exit_status);
  (void)AdmitJoining();  // a new attempt anyway: with them
  ++attempt_;
  return Rosters(first_failure_.Text(), "");
}

}  // namespace kdist
