#include "job/attempt_ledger.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/text.h"

namespace kdist {
namespace {

std::string SecondsText(Nanos value) {
  const int64_t whole = std::chrono::duration_cast<std::chrono::seconds>(value).count();
  return std::to_string(std::max<int64_t>(whole, 0)) + " s";
}

std::string TenthsText(double seconds) {
  if (seconds < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

// "21:14:03 (12.5 s)" when the wall clock is known, else "12.5 s".
std::string WhenText(double seconds, int64_t unix_millis) {
  if (seconds < 0) return "-";
  if (unix_millis <= 0) return TenthsText(seconds);
  return WallClockTime(unix_millis) + " (" + TenthsText(seconds) + ")";
}

}  // namespace

AttemptLedger::AttemptLedger(LedgerOptions options, Nanos start)
    : options_(std::move(options)), start_(start) {}

AttemptLedger::AttemptLedger(LedgerOptions options, LedgerState state)
    : options_(std::move(options)),
      start_(state.start),
      rows_(std::move(state.rows)),
      counted_restarts_(state.counted_restarts),
      previous_(std::move(state.previous)),
      reforms_(std::move(state.reforms)),
      gathering_(state.gathering),
      gathering_since_(state.gathering_since),
      over_(state.over),
      over_at_(state.over_at) {}

LedgerState AttemptLedger::State() const {
  return {start_, rows_, counted_restarts_, previous_, reforms_,
          gathering_, gathering_since_, over_, over_at_};
}

double AttemptLedger::SecondsSinceStart(Nanos at) const {
  return std::chrono::duration<double>(at - start_).count();
}

int64_t AttemptLedger::WallMillis(Nanos at) const {
  if (options_.wall_start_unix_millis <= 0) return 0;
  return options_.wall_start_unix_millis +
         std::chrono::duration_cast<std::chrono::milliseconds>(at - start_).count();
}

void AttemptLedger::End(AttemptRow& row, Nanos now) const {
  row.ended_seconds = SecondsSinceStart(now);
  row.ended_unix_millis = WallMillis(now);
}

AttemptRow* AttemptLedger::Running() {
  if (rows_.empty() || rows_.back().ended_seconds >= 0) return nullptr;
  return &rows_.back();
}

void AttemptLedger::Begin(int64_t port, std::vector<std::string> nodes, int64_t processes,
                          Nanos now) {
  AttemptRow row;
  row.attempt = static_cast<int64_t>(rows_.size());
  row.port = port;
  row.nodes = std::move(nodes);
  row.processes = processes;
  row.started_seconds = SecondsSinceStart(now);
  row.started_unix_millis = WallMillis(now);
  if (gathering_) {
    row.waited_seconds = std::chrono::duration<double>(now - gathering_since_).count();
    gathering_ = false;
  }
  rows_.push_back(std::move(row));
}

LedgerDecision AttemptLedger::Finished(Nanos now) {
  if (AttemptRow* row = Running()) {
    End(*row, now);
    row->ended = "finished";
  }
  Over(now);
  return {false, 0, ""};
}

LedgerDecision AttemptLedger::Failed(const JobFailure& failure, Nanos now) {
  AttemptRow* row = Running();
  if (row != nullptr) {
    End(*row, now);
    row->ended = failure.Record();
    row->exit_status = failure.exit_status;
  }
  const int64_t number = attempt();
  if (previous_.failed() && failure.SamePoint(previous_)) {
    Over(now);
    return {false, 1,
            "attempt " + std::to_string(number) + " failed as attempt " +
                std::to_string(number - 1) + " did, at the same point (" + failure.Text() +
                "); not restarting again"};
  }
  if (counted_restarts_ >= options_.max_restarts) {
    Over(now);
    return {false, failure.exit_status,
            "the job failed and no restart is left (--max-restarts " +
                std::to_string(options_.max_restarts) + "): " + failure.Text()};
  }
  ++counted_restarts_;
  previous_ = failure;
  return {true, 0,
          "attempt " + std::to_string(number) + " " + failure.Summary() +
              "; starting the job again (attempt " + std::to_string(number + 1) + " of at most " +
              std::to_string(options_.max_restarts + 1) + ")"};
}

LedgerDecision AttemptLedger::Reformed(const std::string& cause, bool progressed, Nanos now) {
  if (AttemptRow* row = Running()) {
    End(*row, now);
    row->ended = cause;
    row->exit_status = 0;
    row->counted = false;
  }
  previous_ = JobFailure{};  // a program's failure is compared with the same shape's only
  reforms_.erase(std::remove_if(reforms_.begin(), reforms_.end(),
                                [&](const auto& r) { return now - r.first >= options_.reform_window; }),
                 reforms_.end());
  // An attempt that saved a backup or stepped on was worth running: not thrashing.
  if (progressed) return {true, 0, cause};
  reforms_.emplace_back(now, "attempt " + std::to_string(attempt()) + ": " + cause);
  if (static_cast<int64_t>(reforms_.size()) <= options_.max_reforms) {
    return {true, 0, cause};
  }
  Over(now);
  std::vector<std::string> all;
  for (const auto& r : reforms_) all.push_back(r.second);
  return {false, 1,
          "the job re-formed " + std::to_string(reforms_.size()) + " times within " +
              SecondsText(options_.reform_window) +
              " without progress (more than --max-reforms " + std::to_string(options_.max_reforms) +
              " within --reform-window " + SecondsText(options_.reform_window) +
              ", none of them after a backup saved or a step past its start: the thrash guard "
              "ends it): " +
              Join(all, "; ")};
}

LedgerDecision AttemptLedger::Ended(const std::string& how, int64_t exit_status, Nanos now) {
  if (AttemptRow* row = Running()) {
    End(*row, now);
    row->ended = how;
    row->exit_status = exit_status;
  }
  Over(now);
  return {false, exit_status, how};
}

void AttemptLedger::NoteSteps(int64_t attempt, const StepReport& steps) {
  if (options_.wall_start_unix_millis <= 0 || !steps.any()) return;
  AttemptRow* row = nullptr;
  for (auto it = rows_.rbegin(); it != rows_.rend(); ++it) {
    if (it->attempt == attempt) {
      row = &*it;
      break;
    }
  }
  if (row == nullptr) return;
  const auto seconds = [&](int64_t unix_millis) {
    return unix_millis <= 0 ? -1.0
                            : static_cast<double>(unix_millis - options_.wall_start_unix_millis) / 1000.0;
  };
  if (steps.first_step >= 0 && steps.first_step_unix_millis > 0) {
    const double at = seconds(steps.first_step_unix_millis);
    if (row->first_step < 0 || steps.first_step < row->first_step) row->first_step = steps.first_step;
    if (row->first_step_seconds < 0 || at < row->first_step_seconds) row->first_step_seconds = at;
  }
  if (steps.step >= 0 && steps.step_unix_millis > 0 && steps.step >= row->step) {
    const double at = seconds(steps.step_unix_millis);
    if (steps.step > row->step || at > row->step_seconds) row->step_seconds = at;
    row->step = steps.step;
  }
}

void AttemptLedger::Gathering(Nanos now) {
  if (gathering_) return;
  gathering_ = true;
  gathering_since_ = now;
}

void AttemptLedger::Over(Nanos now) {
  if (over_) return;
  over_ = true;
  over_at_ = now;
  gathering_ = false;
}

Goodput AttemptLedger::GoodputAt(Nanos now) const {
  const double gathering = gathering_ ? SecondsSinceStart(gathering_since_) : -1.0;
  return GoodputOf(rows_, gathering, SecondsSinceStart(over_ ? over_at_ : now));
}

std::map<std::string, int64_t> AttemptLedger::Restarts() const {
  const bool after_last = !over_ && !rows_.empty() && rows_.back().ended_seconds >= 0;
  return RestartsByCause(rows_, after_last);
}

int64_t AttemptLedger::NewestStep() const {
  int64_t newest = -1;
  for (const AttemptRow& row : rows_) newest = std::max(newest, row.step);
  return newest;
}

void AttemptLedger::AddToLastEnd(const std::string& text) {
  if (!rows_.empty()) rows_.back().ended += text;
}

std::string AttemptLedger::Table() const {
  std::vector<std::vector<std::string>> rows = {
      {"attempt", "port", "status", "start", "end", "nodes", "processes", "counted", "ended"}};
  for (const AttemptRow& row : rows_) {
    const bool running = row.ended_seconds < 0;
    rows.push_back({std::to_string(row.attempt), std::to_string(row.port),
                    running ? "-" : std::to_string(row.exit_status),
                    WhenText(row.started_seconds, row.started_unix_millis),
                    WhenText(row.ended_seconds, row.ended_unix_millis),
                    row.nodes.empty() ? "-" : Join(row.nodes, ","), std::to_string(row.processes),
                    row.counted ? "yes" : "not counted against --max-restarts", running ? "running" : row.ended});
  }
  return AlignedTable(rows);
}

}  // namespace kdist
