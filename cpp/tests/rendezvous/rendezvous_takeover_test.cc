// A restored book (another machine took the job's book over): its agents come back as the
// nodes they were and are told what they missed; one that does not come back, or whose
// key expired, is lost as a closed connection is.
#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "rendezvous/rendezvous_state.h"
#include "testing/rendezvous_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

// A book kept in a store (its nodes' environments kept, as the server's PersistWith asks).
RendezvousOptions Stored(int64_t min_nodes, int64_t max_nodes) {
  RendezvousOptions options = Options(min_nodes, max_nodes);
  options.keep_environments = true;
  return options;
}

RendezvousBook Restored(const RendezvousBook& book, Nanos now) {
  Result<RendezvousBook> restored =
      RestoreBook(book.options(), SaveBook(book, now, book.options().token), now);
  EXPECT_TRUE(restored.ok()) << restored.status().message();
  return std::move(restored).value();
}

std::vector<NodeMessage> Back(RendezvousBook& book, Agent agent, Nanos now, uint64_t connection = 0) {
  agent.hello.purpose = NodePurpose::kRejoin;
  if (connection != 0) agent.connection = connection;
  return Join(book, agent, now);
}

TEST(RendezvousTakeover, AnAgentComesBackToItsRankAndIsSentTheRosterItMayHaveMissed) {
  ThreeNodes job(Stored(2, 3));
  RendezvousBook book = Restored(job.book, seconds(10));
  const auto back = Back(book, job.b, seconds(11), 20);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].reply.kind, NodeReplyKind::kAdmitted);
  EXPECT_NE(back[0].reply.message.find("node b is back at the job's rendezvous (attempt 0, node 1 of 3)"),
            std::string::npos)
      << back[0].reply.message;
  EXPECT_EQ(back[1].connection, 20u);  // its new connection
  EXPECT_EQ(back[1].reply.kind, NodeReplyKind::kRoster);
  EXPECT_EQ(back[1].reply.attempt, 0);
  EXPECT_EQ(back[1].reply.node_rank, 1);
  EXPECT_EQ(back[1].reply.coordinator_port, 40001);  // attempt 0's, as first sent
  EXPECT_EQ(book.DetachedNodes(), (std::vector<std::string>{"a", "c"}));
}

TEST(RendezvousTakeover, ANodeThatReportedIsSentNothingMoreAndItsReportCounts) {
  ThreeNodes job(Stored(2, 3));
  (void)Report(job.book, job.a, 0, 0, {}, 42001, seconds(5));
  RendezvousBook book = Restored(job.book, seconds(10));
  EXPECT_EQ(Back(book, job.a, seconds(11)).size(), 1u);  // admitted only
  (void)Back(book, job.b, seconds(11));
  (void)Back(book, job.c, seconds(11));
  Agent b = job.b, c = job.c;
  (void)Report(book, b, 0, 0, {}, 42002, seconds(12));
  const auto ends = OfKind(Report(book, c, 0, 0, {}, 42003, seconds(13)), NodeReplyKind::kEnd);
  EXPECT_EQ(ends.size(), 3u);
}

TEST(RendezvousTakeover, AReportSentAgainAfterTheRestoreIsRefusedOnlyWhenAlreadyKept) {
  ThreeNodes job(Stored(2, 3));
  (void)Report(job.book, job.a, 0, 0, {}, 42001, seconds(5));
  RendezvousBook book = Restored(job.book, seconds(10));
  Agent a = job.a;
  a.sequence = 1;
  (void)Back(book, a, seconds(11));
  const auto again = Report(book, a, 0, 0, {}, 42001, seconds(12));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(again[0].reply.message.find("already reported"), std::string::npos);
}

TEST(RendezvousTakeover, AnotherAgentUnderTheSameNameIsRefused) {
  ThreeNodes job(Stored(2, 3));
  RendezvousBook book = Restored(job.book, seconds(10));
  Agent impostor = job.b;
  impostor.hello.pid = 999;
  const auto refused = Back(book, impostor, seconds(11), 30);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_EQ(refused[0].reply.code, StatusCode::kAlreadyExists);
  // A fresh hello (not a rejoin) under a detached node's name is refused too.
  Agent fresh = MakeAgent(31, "b", "10.0.0.9");
  EXPECT_EQ(Join(book, fresh, seconds(11))[0].reply.kind, NodeReplyKind::kRefused);
  // An unknown node cannot come back.
  const auto unknown = Back(book, MakeAgent(32, "z", "10.0.0.9"), seconds(11));
  EXPECT_EQ(unknown[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(unknown[0].reply.message.find("not a node of the job now"), std::string::npos);
  // A wrong token never comes back either.
  Agent wrong = job.c;
  wrong.token = "not-the-token";
  EXPECT_EQ(Back(book, wrong, seconds(11))[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_EQ(book.DetachedNodes(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(RendezvousTakeover, ANodeWhoseKeyExpiredIsLostAndTheOthersGoOnWithoutIt) {
  ThreeNodes job(Stored(2, 3));
  RendezvousBook book = Restored(job.book, seconds(10));
  EXPECT_TRUE(book.NodeGone("a", seconds(10)).empty());  // the holder's own machine, gone
  Agent b = job.b, c = job.c;
  (void)Back(book, b, seconds(11));
  (void)Back(book, c, seconds(11));
  (void)Report(book, b, 0, 1, {}, 42002, seconds(12));
  const auto rosters = OfKind(Report(book, c, 0, 1, {}, 42003, seconds(13)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    EXPECT_EQ(m.reply.node_count, 2);
    EXPECT_EQ(m.reply.coordinator_port, 42002);
    EXPECT_NE(m.reply.ended.find("node lost: node a"), std::string::npos) << m.reply.ended;
  }
  EXPECT_FALSE(book.Attempts()[0].counted);
  ASSERT_EQ(book.Attempts().size(), 2u);
  EXPECT_EQ(book.Attempts()[1].nodes.front(), "b");  // a new node 0, and its coordinator
}

TEST(RendezvousTakeover, ADetachedNodeNotBackWithinTheWindowIsLost) {
  RendezvousOptions options = Stored(2, 3);
  options.reconnect_window = seconds(5);
  ThreeNodes job(options);
  RendezvousBook book = Restored(job.book, seconds(10));
  Agent a = job.a, b = job.b;
  (void)Back(book, a, seconds(11));
  (void)Back(book, b, seconds(11));
  EXPECT_EQ(book.NextDeadline(), seconds(15));
  (void)Report(book, a, 0, 1, {}, 42001, seconds(12));
  (void)Report(book, b, 0, 1, {}, 42002, seconds(12));
  EXPECT_TRUE(book.Tick(seconds(14)).empty());
  const auto rosters = OfKind(book.Tick(seconds(15)), NodeReplyKind::kRoster);
  EXPECT_EQ(rosters.size(), 2u);
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"a", "b"}));
}

TEST(RendezvousTakeover, AnEndedJobTellsAnAgentThatComesBackItsEnd) {
  ThreeNodes job(Stored(2, 3));
  (void)Report(job.book, job.a, 0, 0, {}, 42001, seconds(5));
  (void)Report(job.book, job.b, 0, 0, {}, 42002, seconds(5));
  (void)Report(job.book, job.c, 0, 0, {}, 42003, seconds(5));
  ASSERT_EQ(job.book.phase(), RendezvousBook::Phase::kEnded);
  RendezvousBook book = Restored(job.book, seconds(10));
  const auto back = Back(book, job.c, seconds(11));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].reply.kind, NodeReplyKind::kEnd);
  EXPECT_EQ(back[1].reply.exit_status, 0);
  EXPECT_EQ(back[1].reply.message, "every node's processes passed");
  EXPECT_TRUE(book.NodeGone("a", seconds(12)).empty());
}

TEST(RendezvousTakeover, AStopInProgressIsSentAgain) {
  ThreeNodes job(Stored(2, 3));
  (void)DrainNotice(job.book, job.c, 0, seconds(5));  // every node told to stop attempt 0
  RendezvousBook book = Restored(job.book, seconds(10));
  const auto back = Back(book, job.a, seconds(11));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].reply.kind, NodeReplyKind::kRoster);
  EXPECT_EQ(back[2].reply.kind, NodeReplyKind::kStop);
  EXPECT_EQ(back[2].reply.attempt, 0);
}

TEST(RendezvousTakeover, AGatheringBookWelcomesItsNodesBackWithTheProgressLine) {
  RendezvousBook original(Stored(3, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(original, a, seconds(1));
  RendezvousBook book = Restored(original, seconds(2));
  const auto back = Back(book, a, seconds(3));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].reply.kind, NodeReplyKind::kWaiting);
  EXPECT_NE(back[1].reply.message.find("1 of 3 nodes joined"), std::string::npos);
  // Its holder's machine lost while gathering: the node leaves, nothing else happens.
  EXPECT_TRUE(book.NodeGone("a", seconds(4)).empty());
  EXPECT_TRUE(book.NodeNames().empty());
}

}  // namespace
}  // namespace kdist
