// Slurm's compressed list syntaxes, as srun publishes them in the environment:
//
//   host lists      SLURM_STEP_NODELIST="node[01-04,07],gpu-a[1-2]"
//   tasks per node  SLURM_STEP_TASKS_PER_NODE="2(x3),1"
//
// Both expand in full (not only the first entry), so a malformed value is an
// error wherever it is malformed, and both are bounded: an expansion larger
// than `max_items` is refused before it is built. Every byte sequence is safe
// to pass; failure is kInvalidArgument with a reason ("has an unclosed '[' at
// byte 5") to be placed after the variable's name.
#ifndef KDIST_CONFIG_CLUSTERS_SLURM_HOSTLIST_H_
#define KDIST_CONFIG_CLUSTERS_SLURM_HOSTLIST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kdist {

// The most host names (or task counts) one expansion may produce.
inline constexpr size_t kMaxSlurmListItems = size_t{1} << 17;

// Expands a Slurm host list in Slurm's order: "node[01-03],gpu7" gives
// node01, node02, node03, gpu7. Ranges keep the zero padding of their lower
// bound ("[08-10]" gives 08, 09, 10); several bracket groups in one name
// expand as a product, the leftmost varying slowest ("r[1-2]n[1-2]" gives
// r1n1, r1n2, r2n1, r2n2). Names may hold letters, digits, '-', '_' and '.'.
Result<std::vector<std::string>> ExpandHostList(std::string_view text,
                                                size_t max_items = kMaxSlurmListItems);

// Expands a tasks-per-node list: "2(x3),1" gives 2, 2, 2, 1 (one count per
// node of the step, in node order). Every count is a positive integer.
Result<std::vector<int64_t>> ExpandTasksPerNode(std::string_view text,
                                                size_t max_items = kMaxSlurmListItems);

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_SLURM_HOSTLIST_H_
