#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "testing/rendezvous_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

TEST(RendezvousAdmission, AWrongTokenIsRefusedWithoutSayingTheToken) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.token = "guess";
  const std::vector<NodeMessage> out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("its token is not the rendezvous's"), std::string::npos);
  EXPECT_EQ(out[0].reply.message.find(kToken), std::string::npos);
  EXPECT_EQ(out[0].reply.message.find("guess"), std::string::npos);
  EXPECT_TRUE(book.NodeNames().empty());
}

TEST(RendezvousAdmission, NoProofIsRefusedWhenATokenIsRequired) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.token = "";
  const std::vector<NodeMessage> out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reply.message.find("sent no proof"), std::string::npos);
}

TEST(RendezvousAdmission, AHelloReplayedOnAnotherConnectionIsRefused) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  const std::string frame = EncodeSignedNodeHello(a.hello, a.token, a.challenge);
  RendezvousBook::Arrival arrival;
  arrival.nonce = NonceOf(99);  // another connection's challenge
  arrival.frame = frame;
  arrival.peer_host = "10.0.0.9";
  const std::vector<NodeMessage> out = book.Offer(5, *DecodeNodeHello(frame), arrival, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
}

TEST(RendezvousAdmission, AnotherJobIdIsRefusedNamingBoth) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.hello.job_id = "other";
  const std::vector<NodeMessage> out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("job id \"other\""), std::string::npos) << out[0].reply.message;
  EXPECT_NE(out[0].reply.message.find("job id \"job\""), std::string::npos);
}

TEST(RendezvousAdmission, AnotherShapeIsRefused) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.hello.processes_per_node = 4;
  EXPECT_NE(Join(book, a, seconds(1))[0].reply.message.find("-n 4"), std::string::npos);
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  b.hello.max_nodes = 4;
  b.own_shape = true;
  EXPECT_NE(Join(book, b, seconds(1))[0].reply.message.find("--nodes 2:4"), std::string::npos);
}

TEST(RendezvousAdmission, ASecondLiveAgentWithOneNameIsRefusedNamingBothAddresses) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  const std::vector<NodeMessage> out = Join(book, MakeAgent(2, "a", "10.0.0.7"), seconds(2));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_EQ(out[0].reply.code, StatusCode::kAlreadyExists);
  EXPECT_NE(out[0].reply.message.find("10.0.0.1"), std::string::npos);
  EXPECT_NE(out[0].reply.message.find("10.0.0.7"), std::string::npos);
  EXPECT_EQ(book.NodeNames().size(), 1u);
}

TEST(RendezvousAdmission, ANameOfAnAgentThatLeftIsFreeAgain) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)book.Leave(1, seconds(2));
  EXPECT_EQ(OfKind(Join(book, MakeAgent(2, "a", "10.0.0.7"), seconds(3)),
                   NodeReplyKind::kAdmitted)
                .size(),
            1u);
}

TEST(RendezvousAdmission, AMismatchedEnvironmentIsRefusedAndTheOthersStay) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  b.hello.environment = EncodeFingerprint(Environment("0.6.0"));
  const std::vector<NodeMessage> out = Join(book, b, seconds(2));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("jax: \"0.7.0\""), std::string::npos) << out[0].reply.message;
  EXPECT_NE(out[0].reply.message.find("0.6.0"), std::string::npos);
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"a"}));
  // A matching node still joins and forms the job with a.
  (void)Join(book, MakeAgent(3, "c", "10.0.0.3"), seconds(3));
  EXPECT_EQ(OfKind(book.Tick(seconds(13)), NodeReplyKind::kRoster).size(), 2u);
}

TEST(RendezvousAdmission, ADifferenceNotMarkedMustMatchIsANoteInTheRoster) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  b.hello.environment = EncodeFingerprint(Environment("0.7.0", "3.12.0"));
  const auto rosters = OfKind(Join(book, b, seconds(2)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_NE(rosters[0].reply.message.find("python"), std::string::npos);
}

TEST(RendezvousAdmission, AnAgentArrivingAfterTheJobFormedIsRefusedAndTheJobRunsOn) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  const std::vector<NodeMessage> out = Join(book, MakeAgent(3, "c", "10.0.0.3"), seconds(3));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].connection, 3u);
  EXPECT_NE(out[0].reply.message.find("already formed"), std::string::npos);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
  EXPECT_EQ(book.NodeNames().size(), 2u);
}

TEST(RendezvousAdmission, AServeOnlyRendezvousTakesTheFirstAgentsProcessesPerNode) {
  RendezvousOptions options = Options(2, 2);
  options.processes_per_node = 0;
  RendezvousBook book(options, Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));  // -n 2
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  b.hello.processes_per_node = 3;
  const auto out = Join(book, b, seconds(2));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reply.message.find("the job runs -n 2"), std::string::npos);
}

TEST(RendezvousAdmission, ABadNodeNameIsRefused) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a b", "10.0.0.1");
  const auto out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reply.message.find("--node-name"), std::string::npos);
}

std::vector<NodeMessage> AskToStop(RendezvousBook& book, uint64_t connection,
                                   const std::string& job_id, Nanos now) {
  Agent asker = MakeAgent(connection, "stopper", "10.0.0.9");
  asker.hello.job_id = job_id;
  asker.hello.purpose = NodePurpose::kStop;
  asker.own_shape = true;  // a stop request carries no job shape
  return Join(book, asker, now);
}

TEST(RendezvousAdmission, KdistStopForAnotherJobIsRefusedAndChangesNothing) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  const std::vector<NodeMessage> out = AskToStop(book, 9, "another", seconds(2));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("give kdist stop the job's --job-id"), std::string::npos);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
}

TEST(RendezvousAdmission, KdistStopWhileGatheringEndsEveryAgentWith143) {
  RendezvousBook book(Options(3, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  const std::vector<NodeMessage> out = AskToStop(book, 9, "job", seconds(3));
  const auto ends = OfKind(out, NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 3u);  // a, b and the asker
  for (const NodeMessage& m : ends) {
    if (m.connection == 9) {
      EXPECT_NE(m.reply.message.find("the job had not formed"), std::string::npos);
    } else {
      EXPECT_EQ(m.reply.exit_status, kExitDrained);
    }
  }
  EXPECT_EQ(book.exit_status(), kExitDrained);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
}

TEST(RendezvousAdmission, KdistStopEndsAJoiningNodeAndForgetsIt) {
  TwoOfThree job(Options(2, 3));
  ASSERT_EQ(OfKind(Join(job.book, job.c, seconds(20)), NodeReplyKind::kAdmitted).size(), 1u);
  const auto ends = OfKind(AskToStop(job.book, 9, "job", seconds(21)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);  // c, and the asker's answer
  EXPECT_EQ(ends[0].connection, job.c.connection);
  EXPECT_EQ(ends[0].reply.exit_status, kExitDrained);
  // c is no node any more (found by its connection, it would be a joining node that is gone).
  EXPECT_TRUE(job.book.Leave(job.c.connection, seconds(22)).empty());
  (void)Report(job.book, job.a, 0, 143, {}, 42001, seconds(23));
  const auto last = OfKind(Report(job.book, job.b, 0, 143, {}, 42002, seconds(23)),
                           NodeReplyKind::kEnd);
  EXPECT_EQ(last.size(), 2u);
  EXPECT_EQ(job.book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(job.book.exit_status(), kExitDrained);
}

TEST(RendezvousAdmission, EveryRosterCarriesTheJobsRun) {
  RendezvousOptions options = Options(2, 2);
  options.run_id = "0123abcd";
  RendezvousBook book(options, Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  const auto rosters = OfKind(Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2)),
                              NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  for (const NodeMessage& m : rosters) EXPECT_EQ(m.reply.run_id, "0123abcd");
}

TEST(RendezvousAdmission, AbandonedOnlyWhileGathering) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));  // formed
  EXPECT_TRUE(book.Abandon("its machine left", seconds(3)).empty());
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
}

}  // namespace
}  // namespace kdist
