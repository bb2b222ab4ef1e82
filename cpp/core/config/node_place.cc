#include "config/node_place.h"

#include <cstdint>
#include <string>

#include "base/scalars.h"
#include "config/raw_setting.h"
#include "config/thrash_guard.h"

namespace kdist {
namespace {

// An integer of at least `least` from `raw`, or nullopt ("default") when unset.
Result<Sourced<std::optional<int64_t>>> Whole(const std::optional<Raw>& raw, int64_t least,
                                              std::string_view meaning) {
  if (!raw) return Sourced<std::optional<int64_t>>{std::nullopt, "default"};
  const std::string expected =
      "expected an integer of at least " + std::to_string(least) + " (" + std::string(meaning) +
      "; `kdist launch --nodes` sets it for each process)";
  Result<int64_t> value = ParseInteger(raw->text);
  if (!value.ok()) return Invalid(*raw, value.status().message() + "; " + expected);
  if (*value < least) return Invalid(*raw, expected);
  return Sourced<std::optional<int64_t>>{*value, raw->source};
}

}  // namespace

Status ResolveNodePlace(const Environment& env, ClusterSpec& spec) {
  KDIST_ASSIGN_OR_RETURN(spec.node_rank, Whole(Pick(std::nullopt, "", env, kEnvNodeRank), 0,
                                               "this machine's rank among the job's machines"));
  KDIST_ASSIGN_OR_RETURN(spec.num_nodes, Whole(Pick(std::nullopt, "", env, kEnvNumNodes), 1,
                                               "how many machines run the job"));
  KDIST_ASSIGN_OR_RETURN(spec.local_process_id,
                         Whole(Pick(std::nullopt, "", env, kEnvLocalProcessId), 0,
                               "this process's index among its machine's processes"));
  KDIST_ASSIGN_OR_RETURN(spec.previous_num_processes,
                         Whole(Pick(std::nullopt, "", env, kEnvPreviousNumProcesses), 1,
                               "the process count of the job's previous attempt"));
  for (const auto& [field, name] : {std::pair{&spec.job_id, kEnvJobId},
                                    std::pair{&spec.run_id, kEnvRunId}}) {
    const std::string* value = Lookup(env, name);
    *field = value != nullptr && !value->empty()
                 ? Sourced<std::string>{*value, std::string(name)}
                 : Sourced<std::string>{"", "default"};
  }
  KDIST_ASSIGN_OR_RETURN(const ThrashGuard guard,
                         ResolveThrashGuard(std::nullopt, std::nullopt, env));
  spec.max_reforms = guard.max_reforms;
  spec.reform_window = guard.reform_window;
  if (spec.node_rank.value && spec.num_nodes.value &&
      *spec.node_rank.value >= *spec.num_nodes.value) {
    return InvalidArgument(
        std::string(kEnvNodeRank) + "=\"" + std::to_string(*spec.node_rank.value) +
        "\" (from the environment) is not below " + std::string(kEnvNumNodes) + "=\"" +
        std::to_string(*spec.num_nodes.value) +
        "\": node ranks run from 0 to the number of nodes - 1. `kdist launch --nodes` sets "
        "both for each process; unset them when you start processes yourself");
  }
  return Status::Ok();
}

}  // namespace kdist
