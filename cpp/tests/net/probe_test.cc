#include "net/probe.h"

#include <sys/socket.h>

#include <vector>

#include "net/socket.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Address Loopback(uint16_t port) { return Address{"127.0.0.1", port, HostKind::kIPv4}; }

TEST(Probe, StatesHaveTheirNames) {
  EXPECT_STREQ(ProbeStateName(ProbeState::kListening), "listening");
  EXPECT_STREQ(ProbeStateName(ProbeState::kRefused), "refused");
  EXPECT_STREQ(ProbeStateName(ProbeState::kTimeout), "timeout");
  EXPECT_STREQ(ProbeStateName(ProbeState::kUnresolved), "unresolved");
  EXPECT_STREQ(ProbeStateName(ProbeState::kUnreachable), "unreachable");
}

TEST(Probe, AListenerIsListening) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 8);
  KDIST_ASSERT_OK(listener);
  RealClock clock;
  const ProbeResult result = ProbeTcp(Loopback(listener->port), seconds(2), clock);
  EXPECT_EQ(result.state, ProbeState::kListening);
  EXPECT_EQ(result.detail, "");
  EXPECT_LT(result.elapsed, seconds(2));
}

TEST(Probe, AClosedPortIsRefused) {
  uint16_t port = 0;
  {
    Result<Listener> listener = ListenOnAllInterfaces(0, 8);
    KDIST_ASSERT_OK(listener);
    port = listener->port;
  }
  RealClock clock;
  EXPECT_EQ(ProbeTcp(Loopback(port), seconds(2), clock).state, ProbeState::kRefused);
}

TEST(Probe, NoAnswerIsATimeoutWithinTheBound) {
  // A listener whose accept queue is full drops new connection attempts (Linux): the
  // connect gets no answer at all, as behind a firewall.
  Result<Endpoint> any = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(any);
  Result<Listener> listener = ListenOn(*any, 0);
  KDIST_ASSERT_OK(listener);
  Result<Endpoint> target = EndpointFromLiteral("127.0.0.1", listener->port);
  KDIST_ASSERT_OK(target);
  std::vector<Connecting> fillers;
  for (int i = 0; i < 4; ++i) fillers.push_back(StartConnect(*target));
  RealClock clock;
  const ProbeResult result = ProbeTcp(Loopback(listener->port), milliseconds(300), clock);
  EXPECT_EQ(result.state, ProbeState::kTimeout);
  EXPECT_GE(result.elapsed, milliseconds(250));
  EXPECT_LT(result.elapsed, seconds(5));
}

}  // namespace
}  // namespace kdist
