// The agent's side alone: what it does with a rendezvous that answers badly. Its
// exchanges with a real server are in rendezvous_server_test.cc.
#include "rendezvous/rendezvous_agent.h"

#include <gtest/gtest.h>

#include <future>

#include "roll_call/roll_call_wire.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

// A listener that challenges, then answers a hello with `reply` (signed with `token`).
uint16_t FakeRendezvous(Listener& listener, std::future<void>& done, NodeReply reply,
                        std::string token) {
  const uint16_t port = listener.port;
  done = std::async(std::launch::async, [&listener, reply, token] {
    std::vector<pollfd> fds = {{listener.fd.get(), POLLIN, 0}};
    if (Poll(fds, seconds(20)) <= 0) return;
    Accepted a = AcceptOne(listener.fd.get());
    if (a.io.state != IoState::kDone) return;
    Nonce challenge{};
    (void)WriteSome(a.fd.get(), EncodeChallenge(Challenge{challenge}));
    FrameAssembler in;
    std::string hello;
    while (hello.empty()) {
      std::vector<pollfd> conn = {{a.fd.get(), POLLIN, 0}};
      if (Poll(conn, seconds(20)) <= 0) return;
      char buffer[4096];
      Io io = ReadSome(a.fd.get(), buffer, sizeof buffer);
      if (io.state != IoState::kDone) return;
      if (!in.Append(std::string_view(buffer, io.bytes)).ok()) return;
      for (std::string f = in.TakeFrame(); !f.empty(); f = in.TakeFrame()) {
        if (!IsOpening(f)) hello = f;
      }
    }
    Result<NodeHello> decoded = DecodeNodeHello(hello);
    if (!decoded.ok()) return;
    (void)WriteSome(a.fd.get(), EncodeSignedNodeReply(reply, token, decoded->nonce));
    std::vector<pollfd> conn = {{a.fd.get(), POLLIN, 0}};
    (void)Poll(conn, seconds(5));  // until the agent closes
  });
  return port;
}

RendezvousAgentOptions Options(uint16_t port) {
  RendezvousAgentOptions o;
  o.rendezvous = *EndpointFromLiteral("127.0.0.1", port);
  o.where = "127.0.0.1:" + std::to_string(port);
  o.token = "s3cret";
  o.join_timeout = seconds(20);
  return o;
}

NodeHello Hello() {
  NodeHello h;
  h.node_name = "a";
  h.host = "box-a";
  h.processes_per_node = 1;
  h.min_nodes = h.max_nodes = 1;
  h.coordinator_port = 1;
  return h;
}

TEST(RendezvousAgent, AdmittedByARendezvousThatProvesTheToken) {
  Result<Listener> listener = ListenOn(*EndpointFromLiteral("127.0.0.1", 0), 4);
  KDIST_ASSERT_OK(listener);
  std::future<void> done;
  NodeReply admitted;
  admitted.kind = NodeReplyKind::kAdmitted;
  const uint16_t port = FakeRendezvous(*listener, done, admitted, "s3cret");
  RealClock clock;
  RendezvousAgent agent(Options(port), clock, [](const std::string&) {});
  KDIST_EXPECT_OK(agent.Join(Hello()));
  EXPECT_EQ(agent.local_address(), "127.0.0.1");
  agent.Close();
  done.get();
}

TEST(RendezvousAgent, ARendezvousWithoutTheTokenIsNotBelieved) {
  Result<Listener> listener = ListenOn(*EndpointFromLiteral("127.0.0.1", 0), 4);
  KDIST_ASSERT_OK(listener);
  std::future<void> done;
  NodeReply admitted;
  admitted.kind = NodeReplyKind::kAdmitted;
  const uint16_t port = FakeRendezvous(*listener, done, admitted, "impostor");
  RealClock clock;
  RendezvousAgent agent(Options(port), clock, [](const std::string&) {});
  KDIST_EXPECT_ERROR(agent.Join(Hello()), StatusCode::kUnavailable, "does not verify");
  agent.Close();
  done.get();
}

TEST(RendezvousAgent, ARefusalIsReturnedWithItsCodeAndMessage) {
  Result<Listener> listener = ListenOn(*EndpointFromLiteral("127.0.0.1", 0), 4);
  KDIST_ASSERT_OK(listener);
  std::future<void> done;
  NodeReply refused;
  refused.kind = NodeReplyKind::kRefused;
  refused.code = StatusCode::kAlreadyExists;
  refused.message = "node name a is already held";
  const uint16_t port = FakeRendezvous(*listener, done, refused, "s3cret");
  RealClock clock;
  RendezvousAgent agent(Options(port), clock, [](const std::string&) {});
  KDIST_EXPECT_ERROR(agent.Join(Hello()), StatusCode::kAlreadyExists, "already held");
  agent.Close();
  done.get();
}

}  // namespace
}  // namespace kdist
