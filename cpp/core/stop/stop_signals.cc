#include "stop/stop_signals.h"

#include <algorithm>
#include <csignal>
#include <utility>

#include "base/text.h"

namespace kdist {
namespace {

struct Named {
  const char* name;
  int number;
};

// SIGTERM first (the default), then what schedulers send before a kill or a
// time limit (Slurm --signal, Kubernetes preStop hooks, batch systems).
constexpr Named kStopSignals[] = {
    {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGALRM", SIGALRM}, {"SIGXCPU", SIGXCPU},
};

}  // namespace

const std::vector<std::string>& StopSignalNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Named& s : kStopSignals) out.emplace_back(s.name);
    return out;
  }();
  return names;
}

Result<std::vector<int>> ParseStopSignals(std::string_view text) {
  const std::string trimmed = Lower(Trim(text));
  if (trimmed == "none" || trimmed == "off") return std::vector<int>{};
  if (trimmed.empty()) {
    return InvalidArgument("is empty; expected signal names separated by commas, such as "
                           "\"SIGTERM,SIGUSR1\", or \"none\"");
  }
  std::vector<int> out;
  const std::vector<std::string_view> entries = Split(text, ',');
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string name = Upper(Trim(entries[i]));
    if (name.empty()) {
      return InvalidArgument("entry " + std::to_string(i + 1) + " of " +
                             std::to_string(entries.size()) +
                             " is empty; expected signal names separated by commas");
    }
    if (name.rfind("SIG", 0) != 0) name = "SIG" + name;
    const Named* found = std::find_if(std::begin(kStopSignals), std::end(kStopSignals),
                                      [&](const Named& s) { return name == s.name; });
    if (found == std::end(kStopSignals)) {
      const bool uncatchable = name == "SIGKILL" || name == "SIGSTOP";
      return InvalidArgument(
          "entry " + Quote(Trim(entries[i])) +
          (uncatchable ? " cannot be caught by any process, so it cannot ask a job to stop"
                       : " is not a stop signal kdist knows") +
          "; expected names among " + Join(StopSignalNames(), ", ") + ", or \"none\"");
    }
    if (std::find(out.begin(), out.end(), found->number) == out.end()) {
      out.push_back(found->number);
    }
  }
  return out;
}

std::string SignalName(int signal_number) {
  for (const Named& s : kStopSignals) {
    if (s.number == signal_number) return s.name;
  }
  return "signal " + std::to_string(signal_number);
}

std::string FormatStopSignals(const std::vector<int>& signals) {
  if (signals.empty()) return "none";
  std::vector<std::string> names;
  for (int s : signals) names.push_back(SignalName(s));
  return Join(names, ",");
}

int StackSignal() { return SIGRTMAX - 1; }

}  // namespace kdist
