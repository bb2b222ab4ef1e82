// What the rendezvous book's tests share (cpp/tests/rendezvous/): agents that sign their
// hellos and reports as real agents do, and jobs already formed.
#ifndef KDIST_TESTS_TESTING_RENDEZVOUS_HELPERS_H_
#define KDIST_TESTS_TESTING_RENDEZVOUS_HELPERS_H_

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "rendezvous/rendezvous_book.h"

namespace kdist::testing {

using std::chrono::seconds;

inline constexpr char kToken[] = "s3cret";

inline Nonce NonceOf(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

inline Fingerprint Environment(const std::string& jax = "0.7.0", const std::string& python = "3.13.1") {
  return {{"jax", jax, false}, {"python", python, false}, {"device platform", "cpu", false}};
}

inline RendezvousOptions Options(int64_t min_nodes, int64_t max_nodes) {
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

inline Agent MakeAgent(uint64_t connection, const std::string& name, const std::string& peer,
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

inline std::vector<NodeMessage> Join(RendezvousBook& book, const Agent& agent, Nanos now) {
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

// A failure that began on `node`'s process `process_id`, as its agent reports it.
inline JobFailure Raised(int64_t process_id, const std::string& node, const std::string& what,
                         int64_t status = 1) {
  JobFailure f;
  f.kind = FailureKind::kProcess;
  f.process_id = process_id;
  f.node = node;
  f.host = "box-" + node;
  f.exit_status = status;
  f.ended_how = "exit " + std::to_string(status);
  f.what = what;
  return f;
}

inline std::vector<NodeMessage> Report(RendezvousBook& book, Agent& a, int64_t attempt,
                                       int64_t status, const JobFailure& failure, int64_t port,
                                       Nanos now, bool progressed = false) {
  NodeReport report;
  report.sequence = ++a.sequence;
  report.attempt = attempt;
  report.exit_status = status;
  report.failure = failure;
  report.coordinator_port = port;
  report.progressed = progressed;
  const std::string frame = EncodeSignedNodeReport(report, a.token, a.challenge);
  Result<NodeReport> decoded = DecodeNodeReport(frame);
  EXPECT_TRUE(decoded.ok());
  return book.Report(a.connection, *decoded, frame, now);
}

inline std::vector<NodeMessage> DrainNotice(RendezvousBook& book, Agent& a, int64_t attempt, Nanos now) {
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

inline std::vector<NodeMessage> OfKind(const std::vector<NodeMessage>& messages, NodeReplyKind kind) {
  std::vector<NodeMessage> out;
  for (const NodeMessage& m : messages) {
    if (m.reply.kind == kind) out.push_back(m);
  }
  return out;
}

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

}  // namespace kdist::testing

#endif  // KDIST_TESTS_TESTING_RENDEZVOUS_HELPERS_H_
