#include "base/file_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "base/text.h"

namespace kdist {
namespace {

uint64_t Read(rlim_t value) {
  return value == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(value);
}

}  // namespace

Result<uint64_t> SoftLimitFor(int64_t num_processes, FileLimits current) {
  const uint64_t processes = static_cast<uint64_t>(std::max<int64_t>(num_processes, 1));
  const uint64_t needed = processes + kFileLimitMargin;
  if (current.soft >= needed) return current.soft;
  if (current.hard < needed) {
    return FailedPrecondition(
        "process 0 needs " + std::to_string(needed) + " open files for a job of " +
        std::to_string(processes) + " processes (one connection per process, plus " +
        std::to_string(kFileLimitMargin) + "), but its limit is " +
        std::to_string(current.soft) + " (RLIMIT_NOFILE soft) and at most " +
        std::to_string(current.hard) +
        " (hard); raise the hard limit for process 0 (ulimit -Hn as root, nofile in "
        "/etc/security/limits.conf, LimitNOFILE= for systemd, or the container runtime's "
        "--ulimit nofile=) to at least " + std::to_string(2 * needed));
  }
  return std::min(current.hard, 2 * needed);
}

Result<FileLimits> EnsureFileLimit(int64_t num_processes) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Internal("getrlimit(RLIMIT_NOFILE) failed: " + ErrorText(errno));
  }
  FileLimits current{Read(limit.rlim_cur), Read(limit.rlim_max)};
  Result<uint64_t> soft = SoftLimitFor(num_processes, current);
  if (!soft.ok()) return soft.status();
  if (*soft == current.soft) return current;
  limit.rlim_cur = static_cast<rlim_t>(*soft);
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Internal("setrlimit(RLIMIT_NOFILE) to " + std::to_string(*soft) +
                    " failed: " + ErrorText(errno));
  }
  current.soft = *soft;
  return current;
}

}  // namespace kdist
