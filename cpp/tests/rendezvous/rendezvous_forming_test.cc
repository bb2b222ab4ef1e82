#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "testing/rendezvous_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

TEST(RendezvousForming, FormsAtMaxWithContiguousIdsAndNodeZeroOnTheRendezvousMachine) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  Agent b = MakeAgent(1, "b", "10.0.0.2");
  Agent c = MakeAgent(2, "c", "10.0.0.3");
  Agent a = MakeAgent(3, "a", "10.0.0.1", 45000);  // on the rendezvous's machine, last
  EXPECT_EQ(OfKind(Join(book, b, seconds(1)), NodeReplyKind::kAdmitted).size(), 1u);
  EXPECT_EQ(OfKind(Join(book, c, seconds(2)), NodeReplyKind::kAdmitted).size(), 1u);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
  const std::vector<NodeMessage> out = Join(book, a, seconds(3));
  const auto rosters = OfKind(out, NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 3u);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"a", "b", "c"}));
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 0);
    EXPECT_EQ(m.reply.coordinator_host, "10.0.0.1");
    EXPECT_EQ(m.reply.coordinator_port, 45000);  // node 0's offer
    EXPECT_EQ(m.reply.processes_per_node, 2);
    EXPECT_EQ(m.reply.node_count, 3);
  }
  // Ranks follow the roster: a is 0, then b and c in the order they were admitted.
  for (const NodeMessage& m : rosters) {
    const int64_t want = m.connection == a.connection ? 0 : m.connection == b.connection ? 1 : 2;
    EXPECT_EQ(m.reply.node_rank, want) << "connection " << m.connection;
  }
}

TEST(RendezvousForming, ServeOnlyMakesTheFirstAdmittedNodeZeroAtItsAddress) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent b = MakeAgent(1, "b", "10.0.0.2", 47000);
  Agent c = MakeAgent(2, "c", "10.0.0.3");
  (void)Join(book, b, seconds(1));
  const auto rosters = OfKind(Join(book, c, seconds(2)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_EQ(rosters[0].reply.coordinator_host, "10.0.0.2");
  EXPECT_EQ(rosters[0].reply.coordinator_port, 47000);
}

TEST(RendezvousForming, FormsAtMinAfterTheLastCall) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(5));
  ASSERT_TRUE(book.NextDeadline().has_value());
  EXPECT_EQ(*book.NextDeadline(), seconds(15));
  EXPECT_TRUE(book.Tick(seconds(14)).empty());
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
  EXPECT_EQ(OfKind(book.Tick(seconds(15)), NodeReplyKind::kRoster).size(), 2u);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
}

TEST(RendezvousForming, ANewJoinRestartsTheLastCall) {
  RendezvousBook book(Options(1, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(9));
  EXPECT_TRUE(book.Tick(seconds(11)).empty());  // 10 s after a, 2 s after b
  EXPECT_EQ(OfKind(book.Tick(seconds(19)), NodeReplyKind::kRoster).size(), 2u);
}

TEST(RendezvousForming, JoinTimeoutEndsEveryAgentWith75NamingWhoJoined) {
  RendezvousBook book(Options(3, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  EXPECT_TRUE(book.Tick(seconds(299)).empty());
  const std::vector<NodeMessage> out = book.Tick(seconds(300));
  const auto ends = OfKind(out, NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, kExitNotEnoughNodes);
  EXPECT_EQ(ends[0].reply.code, StatusCode::kDeadlineExceeded);
  EXPECT_NE(ends[0].reply.message.find("2 of 3 nodes joined (a at 10.0.0.1, b at 10.0.0.2)"),
            std::string::npos)
      << ends[0].reply.message;
  EXPECT_EQ(book.exit_status(), 75);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
}

TEST(RendezvousForming, ProgressLineSaysWhatItWaitsFor) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  const std::string line = book.ProgressLine(seconds(12));
  EXPECT_NE(line.find("1 of 2:3 nodes joined (a at 10.0.0.1)"), std::string::npos) << line;
  EXPECT_NE(line.find("waiting for 1 more"), std::string::npos) << line;
  EXPECT_NE(line.find("12 s of 300 s"), std::string::npos) << line;
}

}  // namespace
}  // namespace kdist
