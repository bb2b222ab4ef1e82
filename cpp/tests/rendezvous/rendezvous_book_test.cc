#include "rendezvous/rendezvous_book.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

constexpr char kToken[] = "s3cret";

Nonce NonceOf(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

Fingerprint Environment(const std::string& jax = "0.7.0", const std::string& python = "3.13.1") {
  return {{"jax", jax, false}, {"python", python, false}, {"device platform", "cpu", false}};
}

RendezvousOptions Options(int64_t min_nodes, int64_t max_nodes) {
  RendezvousOptions o;
  o.job_id = "job";
  o.min_nodes = min_nodes;
  o.max_nodes = max_nodes;
  o.processes_per_node = 2;
  o.last_call = seconds(10);
  o.join_timeout = seconds(300);
  o.token = kToken;
  return o;
}

// One agent as the tests drive it: its hello signed as a real agent signs it.
struct Agent {
  uint64_t connection;
  NodeHello hello;
  std::string peer;
  std::string local = "10.0.0.1";  // the rendezvous's address it reached
  Nonce challenge;
  std::string token = kToken;
  int64_t sequence = 1;
  bool own_shape = false;  // true: its hello keeps its own --nodes, not the book's
};

Agent MakeAgent(uint64_t connection, const std::string& name, const std::string& peer,
                int64_t port = 0) {
  Agent a;
  a.connection = connection;
  a.hello.job_id = "job";
  a.hello.node_name = name;
  a.hello.host = "box-" + name;
  a.hello.pid = 100 + static_cast<int64_t>(connection);
  a.hello.processes_per_node = 2;
  a.hello.min_nodes = 2;
  a.hello.max_nodes = 3;
  a.hello.coordinator_port = port != 0 ? port : 40000 + static_cast<int64_t>(connection);
  a.hello.environment = EncodeFingerprint(Environment());
  a.hello.nonce = NonceOf(static_cast<uint8_t>(connection));
  a.peer = peer;
  a.challenge = NonceOf(static_cast<uint8_t>(100 + connection));
  return a;
}

std::vector<NodeMessage> Join(RendezvousBook& book, const Agent& agent, Nanos now) {
  Agent a = agent;
  if (!a.own_shape) {
    a.hello.min_nodes = book.options().min_nodes;
    a.hello.max_nodes = book.options().max_nodes;
  }
  const std::string frame = EncodeSignedNodeHello(a.hello, a.token, a.challenge);
  Result<NodeHello> decoded = DecodeNodeHello(frame);
  EXPECT_TRUE(decoded.ok());
  RendezvousBook::Arrival arrival;
  arrival.nonce = a.challenge;
  arrival.frame = frame;
  arrival.peer_host = a.peer;
  arrival.local_host = a.local;
  return book.Offer(a.connection, *decoded, arrival, now);
}

std::vector<NodeMessage> Report(RendezvousBook& book, Agent& a, int64_t attempt, int64_t status,
                                const std::string& failure, int64_t port, Nanos now) {
  NodeReport report;
  report.sequence = ++a.sequence;
  report.attempt = attempt;
  report.exit_status = status;
  report.failure = failure;
  report.coordinator_port = port;
  const std::string frame = EncodeSignedNodeReport(report, a.token, a.challenge);
  Result<NodeReport> decoded = DecodeNodeReport(frame);
  EXPECT_TRUE(decoded.ok());
  return book.Report(a.connection, *decoded, frame, now);
}

std::vector<NodeMessage> DrainNotice(RendezvousBook& book, Agent& a, int64_t attempt, Nanos now) {
  NodeReport report;
  report.sequence = ++a.sequence;
  report.attempt = attempt;
  report.exit_status = 0;
  report.coordinator_port = 40000;
  report.drain = true;
  const std::string frame = EncodeSignedNodeReport(report, a.token, a.challenge);
  Result<NodeReport> decoded = DecodeNodeReport(frame);
  EXPECT_TRUE(decoded.ok());
  return book.Report(a.connection, *decoded, frame, now);
}

std::vector<NodeMessage> OfKind(const std::vector<NodeMessage>& messages, NodeReplyKind kind) {
  std::vector<NodeMessage> out;
  for (const NodeMessage& m : messages) {
    if (m.reply.kind == kind) out.push_back(m);
  }
  return out;
}

TEST(RendezvousBook, FormsAtMaxWithContiguousIdsAndNodeZeroOnTheRendezvousMachine) {
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
    ASSERT_EQ(m.reply.nodes.size(), 3u);
    EXPECT_EQ(m.reply.nodes[0].name, "a");
  }
  // Ranks follow the roster: a is 0, then b and c in the order they were admitted.
  for (const NodeMessage& m : rosters) {
    const int64_t want = m.connection == a.connection ? 0 : m.connection == b.connection ? 1 : 2;
    EXPECT_EQ(m.reply.node_rank, want) << "connection " << m.connection;
  }
}

TEST(RendezvousBook, ServeOnlyMakesTheFirstAdmittedNodeZeroAtItsAddress) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent b = MakeAgent(1, "b", "10.0.0.2", 47000);
  Agent c = MakeAgent(2, "c", "10.0.0.3");
  (void)Join(book, b, seconds(1));
  const auto rosters = OfKind(Join(book, c, seconds(2)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_EQ(rosters[0].reply.coordinator_host, "10.0.0.2");
  EXPECT_EQ(rosters[0].reply.coordinator_port, 47000);
}

TEST(RendezvousBook, FormsAtMinAfterTheLastCall) {
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

TEST(RendezvousBook, ANewJoinRestartsTheLastCall) {
  RendezvousBook book(Options(1, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(9));
  EXPECT_TRUE(book.Tick(seconds(11)).empty());  // 10 s after a, 2 s after b
  EXPECT_EQ(OfKind(book.Tick(seconds(19)), NodeReplyKind::kRoster).size(), 2u);
}

TEST(RendezvousBook, JoinTimeoutEndsEveryAgentWith75NamingWhoJoined) {
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

TEST(RendezvousBook, AWrongTokenIsRefusedWithoutSayingTheToken) {
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

TEST(RendezvousBook, NoProofIsRefusedWhenATokenIsRequired) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.token = "";
  const std::vector<NodeMessage> out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reply.message.find("sent no proof"), std::string::npos);
}

TEST(RendezvousBook, AHelloReplayedOnAnotherConnectionIsRefused) {
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

TEST(RendezvousBook, AnotherJobIdIsRefusedNamingBoth) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.hello.job_id = "other";
  const std::vector<NodeMessage> out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("job id \"other\""), std::string::npos) << out[0].reply.message;
  EXPECT_NE(out[0].reply.message.find("job id \"job\""), std::string::npos);
}

TEST(RendezvousBook, AnotherShapeIsRefused) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  a.hello.processes_per_node = 4;
  EXPECT_NE(Join(book, a, seconds(1))[0].reply.message.find("-n 4"), std::string::npos);
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  b.hello.max_nodes = 4;
  b.own_shape = true;
  EXPECT_NE(Join(book, b, seconds(1))[0].reply.message.find("--nodes 2:4"), std::string::npos);
}

TEST(RendezvousBook, ASecondLiveAgentWithOneNameIsRefusedNamingBothAddresses) {
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

TEST(RendezvousBook, ANameOfAnAgentThatLeftIsFreeAgain) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)book.Leave(1, seconds(2));
  EXPECT_EQ(OfKind(Join(book, MakeAgent(2, "a", "10.0.0.7"), seconds(3)),
                   NodeReplyKind::kAdmitted)
                .size(),
            1u);
}

TEST(RendezvousBook, AMismatchedEnvironmentIsRefusedAndTheOthersStay) {
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

TEST(RendezvousBook, ADifferenceNotMarkedMustMatchIsANoteInTheRoster) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  b.hello.environment = EncodeFingerprint(Environment("0.7.0", "3.12.0"));
  const auto rosters = OfKind(Join(book, b, seconds(2)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_NE(rosters[0].reply.message.find("python"), std::string::npos);
}

TEST(RendezvousBook, AnAgentArrivingAfterTheJobFormedIsRefusedAndTheJobRunsOn) {
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

TEST(RendezvousBook, AllPassedEndsWithZero) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  EXPECT_TRUE(Report(book, a, 0, 0, "", 41001, seconds(3)).empty());
  const auto ends = OfKind(Report(book, b, 0, 0, "", 41002, seconds(4)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 0);
  EXPECT_EQ(book.exit_status(), 0);
  EXPECT_NE(book.AttemptTable().find("finished"), std::string::npos);
  ASSERT_EQ(book.Attempts().size(), 1u);
  EXPECT_EQ(book.Attempts()[0].processes, 4);
  EXPECT_DOUBLE_EQ(book.Attempts()[0].started_seconds, 2.0);
  EXPECT_DOUBLE_EQ(book.Attempts()[0].ended_seconds, 4.0);
  EXPECT_TRUE(book.Attempts()[0].counted);
}

TEST(RendezvousBook, AFailureRestartsOnTheSameNodesWithAFreshPortAndNamesTheFirstFailure) {
  RendezvousOptions options = Options(2, 2);
  options.max_restarts = 3;
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)Report(book, b, 0, 1, "process 3 (node b, host box-b): ValueError: boom", 42002,
               seconds(3));
  const auto rosters =
      OfKind(Report(book, a, 0, 1, "process 0 (node a): peer failed", 42001, seconds(4)),
             NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  EXPECT_EQ(rosters[0].reply.attempt, 1);
  EXPECT_EQ(rosters[0].reply.coordinator_port, 42001);  // node 0's new offer
  EXPECT_EQ(rosters[0].reply.first_failure, "process 3 (node b, host box-b): ValueError: boom");
  EXPECT_EQ(book.attempt(), 1);
}

TEST(RendezvousBook, TheSameFailureTwiceInARowEndsWithOne) {
  RendezvousOptions options = Options(2, 2);
  options.max_restarts = 5;
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  const std::string boom = "process 3 (node b, host box-b): ValueError: boom at step 4";
  (void)Report(book, b, 0, 7, boom, 42002, seconds(3));
  (void)Report(book, a, 0, 1, "", 42001, seconds(4));
  (void)Report(book, b, 1, 7, boom, 43002, seconds(5));
  const auto ends = OfKind(Report(book, a, 1, 1, "", 43001, seconds(6)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 1);
  EXPECT_NE(ends[0].reply.message.find("at the same point"), std::string::npos);
  EXPECT_EQ(ends[0].reply.first_failure, boom);
}

TEST(RendezvousBook, ANamedFailureWinsOverAnEarlierConsequence) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)Report(book, a, 0, 1, "", 42001, seconds(3));  // a's processes were ended by b's failure
  const auto ends = OfKind(Report(book, b, 0, 7, "process 1 (node b): ValueError", 42002,
                                  seconds(4)),
                           NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.first_failure, "process 1 (node b): ValueError");
  EXPECT_EQ(ends[0].reply.exit_status, 7);
}

TEST(RendezvousBook, NoRestartLeftEndsWithTheFirstFailuresStatus) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)Report(book, b, 0, 3, "process 2 (node b): KeyError", 42002, seconds(3));
  const auto ends = OfKind(Report(book, a, 0, 1, "", 42001, seconds(4)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 3);
  EXPECT_NE(book.AttemptTable().find("failed: process 2 (node b): KeyError (status 3)"),
            std::string::npos)
      << book.AttemptTable();
}

// Three nodes formed at MAX: a (on the rendezvous's machine), b, c, in that rank order.
struct ThreeNodes {
  explicit ThreeNodes(RendezvousOptions options) : book(std::move(options), Nanos(0)) {
    (void)Join(book, a, seconds(1));
    (void)Join(book, b, seconds(2));
    (void)Join(book, c, seconds(3));
  }
  RendezvousBook book;
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  Agent c = MakeAgent(3, "c", "10.0.0.3");
};

TEST(RendezvousBook, ALostNodeFormsTheNextAttemptWithoutItOnceTheOthersReported) {
  RendezvousOptions options = Options(2, 3);
  options.max_restarts = 0;  // a lost node does not count against it
  ThreeNodes job(options);
  ASSERT_EQ(job.book.phase(), RendezvousBook::Phase::kRunning);
  EXPECT_TRUE(job.book.Leave(job.c.connection, seconds(10)).empty());  // the others still run
  EXPECT_TRUE(Report(job.book, job.b, 0, 1, "", 42002, seconds(11)).empty());
  const auto rosters = OfKind(
      Report(job.book, job.a, 0, 1, "process 0 (node a): process 4 unreachable", 42001,
             seconds(12)),
      NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    ASSERT_EQ(m.reply.nodes.size(), 2u);
    EXPECT_EQ(m.reply.nodes[0].name, "a");
    EXPECT_EQ(m.reply.nodes[1].name, "b");
    EXPECT_EQ(m.reply.node_rank, m.connection == job.a.connection ? 0 : 1);
    EXPECT_EQ(m.reply.coordinator_port, 42001);  // node 0's fresh offer
    EXPECT_EQ(m.reply.previous_processes, 6);     // 3 nodes of 2 processes before
    EXPECT_NE(m.reply.first_failure.find("node lost: node c (host box-c, at 10.0.0.3)"),
              std::string::npos)
        << m.reply.first_failure;
  }
  EXPECT_NE(job.book.AttemptTable().find("node lost"), std::string::npos);
  EXPECT_NE(job.book.AttemptTable().find("not counted"), std::string::npos)
      << job.book.AttemptTable();
}

TEST(RendezvousBook, ALostNodeIsDecidedOnlyWhenTheLastSurvivorReported) {
  ThreeNodes job(Options(2, 3));
  EXPECT_TRUE(Report(job.book, job.a, 0, 1, "", 42001, seconds(11)).empty());
  EXPECT_TRUE(Report(job.book, job.c, 0, 1, "", 42003, seconds(12)).empty());
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

TEST(RendezvousBook, AProgramFailureAfterARecoveryStillCountsAgainstMaxRestarts) {
  RendezvousOptions options = Options(2, 3);
  options.max_restarts = 0;
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, "", 42002, seconds(11));
  ASSERT_EQ(OfKind(Report(job.book, job.a, 0, 1, "", 42001, seconds(12)), NodeReplyKind::kRoster)
                .size(),
            2u);
  (void)Report(job.book, job.b, 1, 3, "process 2 (node b): KeyError", 43002, seconds(20));
  const auto ends =
      OfKind(Report(job.book, job.a, 1, 1, "", 43001, seconds(21)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 3);
  EXPECT_NE(ends[0].reply.message.find("--max-restarts 0"), std::string::npos);
}

TEST(RendezvousBook, TheThrashGuardEndsTheJobWithOneNamingEveryCause) {
  RendezvousOptions options = Options(1, 3);
  options.max_reforms = 1;
  options.reform_window = seconds(600);
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, "", 42002, seconds(11));
  ASSERT_EQ(OfKind(Report(job.book, job.a, 0, 1, "", 42001, seconds(12)), NodeReplyKind::kRoster)
                .size(),
            2u);
  (void)job.book.Leave(job.b.connection, seconds(30));
  const auto ends =
      OfKind(Report(job.book, job.a, 1, 1, "", 43001, seconds(31)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reply.exit_status, 1);
  EXPECT_EQ(job.book.exit_status(), 1);
  const std::string& why = ends[0].reply.message;
  EXPECT_NE(why.find("re-formed 2 times within 600 s"), std::string::npos) << why;
  EXPECT_NE(why.find("attempt 0: node lost: node c"), std::string::npos) << why;
  EXPECT_NE(why.find("attempt 1: node lost: node b"), std::string::npos) << why;
}

TEST(RendezvousBook, ReformsOutsideTheWindowDoNotTripTheThrashGuard) {
  RendezvousOptions options = Options(1, 3);
  options.max_reforms = 1;
  options.reform_window = seconds(600);
  ThreeNodes job(options);
  (void)job.book.Leave(job.c.connection, seconds(10));
  (void)Report(job.book, job.b, 0, 1, "", 42002, seconds(11));
  (void)Report(job.book, job.a, 0, 1, "", 42001, seconds(12));
  (void)job.book.Leave(job.b.connection, seconds(700));
  const auto rosters =
      OfKind(Report(job.book, job.a, 1, 1, "", 43001, seconds(701)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 1u);
  EXPECT_EQ(rosters[0].reply.attempt, 2);
}

TEST(RendezvousBook, FewerThanMinGathersAgainAndAReturningNodeFormsTheNextAttempt) {
  RendezvousOptions options = Options(2, 2);
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)book.Leave(b.connection, seconds(10));
  const auto waiting = Report(book, a, 0, 1, "", 42001, seconds(11));
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
    EXPECT_NE(m.reply.first_failure.find("node lost: node b"), std::string::npos);
  }
}

TEST(RendezvousBook, FewerThanMinEndsWith75NamingTheLostNodeItsHostAndSinceWhen) {
  RendezvousOptions options = Options(2, 2);
  options.join_timeout = seconds(60);
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)book.Leave(b.connection, seconds(100));
  (void)Report(book, a, 0, 1, "", 42001, seconds(101));
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

TEST(RendezvousBook, EveryNodeLostGathersAgainFromNothing) {
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

TEST(RendezvousBook, ADrainStopsTheAttemptEverywhereAndTheNextRunsWithoutTheDrainedNode) {
  RendezvousOptions options = Options(2, 3);
  options.max_restarts = 0;  // a drain does not count against it
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
  EXPECT_TRUE(Report(job.book, job.b, 0, 143, "", 42002, seconds(12)).empty());
  EXPECT_TRUE(Report(job.book, job.c, 0, 143, "", 42003, seconds(12)).empty());
  const auto out = Report(job.book, job.a, 0, 143, "", 42001, seconds(13));
  const auto ends = OfKind(out, NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].connection, job.b.connection);
  EXPECT_EQ(ends[0].reply.exit_status, kExitDrained);
  const auto rosters = OfKind(out, NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    ASSERT_EQ(m.reply.nodes.size(), 2u);
    EXPECT_EQ(m.reply.nodes[1].name, "c");
    EXPECT_NE(m.reply.first_failure.find("drained: node b"), std::string::npos);
  }
  EXPECT_NE(job.book.AttemptTable().find("drained: node b"), std::string::npos);
  EXPECT_NE(job.book.AttemptTable().find("not counted"), std::string::npos);
}

TEST(RendezvousBook, EveryNodeDrainedEndsTheJobWith143Everywhere) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  EXPECT_EQ(OfKind(DrainNotice(book, a, 0, seconds(3)), NodeReplyKind::kStop).size(), 2u);
  (void)DrainNotice(book, b, 0, seconds(3));
  (void)Report(book, b, 0, 143, "", 42002, seconds(4));
  const auto ends = OfKind(Report(book, a, 0, 143, "", 42001, seconds(5)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  for (const NodeMessage& m : ends) EXPECT_EQ(m.reply.exit_status, kExitDrained);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(book.exit_status(), kExitDrained);
}

TEST(RendezvousBook, ADrainBelowMinGathersAgain) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)DrainNotice(book, b, 0, seconds(3));
  (void)Report(book, b, 0, 143, "", 42002, seconds(4));
  const auto out = Report(book, a, 0, 143, "", 42001, seconds(5));
  EXPECT_EQ(OfKind(out, NodeReplyKind::kEnd).size(), 1u);  // b's
  EXPECT_EQ(OfKind(out, NodeReplyKind::kWaiting).size(), 1u);  // a's
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
}

TEST(RendezvousBook, TheLastNodeDrainedWhileGatheringAgainEndsTheJobWith143) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  (void)DrainNotice(book, b, 0, seconds(3));
  (void)Report(book, b, 0, 143, "", 42002, seconds(4));
  (void)Report(book, a, 0, 143, "", 42001, seconds(4));  // a's own SIGTERM came later
  ASSERT_EQ(book.phase(), RendezvousBook::Phase::kGathering);
  const auto out = DrainNotice(book, a, 0, seconds(5));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.exit_status, kExitDrained);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
  EXPECT_EQ(book.exit_status(), kExitDrained);
}

TEST(RendezvousBook, ADrainWhileGatheringEndsThatNodeAlone) {
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

TEST(RendezvousBook, ADrainNoticeAboutALaterAttemptIsRefused) {
  ThreeNodes job(Options(2, 3));
  const auto out = DrainNotice(job.book, job.b, 5, seconds(10));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_EQ(job.book.phase(), RendezvousBook::Phase::kRunning);
}

// a and b formed at MIN after the last call; the job runs attempt 0.
struct TwoOfThree {
  explicit TwoOfThree(RendezvousOptions options) : book(std::move(options), Nanos(0)) {
    (void)Join(book, a, seconds(1));
    (void)Join(book, b, seconds(2));
    EXPECT_EQ(OfKind(book.Tick(seconds(12)), NodeReplyKind::kRoster).size(), 2u);
  }
  RendezvousBook book;
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  Agent c = MakeAgent(3, "c", "10.0.0.3");
};

TEST(RendezvousBook, ANodeArrivingWhileTheJobRunsJoinsTheNextAttemptAfterScaleUpAfter) {
  RendezvousOptions options = Options(2, 3);
  options.max_restarts = 0;  // growth does not count against it
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
  (void)Report(job.book, job.b, 0, 143, "", 42002, seconds(61));
  const auto rosters =
      OfKind(Report(job.book, job.a, 0, 143, "", 42001, seconds(62)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 3u);
  for (const NodeMessage& m : rosters) {
    EXPECT_EQ(m.reply.attempt, 1);
    EXPECT_EQ(m.reply.node_rank, m.connection == job.a.connection   ? 0
                                 : m.connection == job.b.connection ? 1
                                                                    : 2);
    EXPECT_NE(m.reply.first_failure.find("grown: node c"), std::string::npos);
  }
  EXPECT_NE(job.book.AttemptTable().find("grown: node c"), std::string::npos);
  EXPECT_NE(job.book.AttemptTable().find("not counted"), std::string::npos);
}

TEST(RendezvousBook, AReturningNodeTakesItsLastRank) {
  RendezvousOptions options = Options(2, 3);
  options.scale_up_after = seconds(5);
  ThreeNodes job(options);
  (void)job.book.Leave(job.b.connection, seconds(10));
  (void)Report(job.book, job.a, 0, 1, "", 42001, seconds(11));
  ASSERT_EQ(OfKind(Report(job.book, job.c, 0, 1, "", 42003, seconds(11)), NodeReplyKind::kRoster)
                .size(),
            2u);
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "c"}));
  Agent back = MakeAgent(7, "b", "10.0.0.2");
  (void)Join(job.book, back, seconds(20));
  EXPECT_EQ(job.book.Tick(seconds(25)).size(), 2u);  // the stops
  (void)Report(job.book, job.a, 1, 143, "", 43001, seconds(26));
  const auto rosters =
      OfKind(Report(job.book, job.c, 1, 143, "", 43003, seconds(26)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 3u);
  EXPECT_EQ(job.book.NodeNames(), (std::vector<std::string>{"a", "b", "c"}));
  for (const NodeMessage& m : rosters) {
    if (m.connection == back.connection) EXPECT_EQ(m.reply.node_rank, 1);
  }
}

TEST(RendezvousBook, ScaleUpNeverRefusesANodeArrivingWhileTheJobRuns) {
  RendezvousOptions options = Options(2, 3);
  options.scale_up_after = std::nullopt;
  TwoOfThree job(options);
  const auto out = Join(job.book, job.c, seconds(20));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("--scale-up-after never"), std::string::npos);
  EXPECT_FALSE(job.book.NextDeadline().has_value());
}

TEST(RendezvousBook, ARefusedArrivalNeverDisturbsTheRunningJob) {
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

TEST(RendezvousBook, AJoiningNodeThatLeavesIsForgotten) {
  TwoOfThree job(Options(2, 3));
  (void)Join(job.book, job.c, seconds(20));
  EXPECT_TRUE(job.book.Leave(job.c.connection, seconds(21)).empty());
  EXPECT_TRUE(job.book.Tick(seconds(100)).empty());
  EXPECT_FALSE(job.book.NextDeadline().has_value());
}

TEST(RendezvousBook, TheJobFinishingWhileANodeJoinsEndsItToo) {
  TwoOfThree job(Options(2, 3));
  (void)Join(job.book, job.c, seconds(20));
  (void)Report(job.book, job.a, 0, 0, "", 42001, seconds(21));
  const auto ends =
      OfKind(Report(job.book, job.b, 0, 0, "", 42002, seconds(22)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 3u);
  for (const NodeMessage& m : ends) EXPECT_EQ(m.reply.exit_status, 0);
}

TEST(RendezvousBook, AReplayedOrForgedReportIsRefusedAndChangesNothing) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  (void)Join(book, b, seconds(2));
  Agent forged = a;
  forged.token = "guess";
  const auto refused = Report(book, forged, 0, 0, "", 42001, seconds(3));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reply.kind, NodeReplyKind::kRefused);
  a.sequence = 0;  // a sequence number already used: a replay
  const auto replay = Report(book, a, 0, 0, "", 42001, seconds(3));
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_NE(replay[0].reply.message.find("a replay"), std::string::npos);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
}

TEST(RendezvousBook, AReportAboutAnotherAttemptIsRefused) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(book, a, seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  const auto out = Report(book, a, 4, 0, "", 42001, seconds(3));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_NE(out[0].reply.message.find("the job's attempt is 0"), std::string::npos);
}

TEST(RendezvousBook, ProgressLineSaysWhatItWaitsFor) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  const std::string line = book.ProgressLine(seconds(12));
  EXPECT_NE(line.find("1 of 2:3 nodes joined (a at 10.0.0.1)"), std::string::npos) << line;
  EXPECT_NE(line.find("waiting for 1 more"), std::string::npos) << line;
  EXPECT_NE(line.find("12 s of 300 s"), std::string::npos) << line;
}

TEST(RendezvousBook, AServeOnlyRendezvousTakesTheFirstAgentsProcessesPerNode) {
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

TEST(RendezvousBook, ABadNodeNameIsRefused) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  Agent a = MakeAgent(1, "a b", "10.0.0.1");
  const auto out = Join(book, a, seconds(1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reply.message.find("--node-name"), std::string::npos);
}

}  // namespace
}  // namespace kdist
