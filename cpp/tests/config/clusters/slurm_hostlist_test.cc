#include "config/clusters/slurm_hostlist.h"

#include "base/text.h"
#include "testing/random_text.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

std::string Expanded(std::string_view text) {
  auto hosts = ExpandHostList(text);
  if (!hosts.ok()) return "error: " + hosts.status().message();
  std::vector<std::string> copy = *hosts;
  return Join(copy, " ");
}

TEST(SlurmHostList, SingleNamesAndPlainLists) {
  EXPECT_EQ(Expanded("node001"), std::string("node001"));
  EXPECT_EQ(Expanded("node001,host2"), std::string("node001 host2"));
  EXPECT_EQ(Expanded("a.b-c_d"), std::string("a.b-c_d"));
}

TEST(SlurmHostList, RangesKeepZeroPadding) {
  EXPECT_EQ(Expanded("node[01-04,07],gpu-a[1-2]"),
                  std::string("node01 node02 node03 node04 node07 gpu-a1 gpu-a2"));
  EXPECT_EQ(Expanded("n[08-10]"), std::string("n08 n09 n10"));
  EXPECT_EQ(Expanded("n[8-10]"), std::string("n8 n9 n10"));
  EXPECT_EQ(Expanded("n[001,007-009]"), std::string("n001 n007 n008 n009"));
  EXPECT_EQ(Expanded("n[5]"), std::string("n5"));
}

TEST(SlurmHostList, SuffixesAndSeveralGroupsExpandAsAProduct) {
  EXPECT_EQ(Expanded("n[1-2]-ib"), std::string("n1-ib n2-ib"));
  EXPECT_EQ(Expanded("r[1-2]n[1-2]"), std::string("r1n1 r1n2 r2n1 r2n2"));
  EXPECT_EQ(Expanded("[1-2]x"), std::string("1x 2x"));
}

TEST(SlurmHostList, MalformedListsSayWhere) {
  KDIST_EXPECT_ERROR(ExpandHostList(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ExpandHostList("node[01-04"), StatusCode::kInvalidArgument,
                     "has an unclosed '[' at byte 4");
  KDIST_EXPECT_ERROR(ExpandHostList("node01]"), StatusCode::kInvalidArgument,
                     "has a ']' without a '[' at byte 6");
  KDIST_EXPECT_ERROR(ExpandHostList("n[[1]]"), StatusCode::kInvalidArgument,
                     "has a '[' inside brackets at byte 2");
  KDIST_EXPECT_ERROR(ExpandHostList("n[]"), StatusCode::kInvalidArgument, "has empty brackets");
  KDIST_EXPECT_ERROR(ExpandHostList("a,,b"), StatusCode::kInvalidArgument,
                     "has an empty host name at byte 2");
  KDIST_EXPECT_ERROR(ExpandHostList("a,"), StatusCode::kInvalidArgument,
                     "has an empty host name at byte 2");
  KDIST_EXPECT_ERROR(ExpandHostList("n[4-2]"), StatusCode::kInvalidArgument,
                     "has the range \"4-2\" at byte 2, which runs backwards");
  KDIST_EXPECT_ERROR(ExpandHostList("n[1-x]"), StatusCode::kInvalidArgument,
                     "has \"x\" at byte 4 where a digit was expected");
  KDIST_EXPECT_ERROR(ExpandHostList("n[1,,2]"), StatusCode::kInvalidArgument,
                     "has a missing number at byte 4");
  KDIST_EXPECT_ERROR(ExpandHostList("n[-2]"), StatusCode::kInvalidArgument,
                     "has a missing number at byte 2");
  KDIST_EXPECT_ERROR(ExpandHostList("node 1"), StatusCode::kInvalidArgument,
                     "has \" \" at byte 4, which is not allowed in a host name");
  KDIST_EXPECT_ERROR(ExpandHostList(std::string_view("n\0x", 3)), StatusCode::kInvalidArgument,
                     "has \"\\x00\" at byte 1");
  KDIST_EXPECT_ERROR(ExpandHostList("n[1234567890123456789]"), StatusCode::kInvalidArgument,
                     "longer than 18 digits");
}

TEST(SlurmHostList, ExpansionIsBounded) {
  KDIST_EXPECT_ERROR(ExpandHostList("n[0-999999999999999999]"), StatusCode::kInvalidArgument,
                     "expands to more than");
  KDIST_EXPECT_ERROR(ExpandHostList("a[1-1000]b[1-1000]"), StatusCode::kInvalidArgument,
                     "expands to more than 131072 entries");
  KDIST_EXPECT_ERROR(ExpandHostList("a[1-3],b", 3), StatusCode::kInvalidArgument,
                     "expands to more than 3 entries");
  KDIST_EXPECT_ERROR(ExpandHostList("a[1-2]b[1-2]", 3), StatusCode::kInvalidArgument,
                     "expands to more than 3 entries");
  auto exactly = ExpandHostList("a[1-2],b", 3);
  KDIST_ASSERT_OK(exactly);
  EXPECT_EQ(exactly->size(), size_t{3});
}

TEST(SlurmTasksPerNode, ExpandsRepeats) {
  auto counts = ExpandTasksPerNode("2(x3),1");
  KDIST_ASSERT_OK(counts);
  ASSERT_EQ(counts->size(), size_t{4});
  EXPECT_EQ((*counts)[0], int64_t{2});
  EXPECT_EQ((*counts)[2], int64_t{2});
  EXPECT_EQ((*counts)[3], int64_t{1});
  auto single = ExpandTasksPerNode("8");
  KDIST_ASSERT_OK(single);
  EXPECT_EQ(single->size(), size_t{1});
}

TEST(SlurmTasksPerNode, MalformedCounts) {
  KDIST_EXPECT_ERROR(ExpandTasksPerNode(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ExpandTasksPerNode("2(x3"), StatusCode::kInvalidArgument,
                     "expected a count, or a count and a repeat such as 2(x3)");
  KDIST_EXPECT_ERROR(ExpandTasksPerNode("2(x0)"), StatusCode::kInvalidArgument,
                     "repeats a count 0 times");
  KDIST_EXPECT_ERROR(ExpandTasksPerNode("0"), StatusCode::kInvalidArgument,
                     "has a task count of 0");
  KDIST_EXPECT_ERROR(ExpandTasksPerNode("1,,2"), StatusCode::kInvalidArgument,
                     "has a missing number at byte 2");
  KDIST_EXPECT_ERROR(ExpandTasksPerNode("1(x999999999)"), StatusCode::kInvalidArgument,
                     "expands to more than");
}

}  // namespace
}  // namespace kdist

namespace kdist {
namespace {

// Any bytes: an answer (a list within bounds, or an error), never a crash.
// Inputs are drawn from the characters the grammar cares about, plus any byte.
TEST(SlurmHostList, SurvivesArbitraryInput) {
  static constexpr char kAlphabet[] = "n0123456789[],-()x.\0\xff ";
  testing::RandomText random(0x9e3779b97f4a7c15ull, std::string_view(kAlphabet, sizeof kAlphabet - 1));
  for (int round = 0; round < 20000; ++round) {
    const std::string text = random.Next(24);
    auto hosts = ExpandHostList(text, 1000);
    if (hosts.ok()) {
      EXPECT_LE(hosts->size(), size_t{1000});
      for (const std::string& host : *hosts) EXPECT_FALSE(host.empty());
    }
    auto counts = ExpandTasksPerNode(text, 1000);
    if (counts.ok()) {
      EXPECT_LE(counts->size(), size_t{1000});
      for (int64_t c : *counts) EXPECT_GE(c, int64_t{1});
    }
  }
}

}  // namespace
}  // namespace kdist
