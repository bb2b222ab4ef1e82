#include "config/thrash_guard.h"

#include "base/scalars.h"
#include "config/raw_setting.h"
#include "job/attempt_ledger.h"

namespace kdist {
namespace {

constexpr std::string_view kWhat =
    "; the thrash guard ends a job after more than --max-reforms re-forms without progress "
    "within --reform-window seconds";

}  // namespace

Result<ThrashGuard> ResolveThrashGuard(const std::optional<std::string>& max_reforms,
                                       const std::optional<std::string>& reform_window,
                                       const Environment& env) {
  const LedgerOptions defaults;
  ThrashGuard guard{{defaults.max_reforms, "default"}, {defaults.reform_window, "default"}};
  if (const std::optional<Raw> raw =
          Pick(max_reforms, "--max-reforms", env, kEnvMaxReforms, false)) {
    Result<int64_t> value = ParseInteger(raw->text);
    if (!value.ok() || *value < 0) {
      return Invalid(*raw, "expected a whole number of re-forms of at least 0" +
                               std::string(kWhat));
    }
    guard.max_reforms = {*value, raw->source == "argument" ? "--max-reforms" : raw->source};
  }
  if (const std::optional<Raw> raw =
          Pick(reform_window, "--reform-window", env, kEnvReformWindow, false)) {
    Result<double> value = ParseSeconds(raw->text);
    if (!value.ok() || !(*value > 0)) {
      return Invalid(*raw, "expected a number of seconds above 0" + std::string(kWhat));
    }
    guard.reform_window = {SecondsToNanos(*value),
                           raw->source == "argument" ? "--reform-window" : raw->source};
  }
  return guard;
}

}  // namespace kdist
