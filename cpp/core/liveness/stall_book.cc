#include "liveness/stall_book.h"

#include <algorithm>

#include "base/deadline.h"
#include "base/process_list.h"
#include "base/text.h"

namespace kdist {
namespace {

// "process 1 (host node-1, pid 4242)", "processes [1, 3] (hosts a,b)".
std::string Who(const std::vector<const ProgressReport*>& reports) {
  if (reports.size() == 1) {
    const ProgressReport& r = *reports.front();
    return "process " + std::to_string(r.process_id) + " (host " +
           (r.host.empty() ? std::string("unknown") : RelayText(r.host)) +
           (r.pid > 0 ? ", pid " + std::to_string(r.pid) : std::string()) + ")";
  }
  std::vector<int64_t> ids;
  std::vector<std::string> hosts;
  for (const ProgressReport* r : reports) {
    ids.push_back(r->process_id);
    if (!r->host.empty()) hosts.push_back(r->host);
  }
  return "processes [" + FormatIdList(ids) + "]" +
         (hosts.empty() ? std::string() : " (hosts " + FormatHostList(hosts) + ")");
}

std::string AtStep(int64_t step) {
  return step < 0 ? std::string(" before its first step") : " at step " + std::to_string(step);
}

}  // namespace

bool StallBook::OnStalled(int64_t process_id, const std::set<int64_t>& running) {
  (void)process_id;
  if (started_) return false;
  started_ = true;
  awaited_ = running;
  return true;
}

std::optional<StallVerdict> StallBook::OnReport(const ProgressReport& report) {
  if (!deciding() || awaited_.erase(report.process_id) == 0) return std::nullopt;
  reports_[report.process_id] = report;
  return awaited_.empty() ? Decide() : std::nullopt;
}

std::optional<StallVerdict> StallBook::OnGone(int64_t process_id) {
  if (!deciding() || awaited_.erase(process_id) == 0) return std::nullopt;
  return awaited_.empty() ? Decide() : std::nullopt;
}

std::optional<StallVerdict> StallBook::Decide() {
  if (!deciding()) return std::nullopt;
  decided_ = true;
  std::vector<const ProgressReport*> judged;
  for (const auto& [id, report] : reports_) {
    if (report.armed) judged.push_back(&report);
  }
  StallVerdict verdict;
  if (judged.empty()) {
    verdict.message = "a process made no progress for " + FormatTimeout(timeout_) +
                      ", but no process answered with its step in time";
    return verdict;
  }
  int64_t lowest = judged.front()->step, highest = lowest;
  for (const ProgressReport* r : judged) {
    lowest = std::min(lowest, r->step);
    highest = std::max(highest, r->step);
  }
  std::vector<const ProgressReport*> stuck, ahead;
  for (const ProgressReport* r : judged) {
    if (lowest < highest) {
      (r->step == lowest ? stuck : ahead).push_back(r);
    } else if (r->idle >= timeout_) {
      stuck.push_back(r);
    }
  }
  if (stuck.empty()) {  // everyone moved on meanwhile: name the longest idle
    stuck.push_back(*std::max_element(judged.begin(), judged.end(),
                                      [](auto* a, auto* b) { return a->idle < b->idle; }));
  }
  Nanos idle{0};
  for (const ProgressReport* r : stuck) {
    verdict.stuck.push_back(r->process_id);
    idle = std::max(idle, r->idle);
  }
  verdict.message = Who(stuck) + " made no progress for " + FormatElapsed(idle) +
                    AtStep(stuck.front()->step);
  if (!ahead.empty()) {
    // Those ahead, by the step they reached (usually one: the next).
    std::map<int64_t, std::vector<const ProgressReport*>> by_step;
    for (const ProgressReport* r : ahead) by_step[r->step].push_back(r);
    std::vector<std::string> parts;
    for (const auto& [step, reports] : by_step) {
      std::vector<int64_t> ids;
      for (const ProgressReport* r : reports) ids.push_back(r->process_id);
      parts.push_back((ids.size() == 1 ? "process " : "processes [") + FormatIdList(ids) +
                      (ids.size() == 1 ? "" : "]") + " reached step " + std::to_string(step));
    }
    verdict.message += "; " + Join(parts, "; ");
  }
  return verdict;
}

}  // namespace kdist
