#include "roll_call/own_id_arguments.h"

#include <string>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

// The values below are of the form kdist/_start/environment_fingerprint.py writes (the
// codes are SHA-256's first 8 hex digits of "0", "1", "2", "5", "0003"); the real jobs
// of tests/start/test_consistency.py check that both languages agree on them:
//   --worker_id=0 in process 0, --worker_id=3 in process 3
constexpr char kWorker0[] = "sha256:1111111111111111 =1";
constexpr char kWorker3[] = "sha256:1111111111111111 =1";

TEST(OwnIdArguments, EachProcessItsOwnIdIsNoDifference) {
  EXPECT_TRUE(DifferOnlyByOwnIds(kWorker0, 0, kWorker3, 3));
  // Widths may differ: --rank=9 in process 9 against --rank=10 in process 10.
  EXPECT_TRUE(DifferOnlyByOwnIds("sha256:aa =1", 9, "sha256:aa =2", 10));
}

TEST(OwnIdArguments, TheSameNumberInBothIsNoDifferenceEvenWhenItIsOneProcessesId) {
  // --lr=0.5 everywhere: in process 0 the run "0" is its own id, in process 1 it is not.
  const std::string zero = "sha256:bb =1 " + std::string("ef2d127d");  // "5"
  EXPECT_TRUE(DifferOnlyByOwnIds(zero, 0, "sha256:bb 5feceb66 ef2d127d", 1));  // "0", "5"
  // The mirror: process 0 holds "1" where process 1 holds its own id "1".
  EXPECT_TRUE(DifferOnlyByOwnIds("sha256:cc 6b86b273", 0, "sha256:cc =1", 1));
}

TEST(OwnIdArguments, AnotherValueIsADifference) {
  // --lr=0.1 in process 0 (runs "0"=own id, "1") against --lr=0.2 in process 2 (runs "0", "2"=own id).
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:dd =1 6b86b273", 0, "sha256:dd 5feceb66 =1", 2));
  // --lr=0.1 against --lr=0.2 in process 1: "1" is process 1's id in neither place that matters.
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:dd =1 6b86b273", 0, "sha256:dd 5feceb66 d4735e3a", 1));
  // Another flag or file: another shape.
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:dd =1", 0, "sha256:ee =1", 1));
  // Another number of runs.
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:dd =1", 0, "sha256:dd =1 6b86b273", 1));
}

TEST(OwnIdArguments, PaddedIdsAreTheProcesssOwn) {
  // shard-0003 in process 3 is "=4"; process 0's shard-0000 is "=4" too.
  EXPECT_TRUE(DifferOnlyByOwnIds("sha256:ff =4", 0, "sha256:ff =4", 3));
  // Process 0 holds "0003" (not its id) where process 3 holds its own "0003": the same text.
  EXPECT_TRUE(DifferOnlyByOwnIds("sha256:ff 446e21f2", 0, "sha256:ff =4", 3));
  // Process 0 holds "0004" there: another value.
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:ff 12345678", 0, "sha256:ff =4", 3));
}

TEST(OwnIdArguments, ValuesWithoutCodesAreNeverTakenForOwnIds) {
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:0123456789abcdef", 0, "sha256:fedcba9876543210", 1));
  EXPECT_FALSE(DifferOnlyByOwnIds("none", 0, "sha256:aa =1", 1));
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:aa ", 0, "sha256:aa ", 1));
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:aa  =1", 0, "sha256:aa  =1", 1));
  EXPECT_FALSE(DifferOnlyByOwnIds("sha256:aa =x", 0, "sha256:aa 5feceb66", 1));
}

}  // namespace
}  // namespace kdist
