#include "base/process_list.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "base/text.h"
#include "config/clusters/slurm_hostlist.h"
#include "testing/random_text.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using ::kdist::testing::RandomText;

std::string Numbered(const std::string& prefix, int64_t n, size_t width) {
  std::string digits = std::to_string(n);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return prefix + digits;
}

// Processes first..last (inclusive) placed `per_host` to a host, in order,
// on prefix + (first_host + i) padded to `width`.
std::vector<ProcessHost> Block(int64_t first, int64_t last, int64_t per_host,
                               const std::string& prefix, int64_t first_host, size_t width) {
  std::vector<ProcessHost> out;
  for (int64_t id = first; id <= last; ++id) {
    out.push_back({id, Numbered(prefix, first_host + (id - first) / per_host, width)});
  }
  return out;
}

std::vector<ProcessHost> Unknown(int64_t first, int64_t last) {
  std::vector<ProcessHost> out;
  for (int64_t id = first; id <= last; ++id) out.push_back({id, ""});
  return out;
}

std::vector<ProcessHost> Concat(std::vector<ProcessHost> a, const std::vector<ProcessHost>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The number of ids an id list ("0-3, 8 and 5 more") names, the " and N
// more" included: what the reader can count.
uint64_t CountIds(std::string_view list) {
  uint64_t count = 0;
  const size_t tail = list.find(" and ");
  if (tail != std::string_view::npos) {
    std::string_view more = list.substr(tail + 5);
    more = more.substr(0, more.find(' '));
    count += std::stoull(std::string(more));
    list = list.substr(0, tail);
  }
  for (std::string_view run : Split(list, ',')) {
    run = Trim(run);
    const size_t dash = run.find('-', 1);
    if (dash == std::string_view::npos) {
      ++count;
    } else {
      count += std::stoull(std::string(run.substr(dash + 1))) -
               std::stoull(std::string(run.substr(0, dash))) + 1;
    }
  }
  return count;
}

// The set ExpandHostList reads back from a host list.
std::set<std::string> Expand(std::string_view list) {
  auto hosts = ExpandHostList(list);
  EXPECT_TRUE(hosts.ok()) << std::string(list) << ": " << hosts.status().message();
  if (!hosts.ok()) return {};
  return {hosts->begin(), hosts->end()};
}

// --- ids ---

TEST(FormatIdList, RunsAreShortenedInAscendingOrder) {
  EXPECT_EQ(FormatIdList({11, 0, 1, 2, 3, 8, 10, 3}), "0-3, 8, 10-11");
  EXPECT_EQ(FormatIdList({}), "");
  EXPECT_EQ(FormatIdList({5}), "5");
  EXPECT_EQ(FormatIdList({6, 5}), "5-6");
  EXPECT_EQ(FormatIdList({1, 3, 5}), "1, 3, 5");
}

TEST(FormatIdList, NegativeIdsStandAloneSoTheHyphenIsNeverAmbiguous) {
  EXPECT_EQ(FormatIdList({-1, 0, 1, -3, -2}), "-3, -2, -1, 0-1");
}

TEST(FormatIdList, ExtremeIdsDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(FormatIdList({kMax, kMax - 1, kMin}),
            "-9223372036854775808, 9223372036854775806-9223372036854775807");
}

TEST(FormatIdList, ALongListIsCutAndCountsWhatItLeavesOut) {
  std::vector<int64_t> even;
  for (int64_t id = 0; id < 20000; id += 2) even.push_back(id);
  const std::string text = FormatIdList(even, 400);
  EXPECT_LE(text.size(), size_t{400});
  EXPECT_EQ(text.rfind("0, 2, 4, 6, ", 0), size_t{0}) << text;
  EXPECT_NE(text.find(" more"), std::string::npos) << text;
  EXPECT_EQ(CountIds(text), uint64_t{10000}) << text;
}

// --- hosts ---

TEST(FormatHostList, NumberedHostsShareOneEntry) {
  EXPECT_EQ(FormatHostList({"node-2", "node-0", "node-3", "login"}), "login,node-[0,2-3]");
  EXPECT_EQ(FormatHostList({"node-1"}), "node-1");
  EXPECT_EQ(FormatHostList({"node-1", "node-1"}), "node-1");
  EXPECT_EQ(FormatHostList({}), "");
}

TEST(FormatHostList, ZeroPaddingIsKept) {
  std::vector<std::string> hosts;
  for (int i = 64; i <= 127; ++i) hosts.push_back(Numbered("node-", i, 3));
  EXPECT_EQ(FormatHostList(hosts), "node-[064-127]");
}

TEST(FormatHostList, MixedPaddingWidths) {
  EXPECT_EQ(FormatHostList({"node-9", "node-10", "node-11"}), "node-[9-11]");
  EXPECT_EQ(FormatHostList({"node-09", "node-10"}), "node-[09-10]");
  EXPECT_EQ(FormatHostList({"n99", "n100"}), "n[99-100]");
  EXPECT_EQ(FormatHostList({"n099", "n100"}), "n[099-100]");
  // "010" is not "10" at width 1: it cannot continue 9.
  EXPECT_EQ(FormatHostList({"n9", "n010", "n011"}), "n[9,010-011]");
  // The same number at two widths: two different hosts.
  EXPECT_EQ(FormatHostList({"node-9", "node-09", "node-10"}), "node-[9,09-10]");
  EXPECT_EQ(FormatHostList({"n1", "n02", "n3"}), "n[1,02,3]");
}

TEST(FormatHostList, HostsWithoutNumbersStandAloneInOrder) {
  EXPECT_EQ(FormatHostList({"login", "gateway", "node-1", "node-2"}),
            "gateway,login,node-[1-2]");
  EXPECT_EQ(FormatHostList({"b", "a", "c"}), "a,b,c");
}

TEST(FormatHostList, TheLastRunOfDigitsVariesAndSuffixesStay) {
  EXPECT_EQ(FormatHostList({"gpu1-ib", "gpu2-ib", "gpu3"}), "gpu[1-2]-ib,gpu3");
  EXPECT_EQ(FormatHostList({"r1n1", "r1n2", "r2n1"}), "r1n[1-2],r2n1");
  EXPECT_EQ(FormatHostList({"10.0.0.1", "10.0.0.2", "10.0.0.3"}), "10.0.0.[1-3]");
}

TEST(FormatHostList, UnsafeNamesAreQuotedAndLast) {
  EXPECT_EQ(FormatHostList({"node 1", "node-2"}), "node-2,\"node 1\"");
  EXPECT_EQ(FormatHostList({"\x1b[31mred"}), "\"\\x1b[31mred\"");
  EXPECT_EQ(FormatHostList({"a,b"}), "\"a,b\"");
  EXPECT_EQ(FormatHostList({"n[1-2]"}), "\"n[1-2]\"");
  EXPECT_EQ(FormatHostList({""}), "\"\"");
}

TEST(FormatHostList, LongNamesAreCut) {
  const std::string long_name(100, 'a');
  EXPECT_EQ(FormatHostList({long_name}), "\"" + std::string(32, 'a') + "\"...");
  const std::string longest_raw(64, 'b');
  EXPECT_EQ(FormatHostList({longest_raw}), longest_raw);
}

TEST(FormatHostList, DigitRunsTooLongForSlurmStandAlone) {
  const std::string nineteen = "n" + std::string(19, '1');
  EXPECT_EQ(FormatHostList({nineteen, "n2"}), nineteen + ",n2");  // sorted by name
  const std::string eighteen_a = "n" + std::string(17, '1') + "1";
  const std::string eighteen_b = "n" + std::string(17, '1') + "2";
  EXPECT_EQ(FormatHostList({eighteen_a, eighteen_b}),
            "n[" + std::string(18, '1') + "-" + std::string(17, '1') + "2]");
}

TEST(FormatHostList, ALongListIsCutAndCountsTheRestOfTheHosts) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 5000; i += 2) hosts.push_back(Numbered("node-", i, 4));  // no runs
  for (int i = 0; i < 1000; ++i) hosts.push_back("h" + std::string(1, 'a' + i % 26) +
                                                 std::string(1, 'a' + i / 26 % 26) + "x");
  const std::string text = FormatHostList(hosts, 500);
  EXPECT_LE(text.size(), size_t{500});
  const size_t and_at = text.find(" and ");
  ASSERT_NE(and_at, std::string::npos) << text;
  // What is shown is a host list itself; with the count it adds up.
  const std::set<std::string> shown = Expand(text.substr(0, and_at));
  const std::set<std::string> all(hosts.begin(), hosts.end());
  for (const std::string& host : shown) EXPECT_EQ(all.count(host), size_t{1}) << host;
  const uint64_t more = std::stoull(text.substr(and_at + 5));
  EXPECT_EQ(shown.size() + more, all.size()) << text;
  EXPECT_EQ(text.substr(text.size() - 5), " more");
}

TEST(FormatHostList, ExpandHostListReadsBackTheSameSet) {
  // Random sets of names from a few prefixes and suffixes, numbers at random
  // widths: whatever the mix, the parser gives back exactly the input set.
  RandomText random(20261130, "ab");
  const char* prefixes[] = {"node-", "gpu", "n", "rack1-n", ""};
  const char* suffixes[] = {"", "-ib", ".cluster"};
  for (int trial = 0; trial < 300; ++trial) {
    std::set<std::string> want;
    const size_t n = random.Bits() % 40 + 1;
    for (size_t i = 0; i < n; ++i) {
      std::string host = prefixes[random.Bits() % 5] +
                         Numbered("", static_cast<int64_t>(random.Bits() % 120),
                                  random.Bits() % 4) +
                         suffixes[random.Bits() % 3];
      if (random.Bits() % 6 == 0) host = "login" + std::string(1, 'a' + random.Bits() % 3);
      want.insert(host);
    }
    const std::string text = FormatHostList({want.begin(), want.end()}, 100000);
    EXPECT_EQ(Expand(text), want) << text;
  }
}

// --- processes ---

TEST(FormatProcessList, Empty) { EXPECT_EQ(FormatProcessList({}), "no processes"); }

TEST(FormatProcessList, OneProcess) {
  EXPECT_EQ(FormatProcessList({{3, "node-1"}}), "process 3 on host node-1");
  EXPECT_EQ(FormatProcessList({{7, ""}}), "process 7 (host unknown)");
}

TEST(FormatProcessList, UnsortedAndDuplicateIds) {
  EXPECT_EQ(FormatProcessList({{11, ""}, {0, ""}, {3, ""}, {1, ""}, {2, ""}, {8, ""}, {10, ""},
                               {3, ""}}),
            "processes 0-3, 8, 10-11 (host unknown)");
  EXPECT_EQ(FormatProcessList({{4, "node-1"}, {3, "node-1"}, {4, "node-1"}}),
            "processes 3-4 on host node-1");
}

TEST(FormatProcessList, SixteenThousandProcessesOnTwoThousandHostsOfEight) {
  const std::vector<ProcessHost> processes = Block(0, 16383, 8, "node-", 0, 4);
  EXPECT_EQ(FormatProcessList(processes), "processes 0-16383 on hosts node-[0000-2047]");
}

TEST(FormatProcessList, SixteenThousandProcessesRoundRobinReadTheSame) {
  // Process i on host i mod 2048: no host holds a run, so the hosts merge.
  std::vector<ProcessHost> processes;
  for (int64_t id = 16383; id >= 0; --id) processes.push_back({id, Numbered("node-", id % 2048, 4)});
  EXPECT_EQ(FormatProcessList(processes), "processes 0-16383 on hosts node-[0000-2047]");
}

TEST(FormatProcessList, KnownAndUnknownHostsAreSeparateGroups) {
  const auto processes = Concat(Block(0, 1023, 8, "node-", 0, 3), Unknown(1024, 2047));
  EXPECT_EQ(FormatProcessList(processes),
            "processes 0-1023 on hosts node-[000-127]; processes 1024-2047 (host unknown)");
}

TEST(FormatProcessList, MissingProcessesOfTwoDownHosts) {
  const auto processes = Concat(Unknown(12000, 12007), Unknown(800, 807));
  EXPECT_EQ(FormatProcessList(processes), "processes 800-807, 12000-12007 (host unknown)");
}

TEST(FormatProcessList, MismatchedHalfOfAJob) {
  // Hosts 128-255 disagree: their processes continue one another, one group.
  EXPECT_EQ(FormatProcessList(Block(1024, 2047, 8, "node-", 128, 4)),
            "processes 1024-2047 on hosts node-[0128-0255]");
}

TEST(FormatProcessList, HostsThatDoNotContinueEachOtherAreSeparateGroups) {
  const auto processes = Concat(Block(16, 23, 8, "b-", 1, 1), Block(0, 7, 8, "a-", 1, 1));
  EXPECT_EQ(FormatProcessList(processes), "processes 0-7 on host a-1; processes 16-23 on host b-1");
}

TEST(FormatProcessList, DuplicateClaimantsShareAGroup) {
  EXPECT_EQ(FormatProcessList({{9, "gpu7"}, {5, "node-2"}, {5, "node-1"}}),
            "process 5 on hosts node-[1-2]; process 9 on host gpu7");
  // Eight hosts each started processes 0-7: one group, not eight.
  std::vector<ProcessHost> processes;
  for (int host = 1; host <= 8; ++host) {
    for (int64_t id = 0; id < 8; ++id) processes.push_back({id, "node-" + std::to_string(host)});
  }
  EXPECT_EQ(FormatProcessList(processes), "processes 0-7 on hosts node-[1-8]");
}

TEST(FormatProcessList, AKnownHostComesBeforeAnUnknownOneOnTheSameId) {
  EXPECT_EQ(FormatProcessList({{5, ""}, {5, "n1"}}),
            "process 5 on host n1; process 5 (host unknown)");
}

TEST(FormatProcessList, MoreThanEightHostGroupsMergeIntoOne) {
  // Nine hosts, each holding two ids apart: nine groups would be too many.
  std::vector<ProcessHost> processes;
  for (int64_t host = 0; host < 9; ++host) {
    processes.push_back({host, "n" + std::to_string(host)});
    processes.push_back({host + 100, "n" + std::to_string(host)});
  }
  EXPECT_EQ(FormatProcessList(processes), "processes 0-8, 100-108 on hosts n[0-8]");
  // Eight stay apart.
  processes.erase(processes.end() - 2, processes.end());
  std::string want;
  for (int host = 0; host < 8; ++host) {
    if (host > 0) want += "; ";
    want += "processes " + std::to_string(host) + ", " + std::to_string(host + 100) +
            " on host n" + std::to_string(host);
  }
  EXPECT_EQ(FormatProcessList(processes), want);
}

TEST(FormatProcessList, MixedPaddingAndHostsWithoutNumbers) {
  EXPECT_EQ(FormatProcessList({{0, "node-9"}, {1, "node-10"}, {2, "login"}}),
            "processes 0-2 on hosts login,node-[9-10]");
}

TEST(FormatProcessList, UnsafeHostNamesAreQuoted) {
  EXPECT_EQ(FormatProcessList({{1, "evil\nhost"}}), "process 1 on host \"evil\\x0ahost\"");
  EXPECT_EQ(FormatProcessList({{1, "a;b"}, {2, "n1"}}),
            "processes 1-2 on hosts n1,\"a;b\"");
}

TEST(FormatProcessList, TheHostPartReadsBackAsTheInputHosts) {
  RandomText random(7, "ab");
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ProcessHost> processes;
    std::set<std::string> want;
    const size_t n = random.Bits() % 50 + 1;
    for (size_t i = 0; i < n; ++i) {
      const std::string host =
          Numbered(random.Bits() % 2 ? "node-" : "gpu", static_cast<int64_t>(random.Bits() % 64),
                   random.Bits() % 3);
      processes.push_back({static_cast<int64_t>(random.Bits() % 100), host});
      want.insert(host);
    }
    // Force one group: more host groups than the limit merge.
    for (int64_t k = 0; k < 10; ++k) {
      processes.push_back({1000 + 2 * k, "extra" + std::to_string(k)});
      processes.push_back({2000 + 2 * k, "extra" + std::to_string(k)});
      want.insert("extra" + std::to_string(k));
    }
    const std::string text = FormatProcessList(processes, 100000);
    const size_t on = text.find(" on hosts ");
    ASSERT_NE(on, std::string::npos) << text;
    ASSERT_EQ(text.find(';'), std::string::npos) << text;
    EXPECT_EQ(Expand(std::string_view(text).substr(on + 10)), want) << text;
  }
}

TEST(FormatProcessList, TheCapCutsListsAndCountsEverything) {
  // 10,000 missing processes, every other id: one unknown group, cut.
  std::vector<ProcessHost> processes;
  for (int64_t id = 0; id < 20000; id += 2) processes.push_back({id, ""});
  const std::string text = FormatProcessList(processes);
  EXPECT_LE(text.size(), kDefaultProcessListChars);
  EXPECT_EQ(text.rfind("processes 0, 2, 4, ", 0), size_t{0}) << text;
  const std::string where = " (host unknown)";
  ASSERT_EQ(text.substr(text.size() - where.size()), where) << text;
  EXPECT_EQ(CountIds(text.substr(10, text.size() - 10 - where.size())), uint64_t{10000}) << text;
}

TEST(FormatProcessList, GroupsThatDoNotFitAreCounted) {
  // 1,000 processes on hosts with no numbers (one long host list), then
  // 1,000 with no host: the first group fills the text, the second is counted.
  std::vector<ProcessHost> processes;
  for (int64_t id = 0; id < 1000; ++id) {
    processes.push_back({id, std::string("host") + static_cast<char>('a' + id % 26) +
                                 static_cast<char>('a' + id / 26 % 26) +
                                 static_cast<char>('a' + id / 676)});
  }
  const auto all = Concat(processes, Unknown(2000, 2999));
  const std::string text = FormatProcessList(all);
  EXPECT_LE(text.size(), kDefaultProcessListChars);
  EXPECT_EQ(text.rfind("processes 0-999 on hosts hostaaa,", 0), size_t{0}) << text;
  const std::string tail = "; ... and 1000 more processes";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << text;
  // The hosts' own count: shown + N more = 1000.
  const size_t hosts_at = text.find(" on hosts ") + 10;
  const size_t and_at = text.find(" and ", hosts_at);
  ASSERT_NE(and_at, std::string::npos) << text;
  const std::set<std::string> shown = Expand(text.substr(hosts_at, and_at - hosts_at));
  EXPECT_EQ(shown.size() + std::stoull(text.substr(and_at + 5)), uint64_t{1000}) << text;
}

TEST(FormatProcessList, ManySmallGroupsEndWithACount) {
  // Eight short groups that do not chain and a ninth that is unknown, under
  // the smallest cap with long host names.
  std::vector<ProcessHost> processes;
  for (int64_t g = 0; g < 8; ++g) {
    const std::string host = std::string(60, static_cast<char>('a' + g)) + "1";
    processes.push_back({10 * g, host});
    processes.push_back({10 * g + 5, host});
  }
  const auto all = Concat(processes, Unknown(100, 104));
  const std::string text = FormatProcessList(all, kMinProcessListChars);
  EXPECT_LE(text.size(), kMinProcessListChars);
  const size_t dots = text.find("; ... and ");
  ASSERT_NE(dots, std::string::npos) << text;
  // Each whole group shown holds 2 processes; the count covers the rest.
  const size_t groups_shown = static_cast<size_t>(std::count(text.begin(), text.end(), ';'));
  EXPECT_EQ(text.substr(dots),
            "; ... and " + std::to_string(21 - 2 * groups_shown) + " more processes")
      << text;
}

TEST(FormatProcessList, ACapBelowTheMinimumIsRaisedToIt) {
  std::vector<ProcessHost> processes;
  for (int64_t id = 0; id < 5000; id += 3) processes.push_back({id, ""});
  EXPECT_EQ(FormatProcessList(processes, 10), FormatProcessList(processes, kMinProcessListChars));
  EXPECT_LE(FormatProcessList(processes, 0).size(), kMinProcessListChars);
}

TEST(FormatProcessList, NoInputGrowsTheTextPastTheCap) {
  // Worst cases for the first item of each list (long ids, names that quote
  // to four bytes a byte) and random mixes, under several caps.
  RandomText random(99, "node-0123456789", 4);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<ProcessHost> processes;
    const size_t n = random.Bits() % 300 + 1;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t bits = random.Bits();
      int64_t id = static_cast<int64_t>(random.Bits());
      if (bits % 3 == 0) id = static_cast<int64_t>(random.Bits() % 500);
      std::string host;
      switch (bits / 3 % 5) {
        case 0: host = ""; break;
        case 1: host = std::string(200, '\xff'); host[0] = static_cast<char>(i); break;
        case 2: host = random.Next(90); break;
        default: host = Numbered(std::string(60, 'p'), static_cast<int64_t>(random.Bits() % 1000), 3);
      }
      processes.push_back({id, host});
    }
    const size_t cap = random.Bits() % 2 ? kMinProcessListChars : 400 + random.Bits() % 2000;
    const std::string text = FormatProcessList(processes, cap);
    EXPECT_LE(text.size(), cap) << text;
    EXPECT_FALSE(text.empty());
  }
}

}  // namespace
}  // namespace kdist
