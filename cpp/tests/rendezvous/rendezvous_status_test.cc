#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "testing/rendezvous_helpers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

// The status's JSON holds `field` (compact: "key":value).
::testing::AssertionResult Has(const std::string& status, const std::string& field) {
  if (status.find(field) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status << " has no " << field;
}

constexpr int64_t kWall = 1'700'000'000'000;

RendezvousOptions WallOptions(int64_t min_nodes, int64_t max_nodes) {
  RendezvousOptions o = Options(min_nodes, max_nodes);
  o.ledger.wall_start_unix_millis = kWall;
  o.ledger.max_restarts = 1;
  return o;
}

// A status request as `kdist status` sends it, signed with `token`.
std::vector<NodeMessage> AskStatus(RendezvousBook& book, uint64_t connection,
                                   const std::string& token, const std::string& job_id,
                                   Nanos now) {
  NodeHello hello;
  hello.job_id = job_id;
  hello.node_name = "kdist-status";
  hello.host = "laptop";
  hello.pid = 7;
  hello.purpose = NodePurpose::kStatus;
  hello.nonce = NonceOf(9);
  const Nonce challenge = NonceOf(99);
  const std::string frame = EncodeSignedNodeHello(hello, token, challenge);
  Result<NodeHello> decoded = DecodeNodeHello(frame);
  EXPECT_TRUE(decoded.ok());
  RendezvousBook::Arrival arrival;
  arrival.nonce = challenge;
  arrival.frame = frame;
  arrival.peer_host = "10.0.0.9";
  arrival.local_host = "10.0.0.1";
  return book.Offer(connection, *decoded, arrival, now);
}

std::vector<NodeMessage> Steps(RendezvousBook& book, Agent& a, int64_t attempt, int64_t first,
                               double first_at, int64_t last, double last_at, Nanos now) {
  NodeReport report;
  report.sequence = ++a.sequence;
  report.attempt = attempt;
  report.coordinator_port = 0;
  report.steps_only = true;
  report.first_step = first;
  report.first_step_unix_millis = kWall + static_cast<int64_t>(first_at * 1000);
  report.step = last;
  report.step_unix_millis = kWall + static_cast<int64_t>(last_at * 1000);
  const std::string frame = EncodeSignedNodeReport(report, a.token, a.challenge);
  Result<NodeReport> decoded = DecodeNodeReport(frame);
  EXPECT_TRUE(decoded.ok());
  return book.Report(a.connection, *decoded, frame, now);
}

TEST(RendezvousStatus, AnswersTheStateNodesStepRestartsAndGoodputToAnyoneWithTheToken) {
  RendezvousBook book(WallOptions(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  const std::string gathering = book.StatusJson(seconds(1));
  EXPECT_TRUE(Has(gathering, "\"state\":\"gathering\",\"attempt\":null"));
  EXPECT_TRUE(Has(gathering, "\"name\":\"a\""));
  (void)Join(book, b, seconds(4));  // formed: 4 s of waiting
  EXPECT_TRUE(Steps(book, a, 0, 0, 6, 10, 16, seconds(16)).empty());  // no reply to a notice
  const auto answers = AskStatus(book, 50, kToken, "job", seconds(20));
  ASSERT_EQ(answers.size(), 1u);
  ASSERT_EQ(answers[0].reply.kind, NodeReplyKind::kStatus);
  EXPECT_EQ(answers[0].connection, 50u);
  const std::string s = answers[0].reply.status;
  EXPECT_TRUE(Has(s, "{\"schema\":1,\"job_id\":\"job\",\"state\":\"running\",\"attempt\":0,"));
  EXPECT_TRUE(Has(s, "\"processes\":4,\"step\":10,"));
  EXPECT_TRUE(Has(s, "{\"name\":\"b\",\"host\":\"box-b\",\"address\":\"10.0.0.2\",\"rank\":1,"
                     "\"processes\":[2,3],\"joined_seconds\":4.0,\"draining\":false"));
  EXPECT_TRUE(Has(s, "\"goodput\":{\"productive_seconds\":14.0,\"starting_seconds\":2.0,"
                     "\"restarting_seconds\":0.0,\"recomputing_seconds\":0.0,"
                     "\"waiting_seconds\":4.0,\"ratio\":0.7}"));
  // A failure and a restart: counted by cause.
  (void)Report(book, b, 0, 1, Raised(3, "b", "ValueError: boom"), 42002, seconds(21));
  (void)Report(book, a, 0, 1, {}, 42001, seconds(22));
  const std::string after = book.StatusJson(seconds(23));
  EXPECT_TRUE(Has(after, "\"attempt\":1,"));
  EXPECT_TRUE(Has(after, "\"restarts\":{\"failure\":1}"));
  EXPECT_TRUE(Has(after, "\"ended_seconds\":22.0"));
  EXPECT_TRUE(Has(after, "\"ended\":\"running\""));
}

TEST(RendezvousStatus, AnotherJobIdOrAWrongTokenIsRefusedNamingWhy) {
  RendezvousBook book(WallOptions(2, 2), Nanos(0));
  const auto other = AskStatus(book, 50, kToken, "other", seconds(1));
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].reply.kind, NodeReplyKind::kRefused);
  EXPECT_TRUE(Has(other[0].reply.message, "names job id \"other\""));
  const auto wrong = AskStatus(book, 51, "not the token", "job", seconds(1));
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_EQ(wrong[0].reply.kind, NodeReplyKind::kRefused);
}

TEST(RendezvousStatus, ALateNoticeIsDroppedUnansweredAndTheAnswerFitsItsLimit) {
  RendezvousBook book(WallOptions(1, 1), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(book, a, seconds(1));
  EXPECT_TRUE(Steps(book, a, 3, 0, 1, 2, 2, seconds(2)).empty());  // another attempt's
  EXPECT_TRUE(Has(book.StatusJson(seconds(2)), "\"step\":null"));  // and not counted
  const std::string small = book.StatusJson(seconds(3), 600);
  EXPECT_LE(small.size(), 600u);
  EXPECT_TRUE(Has(small, "\"attempts\":[],"));
  EXPECT_TRUE(Has(small, "\"attempts_left_off\":1"));
}

}  // namespace
}  // namespace kdist
