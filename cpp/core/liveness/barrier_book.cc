#include "liveness/barrier_book.h"

#include <algorithm>
#include <utility>

#include "base/deadline.h"
#include "base/process_list.h"
#include "base/text.h"

namespace kdist {

BarrierBook::BarrierBook(std::vector<std::string> hosts) : hosts_(std::move(hosts)) {}

void BarrierBook::SetHost(int64_t process_id, const std::string& host) {
  if (process_id < 0 || process_id > (int64_t{1} << 20)) return;
  if (hosts_.size() <= static_cast<size_t>(process_id)) {
    hosts_.resize(static_cast<size_t>(process_id) + 1);
  }
  hosts_[static_cast<size_t>(process_id)] = host;
}

std::string BarrierBook::Missing(const Open& open, const std::set<int64_t>& running) const {
  std::vector<ProcessHost> missing;
  for (int64_t id : running) {
    if (open.names.count(id) == 0) {
      const std::string host =
          id >= 0 && static_cast<size_t>(id) < hosts_.size() ? hosts_[static_cast<size_t>(id)] : "";
      missing.push_back({id, host});
    }
  }
  return FormatProcessList(missing);
}

BarrierVerdict BarrierBook::Fail(int64_t index, BarrierVerdict::Kind kind, std::string message) {
  Open& open = open_[index];
  BarrierVerdict verdict;
  verdict.kind = kind;
  verdict.index = index;
  verdict.name = open.names.empty() ? "" : open.names.begin()->second;
  for (const auto& [id, name] : open.names) verdict.to.push_back(id);
  verdict.message = std::move(message);
  failed_[index] = verdict;
  open_.erase(index);
  return verdict;
}

std::optional<BarrierVerdict> BarrierBook::Check(int64_t index,
                                                 const std::set<int64_t>& running) {
  auto it = open_.find(index);
  if (it == open_.end()) return std::nullopt;
  Open& open = it->second;
  // Different names at one barrier: say which processes are at each.
  if (open.name_counts.size() > 1) {
    std::map<std::string, std::vector<int64_t>> by_name;
    for (const auto& [id, name] : open.names) by_name[name].push_back(id);
    std::vector<std::string> parts;
    for (const auto& [name, ids] : by_name) {
      parts.push_back((ids.size() == 1 ? "process " : "processes [") + FormatIdList(ids) +
                      (ids.size() == 1 ? "" : "]") + " at " + Quote(name));
    }
    return Fail(index, BarrierVerdict::Kind::kMismatch,
                "processes met at barriers of different names (their barrier call #" +
                    std::to_string(index + 1) + "): " + Join(parts, "; ") +
                    ". Every process must call kdist.barrier() with the same names in the "
                    "same order.");
  }
  for (int64_t id : running) {
    if (open.names.count(id) == 0) return std::nullopt;  // still waiting for someone
  }
  BarrierVerdict verdict;
  verdict.kind = BarrierVerdict::Kind::kReleased;
  verdict.index = index;
  verdict.name = open.names.empty() ? "" : open.names.begin()->second;
  for (const auto& [id, name] : open.names) verdict.to.push_back(id);
  open_.erase(it);
  return verdict;
}

std::vector<BarrierVerdict> BarrierBook::OnArrive(const BarrierArrival& arrival,
                                                  const std::set<int64_t>& running, Nanos now) {
  return OnArrive(arrival, static_cast<int64_t>(running.size()), [&] { return running; }, now);
}

std::vector<BarrierVerdict> BarrierBook::OnArrive(
    const BarrierArrival& arrival, int64_t running_count,
    const std::function<std::set<int64_t>()>& running, Nanos now) {
  std::vector<BarrierVerdict> out;
  auto failed = failed_.find(arrival.index);
  if (failed != failed_.end()) {
    BarrierVerdict late = failed->second;  // the same failure, for this one too
    late.to = {arrival.process_id};
    out.push_back(std::move(late));
    return out;
  }
  auto [it, fresh] = open_.try_emplace(arrival.index);
  Open& open = it->second;
  if (fresh) {
    open.first_arrival = now;
    open.deadline = arrival.deadline;
  } else {
    open.deadline = std::min(open.deadline, arrival.deadline);
  }
  auto [named, first] = open.names.try_emplace(arrival.process_id, arrival.name);
  if (!first) {
    if (--open.name_counts[named->second] == 0) open.name_counts.erase(named->second);
    named->second = arrival.name;
  }
  ++open.name_counts[arrival.name];
  // Until as many arrived as run, and under one name, nothing is decided: the set
  // of running processes is only built (O(n)) for the check that can release.
  if (open.name_counts.size() == 1 && static_cast<int64_t>(open.names.size()) < running_count) {
    return out;
  }
  if (std::optional<BarrierVerdict> verdict = Check(arrival.index, running())) {
    out.push_back(std::move(*verdict));
  }
  return out;
}

std::vector<BarrierVerdict> BarrierBook::OnTime(Nanos now, const std::set<int64_t>& running) {
  std::vector<BarrierVerdict> out;
  std::vector<int64_t> due;
  for (const auto& [index, open] : open_) {
    if (open.deadline <= now) due.push_back(index);
  }
  for (int64_t index : due) {
    Open& open = open_[index];
    const std::string name = open.names.empty() ? "" : open.names.begin()->second;
    std::vector<int64_t> arrived;
    for (const auto& [id, _] : open.names) arrived.push_back(id);
    out.push_back(Fail(index, BarrierVerdict::Kind::kTimedOut,
                       "barrier " + Quote(name) + " timed out after " +
                           FormatElapsed(now - open.first_arrival) + ": " +
                           Missing(open, running) + " did not arrive; " +
                           (arrived.size() == 1 ? "process " : "processes [") +
                           FormatIdList(arrived) + (arrived.size() == 1 ? "" : "]") +
                           " waited"));
  }
  return out;
}

std::vector<BarrierVerdict> BarrierBook::OnGone(int64_t process_id, std::string_view how,
                                                const std::set<int64_t>& running) {
  std::vector<BarrierVerdict> out;
  std::vector<int64_t> indices;
  for (const auto& [index, open] : open_) indices.push_back(index);
  for (int64_t index : indices) {
    Open& open = open_[index];
    if (open.names.count(process_id) == 0 && !open.names.empty()) {
      const std::string name = open.names.begin()->second;
      out.push_back(Fail(index, BarrierVerdict::Kind::kAbandoned,
                         "barrier " + Quote(name) + ": process " + std::to_string(process_id) + " " +
                             std::string(how) +
                             " without reaching it, so it can never be released"));
      continue;
    }
    if (std::optional<BarrierVerdict> verdict = Check(index, running)) {
      out.push_back(std::move(*verdict));
    }
  }
  return out;
}

LiveNotice BarrierNotice(const BarrierVerdict& verdict) {
  LiveNotice notice;
  notice.kind = LiveKind::kBarrierDone;
  notice.index = verdict.index;
  notice.name = verdict.name;
  notice.code = static_cast<int64_t>(verdict.kind);
  notice.message = verdict.message;
  return notice;
}

Status BarrierStatus(const LiveNotice& done) {
  switch (static_cast<BarrierVerdict::Kind>(done.code)) {
    case BarrierVerdict::Kind::kReleased: return Status::Ok();
    case BarrierVerdict::Kind::kTimedOut: return DeadlineExceeded(done.message);
    default: return FailedPrecondition(done.message);
  }
}

std::optional<Nanos> BarrierBook::NextDeadline() const {
  std::optional<Nanos> next;
  for (const auto& [index, open] : open_) {
    if (!next || open.deadline < *next) next = open.deadline;
  }
  return next;
}

}  // namespace kdist
