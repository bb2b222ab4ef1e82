// Where this process sits among the job's machines when `kdist launch --nodes`
// started it: its machine's rank (KDIST_NODE_RANK), the number of machines
// (KDIST_NUM_NODES), its index among its machine's processes
// (KDIST_LOCAL_PROCESS_ID), the job's id (KDIST_JOB_ID) and the previous
// attempt's process count (KDIST_PREVIOUS_NUM_PROCESSES). Read from the
// environment only (the agent sets them for each process; a scheduler's own
// layout is the detectors'); shown by cluster_spec() and `kdist doctor` with
// their sources when set. Not part of the fingerprint: they describe, they
// decide nothing.
#ifndef KDIST_CONFIG_NODE_PLACE_H_
#define KDIST_CONFIG_NODE_PLACE_H_

#include <string_view>

#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"

namespace kdist {

inline constexpr std::string_view kEnvNodeRank = "KDIST_NODE_RANK";
inline constexpr std::string_view kEnvNumNodes = "KDIST_NUM_NODES";
inline constexpr std::string_view kEnvLocalProcessId = "KDIST_LOCAL_PROCESS_ID";
inline constexpr std::string_view kEnvJobId = "KDIST_JOB_ID";
// The job's run: which job, among every run, a process belongs to (whose backup folder).
inline constexpr std::string_view kEnvRunId = "KDIST_RUN_ID";
// The process count of the job's previous attempt, set from the second attempt on
// (the job may have gone on at another size: elastic).
inline constexpr std::string_view kEnvPreviousNumProcesses = "KDIST_PREVIOUS_NUM_PROCESSES";

// Fills spec.node_rank, num_nodes, local_process_id, job_id, run_id,
// previous_num_processes, max_reforms and reform_window. InvalidArgument
// naming the variable for a value that is not a non-negative integer (a count
// below 1), or a node rank not below the number of nodes.
Status ResolveNodePlace(const Environment& env, ClusterSpec& spec);

}  // namespace kdist

#endif  // KDIST_CONFIG_NODE_PLACE_H_
