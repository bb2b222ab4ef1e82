#include "rendezvous/rendezvous_book.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "testing/rendezvous_helpers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

TEST(RendezvousBook, NodeNamesFollowAdmissionThenTheRoster) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "b", "10.0.0.2"), seconds(1));
  (void)Join(book, MakeAgent(2, "a", "10.0.0.1"), seconds(2));  // on the rendezvous's machine
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"b", "a"}));
  (void)book.Tick(seconds(12));  // the last call: the job forms, node 0 first
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"a", "b"}));
}

TEST(RendezvousBook, AnAgentsNonceIsKnownWhileItsNodeIsLive) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(book, a, seconds(1));
  ASSERT_TRUE(book.AgentNonce(a.connection).has_value());
  EXPECT_TRUE(*book.AgentNonce(a.connection) == a.hello.nonce);
  EXPECT_FALSE(book.AgentNonce(99).has_value());
  (void)book.Leave(a.connection, seconds(2));
  EXPECT_FALSE(book.AgentNonce(a.connection).has_value());
}

TEST(RendezvousBook, TheEndReachesEveryLiveNodeWithOneStatus) {
  RendezvousBook book(Options(3, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  const auto ends = OfKind(book.Tick(seconds(300)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  for (const NodeMessage& m : ends) EXPECT_EQ(m.reply.exit_status, kExitNotEnoughNodes);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
}

// A job of `n` nodes through forming, a loss (the survivors report, the next attempt) and
// the end: how long the book took, and the longest line any reply carried.
struct Round {
  double seconds = 0;
  size_t longest = 0;
};

Round PlayRound(int64_t n) {
  RendezvousBook book(Options(1, n), Nanos(0));
  std::vector<Agent> agents;
  for (int64_t i = 0; i < n; ++i) {
    agents.push_back(MakeAgent(static_cast<uint64_t>(i + 1), "node-" + std::to_string(i),
                               "10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 2)));
  }
  Round round;
  int64_t rosters = 0;
  const auto note = [&](const std::vector<NodeMessage>& out) {
    for (const NodeMessage& m : out) {
      round.longest = std::max(round.longest, m.reply.message.size() + m.reply.first_failure.size() + m.reply.ended.size());
      rosters += m.reply.kind == NodeReplyKind::kRoster ? 1 : 0;
    }
  };
  const auto start = std::chrono::steady_clock::now();
  for (const Agent& a : agents) note(Join(book, a, seconds(1)));
  EXPECT_EQ(rosters, n);
  note(book.Leave(agents[static_cast<size_t>(n / 2)].connection, seconds(2)));
  for (int64_t i = 0; i < n; ++i) {
    if (i != n / 2) note(Report(book, agents[static_cast<size_t>(i)], 0, 1, {}, 42000, seconds(3)));
  }
  EXPECT_EQ(rosters, 2 * n - 1);
  EXPECT_EQ(book.attempt(), 1);
  for (int64_t i = 0; i < n; ++i) {
    if (i != n / 2) note(Report(book, agents[static_cast<size_t>(i)], 1, 0, {}, 42000, seconds(4)));
  }
  round.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(book.exit_status(), 0);
  return round;
}

// What each agent is told does not grow with the job: a progress line, an admission or a
// re-form's cause names at most kListedNodes nodes (N lines of N names would be N * N bytes).
TEST(RendezvousBook, NoReplyGrowsWithTheJob) {
  const Round small = PlayRound(8);
  const Round large = PlayRound(2048);
  EXPECT_LE(large.longest, small.longest + 1024) << small.longest << " then " << large.longest;
}

TEST(RendezvousBook, TheProgressLineNamesTheFirstNodesAndHowManyMore) {
  RendezvousBook book(Options(30, 30), Nanos(0));
  for (uint64_t i = 1; i <= 20; ++i) {
    (void)Join(book, MakeAgent(i, "n" + std::to_string(i), "10.0.1." + std::to_string(i)), seconds(1));
  }
  const std::string line = book.ProgressLine(seconds(2));
  EXPECT_NE(line.find("20 of 30 nodes joined (n1 at 10.0.1.1, n2 at 10.0.1.2"), std::string::npos)
      << line;
  EXPECT_NE(line.find("n16 at 10.0.1.16 and 4 more)"), std::string::npos) << line;
  EXPECT_EQ(line.find("n17"), std::string::npos) << line;
}

// Each hello, report and loss costs the book O(1) (a node found by its connection, a name
// by a map, the reports counted): a round of 8x the nodes takes about 8x as long, not 64x
// (a scan per message). Measured side by side, the best of three.
TEST(RendezvousBook, ARoundCostsTimeLinearInTheNodes) {
  double small = 1e9, large = 1e9;
  for (int run = 0; run < 3; ++run) {
    small = std::min(small, PlayRound(512).seconds);
    large = std::min(large, PlayRound(4096).seconds);
  }
  EXPECT_LT(large / small, 24.0) << "512 nodes: " << small << " s, 4096: " << large << " s";
}

}  // namespace
}  // namespace kdist
