#include "base/file_limit.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(SoftLimitFor, KeepsASoftLimitThatSuffices) {
  Result<uint64_t> soft = SoftLimitFor(100, {1024, 4096});
  KDIST_ASSERT_OK(soft);
  EXPECT_EQ(*soft, 1024u);
}

TEST(SoftLimitFor, RaisesToTwiceTheNeedWhenTheHardLimitAllows) {
  Result<uint64_t> soft = SoftLimitFor(16384, {1024, 1048576});
  KDIST_ASSERT_OK(soft);
  EXPECT_EQ(*soft, 2 * (16384 + kFileLimitMargin));
}

TEST(SoftLimitFor, RaisesToTheHardLimitWhenOnlyTheRollCallFits) {
  Result<uint64_t> soft = SoftLimitFor(16384, {1024, 20000});
  KDIST_ASSERT_OK(soft);
  EXPECT_EQ(*soft, 20000u);
}

TEST(SoftLimitFor, AnUnlimitedHardLimitIsEnough) {
  Result<uint64_t> soft = SoftLimitFor(4096, {1024, UINT64_MAX});
  KDIST_ASSERT_OK(soft);
  EXPECT_EQ(*soft, 2 * (4096 + kFileLimitMargin));
}

TEST(SoftLimitFor, AHardLimitBelowTheNeedNamesBothNumbers) {
  KDIST_EXPECT_ERROR(SoftLimitFor(16384, {1024, 4096}), StatusCode::kFailedPrecondition,
                     "process 0 needs 16448 open files for a job of 16384 processes");
  KDIST_EXPECT_ERROR(SoftLimitFor(16384, {1024, 4096}), StatusCode::kFailedPrecondition,
                     "its limit is 1024 (RLIMIT_NOFILE soft) and at most 4096 (hard)");
}

// The real system call, in a child: lowering a limit is for the child alone.
TEST(EnsureFileLimit, RaisesTheSoftLimitOfThisProcess) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < 600) _exit(0);  // cannot test here
    limit.rlim_cur = 256;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(2);
    Result<FileLimits> after = EnsureFileLimit(500);
    if (!after.ok()) _exit(3);
    getrlimit(RLIMIT_NOFILE, &limit);
    _exit(limit.rlim_cur >= 500 + kFileLimitMargin && after->soft == limit.rlim_cur ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(EnsureFileLimit, FailsWhenTheHardLimitIsTooLow) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{256, 256};
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(2);
    Result<FileLimits> after = EnsureFileLimit(1000);
    _exit(!after.ok() && after.status().code() == StatusCode::kFailedPrecondition ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace kdist
