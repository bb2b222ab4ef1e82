#include "job/job_failure.h"

#include <vector>

#include "base/text.h"

namespace kdist {

std::string JobFailure::Where() const {
  std::vector<std::string> parts;
  if (!node.empty()) parts.push_back("node " + SafeText(node));
  if (!host.empty()) parts.push_back("host " + SafeText(host));
  if (pid > 0) parts.push_back("pid " + std::to_string(pid));
  std::string out = process_id >= 0 ? "process " + std::to_string(process_id) : "a process";
  if (!parts.empty()) out += " (" + Join(parts, ", ") + ")";
  return out;
}

std::string JobFailure::Summary() const {
  switch (kind) {
    case FailureKind::kNone: return "finished";
    case FailureKind::kProcess:
    case FailureKind::kNodeEnded:
      return "failed (" +
             (ended_how.empty() ? "status " + std::to_string(exit_status) : ended_how) + ")";
    case FailureKind::kStopped:
      return step >= 0 ? "stopped at step " + std::to_string(step) : "stopped at once";
    case FailureKind::kStalled: return "stalled";
  }
  return "failed";
}

std::string JobFailure::Text() const {
  switch (kind) {
    case FailureKind::kNone: return "finished";
    case FailureKind::kProcess: return Where() + (what.empty() ? "" : ": " + what);
    case FailureKind::kNodeEnded:
      return "node " + SafeText(node) + "'s processes ended with status " +
             std::to_string(exit_status) + (what.empty() ? "" : " (" + what + ")");
    case FailureKind::kStopped:
      return (step >= 0 ? "every process stopped at step " + std::to_string(step)
                        : std::string("the job stopped at once")) +
             ": " + Where() + " asked to stop" + (what.empty() ? "" : " (" + what + ")");
    case FailureKind::kStalled: return "the job stalled" + (what.empty() ? "" : ": " + what);
  }
  return what;
}

std::string JobFailure::Record() const {
  if (kind == FailureKind::kProcess || kind == FailureKind::kNodeEnded) {
    return Summary() + ": " + Text();
  }
  return Text();
}

bool JobFailure::SamePoint(const JobFailure& other) const {
  return kind == other.kind && process_id == other.process_id && node == other.node &&
         exit_status == other.exit_status && what == other.what && step == other.step;
}

}  // namespace kdist
