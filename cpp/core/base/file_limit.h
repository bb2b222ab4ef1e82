// Room for a descriptor per process: process 0 holds one connection from every
// other process in the roll call, then one per process again in the liveness
// channel and in JAX's own service. The usual soft limit (1,024) is far below
// a job of thousands of processes, while the hard limit usually allows it.
#ifndef KDIST_BASE_FILE_LIMIT_H_
#define KDIST_BASE_FILE_LIMIT_H_

#include <cstdint>

#include "base/status.h"

namespace kdist {

// Descriptors process 0 keeps for everything else (listener, epoll, files).
inline constexpr uint64_t kFileLimitMargin = 64;

struct FileLimits {
  uint64_t soft = 0;
  uint64_t hard = 0;  // RLIM_INFINITY reads as UINT64_MAX
};

// The decision apart from the system call: the soft limit to set for a job of
// `num_processes` given `current` (unchanged when it already suffices), or
// kFailedPrecondition, naming both numbers and the way out, when even the hard
// limit is below what the roll call needs (num_processes + margin). Aims for
// twice that when the hard limit allows (the liveness channel and JAX's service
// each hold a connection per process after the roll call).
Result<uint64_t> SoftLimitFor(int64_t num_processes, FileLimits current);

// Reads RLIMIT_NOFILE and raises the soft limit as SoftLimitFor decides.
// Returns the limits in force afterwards.
Result<FileLimits> EnsureFileLimit(int64_t num_processes);

}  // namespace kdist

#endif  // KDIST_BASE_FILE_LIMIT_H_
