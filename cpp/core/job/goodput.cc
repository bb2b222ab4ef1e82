#include "job/goodput.h"

#include <algorithm>
#include <cstdio>

#include "job/attempt_ledger.h"

namespace kdist {
namespace {

std::string Tenths(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

}  // namespace

double Goodput::ratio() const {
  const double wall = wall_seconds();
  return wall > 0 ? productive_seconds / wall : 0.0;
}

std::string Goodput::Line() const {
  char percent[16];
  std::snprintf(percent, sizeof percent, "%.0f%%", 100.0 * ratio());
  return "productive " + Tenths(productive_seconds) + " (" + percent + " of " +
         Tenths(wall_seconds()) + "), starting " + Tenths(starting_seconds) + ", restarting " +
         Tenths(restarting_seconds) + ", recomputing " + Tenths(recomputing_seconds) +
         ", waiting " + Tenths(waiting_seconds);
}

Goodput GoodputOf(const std::vector<AttemptRow>& rows, double gathering_since, double now) {
  Goodput g;
  double previous_end = 0;  // where the last attempt's time ended
  int64_t newest = -1;      // the newest step any earlier attempt reached
  for (size_t i = 0; i < rows.size(); ++i) {
    const AttemptRow& row = rows[i];
    double& before_steps = i == 0 ? g.starting_seconds : g.restarting_seconds;
    const double start = std::clamp(row.started_seconds, previous_end, std::max(previous_end, now));
    const double end =
        std::clamp(row.ended_seconds < 0 ? now : row.ended_seconds, start, std::max(start, now));
    // The gap before it: gathering (waiting), else restarting (or starting, the first).
    const double gap = start - previous_end;
    const double waited = std::clamp(row.waited_seconds, 0.0, gap);
    g.waiting_seconds += waited;
    before_steps += gap - waited;
    previous_end = end;
    if (row.first_step < 0 || row.first_step_seconds < 0 || row.first_step_seconds >= end) {
      before_steps += end - start;  // no step in it: all of it before steps
      continue;
    }
    const double first = std::max(row.first_step_seconds, start);
    before_steps += first - start;
    // An attempt that ended otherwise than finished: from its newest step to its end, the
    // failure or the loss was being found and the attempt stopped (restarting).
    double stepping = end - first;
    if (row.ended_seconds >= 0 && row.ended != "finished") {
      const double newest_at = std::clamp(row.step_seconds, first, end);
      g.restarting_seconds += end - newest_at;
      stepping = newest_at - first;
    }
    double again = 0;
    if (newest >= 0 && row.first_step < newest) {
      const int64_t done = row.step - row.first_step;
      const double took = row.step_seconds - first;
      if (row.step <= newest || done <= 0 || took <= 0) {
        again = stepping;  // it never got past where an earlier attempt was
      } else {
        again = std::min(stepping, static_cast<double>(newest - row.first_step) * took /
                                       static_cast<double>(done));
      }
    }
    g.recomputing_seconds += again;
    g.productive_seconds += stepping - again;
    newest = std::max(newest, row.step);
  }
  // After the last attempt (or before the first): restarting, then waiting once it gathers.
  if (now > previous_end) {
    double& before_steps = rows.empty() ? g.starting_seconds : g.restarting_seconds;
    if (gathering_since >= 0) {
      const double from = std::clamp(gathering_since, previous_end, now);
      before_steps += from - previous_end;
      g.waiting_seconds += now - from;
    } else {
      before_steps += now - previous_end;
    }
  }
  return g;
}

std::map<std::string, int64_t> RestartsByCause(const std::vector<AttemptRow>& rows,
                                               bool restarting_after_last) {
  std::map<std::string, int64_t> causes;
  const size_t restarted = rows.empty() ? 0 : rows.size() - (restarting_after_last ? 0 : 1);
  for (size_t i = 0; i < restarted; ++i) {
    const AttemptRow& row = rows[i];
    if (row.ended_seconds < 0) continue;
    if (row.counted) {
      ++causes["failure"];
      continue;
    }
    bool named = false;
    // A re-form's cause names each event: "node lost: a; drained: b; node c joined (...)".
    size_t from = 0;
    while (from <= row.ended.size()) {
      size_t to = row.ended.find("; ", from);
      if (to == std::string::npos) to = row.ended.size();
      const std::string part = row.ended.substr(from, to - from);
      const char* cause = part.rfind("node lost:", 0) == 0     ? "node_lost"
                          : part.rfind("drained:", 0) == 0     ? "drained"
                          : part.rfind("stopped by", 0) == 0   ? "stopped"
                          : part.find(" joined") != std::string::npos ? "grown"
                                                                 : nullptr;
      if (cause != nullptr) {
        ++causes[cause];
        named = true;
      }
      from = to + 2;
    }
    if (!named) ++causes["reformed"];
  }
  return causes;
}

}  // namespace kdist
