// The thrash guard's two numbers (job/attempt_ledger.h): more than `max_reforms`
// re-forms of attempts that made no progress, within `reform_window`, end a `kdist
// launch --nodes` job with status 1. Each from its flag (--max-reforms,
// --reform-window: `kdist launch --nodes`, `kdist rendezvous serve`), else its
// variable (KDIST_MAX_REFORMS, KDIST_REFORM_WINDOW; the agent sets both for its
// processes, so `kdist doctor` under it shows the job's), else the ledger's default
// (4 within 600 s).
#ifndef KDIST_CONFIG_THRASH_GUARD_H_
#define KDIST_CONFIG_THRASH_GUARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"

namespace kdist {

inline constexpr std::string_view kEnvMaxReforms = "KDIST_MAX_REFORMS";
inline constexpr std::string_view kEnvReformWindow = "KDIST_REFORM_WINDOW";

struct ThrashGuard {
  Sourced<int64_t> max_reforms;
  Sourced<Nanos> reform_window;
};

// The flags' texts (nullopt: not given). InvalidArgument naming the flag or variable for
// a count that is not a whole number of at least 0, or a window that is not a number of
// seconds above 0.
Result<ThrashGuard> ResolveThrashGuard(const std::optional<std::string>& max_reforms,
                                       const std::optional<std::string>& reform_window,
                                       const Environment& env);

}  // namespace kdist

#endif  // KDIST_CONFIG_THRASH_GUARD_H_
