#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "testing/rendezvous_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

TEST(RendezvousElastic, ALostNodeFormsTheNextAttemptWithoutItOnceTheOthersReported) {
  RendezvousOptions options = Options(2, 3);
  options.ledger.max_restarts = 0;  // a lost node does not count against it
  ThreeNodes job(options);
  ASSERT_EQ(job.book.phase(), RendezvousBook::Phase::kRunning);
  EXPECT_TRUE(job.book.Leave(job.c.connection, seconds(10)).empty());  // the others still run
  EXPECT_TRUE(Report(job.book, job.b, 0, 1, {}, 42002, seconds(11)).empty());
  const auto rosters = OfKind(
      Report(job.book, job.a, 0, 1, {}, 42001,
             seconds(12)),
      NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "b"}));
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    EXPECT_EQ(m.reply.node_count, 2);
    EXPECT_EQ(m.reply.node_rank, m.connection == job.a.connection ? 0 : 1);
    EXPECT_EQ(m.reply.coordinator_port, 42001);  // node 0's fresh offer
    EXPECT_EQ(m.reply.previous_processes, 6);     // 3 nodes of 2 processes before
    EXPECT_NE(m.reply.ended.find("attempt 0 ended: node lost: node c (host box-c, at 10.0.0.3)"),
              std::string::npos)
        << m.reply.ended;
  }
  EXPECT_NE(job.book.AttemptTable().find("node lost"), std::string::npos);
  EXPECT_FALSE(job.book.Attempts()[0].counted) << job.book.AttemptTable();
}

TEST(RendezvousElastic, ALostNodeIsDecidedOnlyWhenTheLastSurvivorReported) {
  ThreeNodes job(Options(2, 3));
  EXPECT_TRUE(Report(job.book, job.a, 0, 1, {}, 42001, seconds(11)).empty());
  EXPECT_TRUE(Report(job.book, job.c, 0, 1, {}, 42003, seconds(12)).empty());
  EXPECT_EQ(job.book.attempt(), 0);
  const auto rosters = OfKind(job.book.Leave(job.b.connection, seconds(20)),
                              NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  // The survivors keep their order: node 0 stays the rendezvous's machine.
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "c"}));
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.node_rank, m.connection == job.a.connection ? 0 : 1);
  }
}

TEST(RendezvousElastic, AProgramFailureAfterARecoveryStillCountsAgainstMaxRestarts) {
  RendezvousOptions options = Options(2, 3);
  options.ledger.max_restarts = 0;
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, {}, 42002, seconds(11));
  ASSERT_EQ(OfKind(Report(job.book, job.a, 0, 1, {}, 42001, seconds(12)), NodeReplyKind::kRoster)
                .size(),
            2u);
  (void)Report(job.book, job.b, 1, 3, Raised(2, "b", "KeyError", 3), 43002, seconds(20));
  const auto ends =
      OfKind(Report(job.book, job.a, 1, 1, {}, 43001, seconds(21)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 3);
  EXPECT_NE(ends[0].reply.message.find("--max-restarts 0"), std::string::npos);
}

TEST(RendezvousElastic, TheThrashGuardEndsTheJobWithOneNamingEveryCause) {
  RendezvousOptions options = Options(1, 3);
  options.ledger.max_reforms = 1;
  options.ledger.reform_window = seconds(600);
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, {}, 42002, seconds(11));
  ASSERT_EQ(OfKind(Report(job.book, job.a, 0, 1, {}, 42001, seconds(12)), NodeReplyKind::kRoster)
                .size(),
            2u);
  (void)job.book.Leave(job.b.connection, seconds(30));
  const auto ends =
      OfKind(Report(job.book, job.a, 1, 1, {}, 43001, seconds(31)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reply.exit_status, 1);
  EXPECT_EQ(job.book.exit_status(), 1);
  const std::string& why = ends[0].reply.message;
  EXPECT_NE(why.find("re-formed 2 times within 600 s"), std::string::npos) << why;
  EXPECT_NE(why.find("attempt 0: node lost: node c"), std::string::npos) << why;
  EXPECT_NE(why.find("attempt 1: node lost: node b"), std::string::npos) << why;
}

TEST(RendezvousElastic, ReformsOutsideTheWindowDoNotTripTheThrashGuard) {
  RendezvousOptions options = Options(1, 3);
  options.ledger.max_reforms = 1;
  options.ledger.reform_window = seconds(600);
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, {}, 42002, seconds(11));
  (void)Report(job.book, job.a, 0, 1, {}, 42001, seconds(12));
  (void)job.book.Leave(job.b.connection, seconds(700));
  const auto rosters =
      OfKind(Report(job.book, job.a, 1, 1, {}, 43001, seconds(701)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 1u);
  EXPECT_EQ(rosters[0].reply.attempt, 2);
}

TEST(RendezvousElastic, FewerThanMinGathersAgainAndAReturningNodeFormsTheNextAttempt) {
  RendezvousOptions options = Options(2, 2);
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)book.Leave(b.connection, seconds(10));
  const auto waiting = Report(book, a, 0, 1, {}, 42001, seconds(11));
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].reply.kind, NodeReplyKind::kWaiting);
  EXPECT_NE(waiting[0].reply.message.find("gathering again"), std::string::npos);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
  // b's machine comes back, on a new connection, under its old name.
  Agent back = MakeAgent(5, "b", "10.0.0.2");
  const auto out = Join(book, back, seconds(40));
  const auto rosters = OfKind(out, NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    EXPECT_EQ(m.reply.node_rank, m.connection == a.connection ? 0 : 1);
    EXPECT_EQ(m.reply.coordinator_port, 42001);
    EXPECT_NE(m.reply.ended.find("node lost: node b"), std::string::npos);
  }
}

TEST(RendezvousElastic, FewerThanMinEndsWith75NamingTheLostNodeItsHostAndSinceWhen) {
  RendezvousOptions options = Options(2, 2);
  options.join_timeout = seconds(60);
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)book.Leave(b.connection, seconds(100));
  (void)Report(book, a, 0, 1, {}, 42001, seconds(101));
  ASSERT_TRUE(book.NextDeadline().has_value());
  EXPECT_EQ(*book.NextDeadline(), seconds(161));  // a new --join-timeout from the decision
  EXPECT_TRUE(book.Tick(seconds(160)).empty());
  const auto ends = OfKind(book.Tick(seconds(161)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reply.exit_status, kExitNotEnoughNodes);
  const std::string& why = ends[0].reply.message;
  EXPECT_NE(why.find("node b (host box-b, at 10.0.0.2) lost since 61 s ago (attempt 0)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("1 of 2 nodes joined"), std::string::npos) << why;
  EXPECT_EQ(book.exit_status(), kExitNotEnoughNodes);
}

TEST(RendezvousElastic, EveryNodeLostGathersAgainFromNothing) {
  RendezvousOptions options = Options(1, 2);
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(book, a, seconds(1));
  ASSERT_EQ(OfKind(book.Tick(seconds(11)), NodeReplyKind::kRoster).size(), 1u);
  EXPECT_TRUE(book.Leave(a.connection, seconds(20)).empty());
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
  Agent other = MakeAgent(2, "z", "10.0.0.9");
  other.hello.environment = EncodeFingerprint(Environment("0.6.0"));  // a new reference
  (void)Join(book, other, seconds(21));
  const auto rosters = OfKind(book.Tick(seconds(31)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 1u);
  EXPECT_EQ(rosters[0].reply.attempt, 1);
}

TEST(RendezvousElastic, ADrainStopsTheAttemptEverywhereAndTheNextRunsWithoutTheDrainedNode) {
  RendezvousOptions options = Options(2, 3);
  options.ledger.max_restarts = 0;  // a drain does not count against it
  ThreeNodes job(options);
  const auto stops = OfKind(DrainNotice(job.book, job.b, 0, seconds(10)), NodeReplyKind::kStop);
  ASSERT_EQ(stops.size(), 3u);  // every node of the attempt, the drained one too
  for (const NodeMessage& m : stops) {
    EXPECT_EQ(m.reply.attempt, 0);
    EXPECT_NE(m.reply.message.find("node b (host box-b, at 10.0.0.2) is drained"),
              std::string::npos)
        << m.reply.message;
  }
  EXPECT_TRUE(DrainNotice(job.book, job.b, 0, seconds(11)).empty());  // told once
  EXPECT_TRUE(Report(job.book, job.b, 0, 143, {}, 42002, seconds(12)).empty());
  EXPECT_TRUE(Report(job.book, job.c, 0, 143, {}, 42003, seconds(12)).empty());
  const auto out = Report(job.book, job.a, 0, 143, {}, 42001, seconds(13));
  const auto ends = OfKind(out, NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].connection, job.b.connection);
  EXPECT_EQ(ends[0].reply.exit_status, kExitDrained);
  const auto rosters = OfKind(out, NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    EXPECT_EQ(m.reply.node_count, 2);
    EXPECT_NE(m.reply.ended.find("drained: node b"), std::string::npos);
  }
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "c"}));
  EXPECT_NE(job.book.AttemptTable().find("drained: node b"), std::string::npos);
  EXPECT_FALSE(job.book.Attempts()[0].counted) << job.book.AttemptTable();
}

TEST(RendezvousElastic, EveryNodeDrainedEndsTheJobWith143Everywhere) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  EXPECT_EQ(OfKind(DrainNotice(book, a, 0, seconds(3)), NodeReplyKind::kStop).size(), 2u);
  (void)DrainNotice(book, b, 0, seconds(3));
  (void)Report(book, b, 0, 143, {}, 42002, seconds(4));
  const auto ends = OfKind(Report(book, a, 0, 143, {}, 42001, seconds(5)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  for (const NodeMessage& m : ends) EXPECT_EQ(m.reply.exit_status, kExitDrained);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(book.exit_status(), kExitDrained);
}

TEST(RendezvousElastic, ADrainBelowMinGathersAgain) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)DrainNotice(book, b, 0, seconds(3));
  (void)Report(book, b, 0, 143, {}, 42002, seconds(4));
  const auto out = Report(book, a, 0, 143, {}, 42001, seconds(5));
  EXPECT_EQ(OfKind(out, NodeReplyKind::kEnd).size(), 1u);  // b's
  EXPECT_EQ(OfKind(out, NodeReplyKind::kWaiting).size(), 1u);  // a's
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
}

TEST(RendezvousElastic, TheLastNodeDrainedWhileGatheringAgainEndsTheJobWith143) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)DrainNotice(book, b, 0, seconds(3));
  (void)Report(book, b, 0, 143, {}, 42002, seconds(4));
  (void)Report(book, a, 0, 143, {}, 42001, seconds(4));  // a's own SIGTERM came later
  ASSERT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
  const auto out = DrainNotice(book, a, 0, seconds(5));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.exit_status, kExitDrained);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(book.exit_status(), kExitDrained);
}

TEST(RendezvousElastic, ADrainWhileGatheringEndsThatNodeAlone) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  const auto out = DrainNotice(book, b, 0, seconds(3));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kEnd);
  EXPECT_EQ(out[0].reply.exit_status, kExitDrained);
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
}

TEST(RendezvousElastic, ADrainNoticeAboutALaterAttemptIsRefused) {
  ThreeNodes job(Options(2, 3));
  const auto out = DrainNotice(job.book, job.b, 5, seconds(10));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_EQ(job.book.phase(), RendezvousBook::Phase::kRunning);
}

TEST(RendezvousElastic, ANodeArrivingWhileTheJobRunsJoinsTheNextAttemptAfterScaleUpAfter) {
  RendezvousOptions options = Options(2, 3);
  options.ledger.max_restarts = 0;  // growth does not count against it
  options.scale_up_after = seconds(30);
  TwoOfThree job(options);
  const auto admitted = Join(job.book, job.c, seconds(20));
  ASSERT_EQ(admitted.size(), 1u);  // nothing else: the running job is undisturbed
  EXPECT_EQ(admitted[0].reply.kind, NodeReplyKind::kAdmitted);
  EXPECT_NE(admitted[0].reply.message.find("the next attempt runs with 3 nodes"),
            std::string::npos)
      << admitted[0].reply.message;
  ASSERT_TRUE(job.book.NextDeadline().has_value());
  EXPECT_EQ(*job.book.NextDeadline(), seconds(50));
  EXPECT_TRUE(job.book.Tick(seconds(49)).empty());
  const auto stops = job.book.Tick(seconds(50));
  ASSERT_EQ(stops.size(), 2u);  // the nodes running attempt 0, not the one joining
  for (const NodeMessage& m : stops) {
    EXPECT_EQ(m.reply.kind, NodeReplyKind::kStop);
    EXPECT_NE(m.connection, job.c.connection);
    EXPECT_NE(m.reply.message.find("node c (host box-c, at 10.0.0.3) joined"), std::string::npos);
  }
  EXPECT_TRUE(job.book.Tick(seconds(60)).empty());  // told once
  (void)Report(job.book, job.b, 0, 143, {}, 42002, seconds(61));
  const auto rosters =
      OfKind(Report(job.book, job.a, 0, 143, {}, 42001, seconds(62)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 3u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    EXPECT_EQ(m.reply.node_rank, m.connection == job.a.connection   ? 0
                                 : m.connection == job.b.connection ? 1
                                                                    : 2);
    EXPECT_EQ(m.reply.first_failure, "");  // a growth is no failure
    EXPECT_NE(m.reply.ended.find("attempt 0 ended: node c"), std::string::npos) << m.reply.ended;
    EXPECT_NE(m.reply.ended.find("attempt 0 ended: node c joined (host box-c, at 10.0.0.3)"),
              std::string::npos)
        << m.reply.ended;
  }
  EXPECT_NE(job.book.AttemptTable().find("node c joined (host"), std::string::npos);
  EXPECT_FALSE(job.book.Attempts()[0].counted) << job.book.AttemptTable();
}

TEST(RendezvousElastic, AReturningNodeTakesItsLastRank) {
  RendezvousOptions options = Options(2, 3);
  options.scale_up_after = seconds(5);
  ThreeNodes job(options);
  (void)job.book.Leave(job.b.connection, seconds(10));
  (void)Report(job.book, job.a, 0, 1, {}, 42001, seconds(11));
  ASSERT_EQ(OfKind(Report(job.book, job.c, 0, 1, {}, 42003, seconds(11)), NodeReplyKind::kRoster)
                .size(),
            2u);
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "c"}));
  Agent back = MakeAgent(7, "b", "10.0.0.2");
  (void)Join(job.book, back, seconds(20));
  EXPECT_EQ(job.book.Tick(seconds(25)).size(), 2u);  // the stops
  (void)Report(job.book, job.a, 1, 143, {}, 43001, seconds(26));
  const auto rosters =
      OfKind(Report(job.book, job.c, 1, 143, {}, 43003, seconds(26)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 3u);
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "b", "c"}));
  for (const NodeMessage& m : rosters) {
    if (m.connection == back.connection) EXPECT_EQ(m.reply.node_rank, 1);
  }
}

TEST(RendezvousElastic, ScaleUpNeverRefusesANodeArrivingWhileTheJobRuns) {
  RendezvousOptions options = Options(2, 3);
  options.scale_up_after = std::nullopt;
  TwoOfThree job(options);
  const auto out = Join(job.book, job.c, seconds(20));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("--scale-up-after never"), std::string::npos);
  EXPECT_FALSE(job.book.NextDeadline().has_value());
}

TEST(RendezvousElastic, ARefusedArrivalNeverDisturbsTheRunningJob) {
  TwoOfThree job(Options(2, 3));
  Agent c = job.c;
  c.hello.environment = EncodeFingerprint(Environment("0.6.0"));
  const auto out = Join(job.book, c, seconds(20));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_TRUE(job.book.Tick(seconds(500)).empty());
  EXPECT_EQ(job.book.phase(), RendezvousBook::Phase::kRunning);
  // A good one still joins afterwards.
  EXPECT_EQ(OfKind(Join(job.book, MakeAgent(9, "d", "10.0.0.4"), seconds(501)),
                   NodeReplyKind::kAdmitted)
                .size(),
            1u);
}

TEST(RendezvousElastic, AJoiningNodeThatLeavesIsForgotten) {
  TwoOfThree job(Options(2, 3));
  (void)Join(job.book, job.c, seconds(20));
  EXPECT_TRUE(job.book.Leave(job.c.connection, seconds(21)).empty());
  EXPECT_TRUE(job.book.Tick(seconds(100)).empty());
  EXPECT_FALSE(job.book.NextDeadline().has_value());
}

TEST(RendezvousElastic, TheJobFinishingWhileANodeJoinsEndsItToo) {
  TwoOfThree job(Options(2, 3));
  (void)Join(job.book, job.c, seconds(20));
  (void)Report(job.book, job.a, 0, 0, {}, 42001, seconds(21));
  const auto ends =
      OfKind(Report(job.book, job.b, 0, 0, {}, 42002, seconds(22)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 3u);
  for (const NodeMessage& m : ends) EXPECT_EQ(m.reply.exit_status, 0);
}

}  // namespace
}  // namespace kdist
