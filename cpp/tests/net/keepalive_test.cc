#include "net/keepalive.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <unistd.h>

#include <chrono>

#include "net/socket.h"

namespace kdist {
namespace {

using std::chrono::seconds;

TEST(Keepalive, TheDefaultWindowIsTwentySeconds) {
  EXPECT_TRUE(Keepalive{}.unreachable_timeout == seconds(20));
  const Keepalive sized = KeepaliveFor(kDefaultUnreachableTimeout);
  const Keepalive plain;
  EXPECT_TRUE(sized.idle == plain.idle && sized.interval == plain.interval &&
              sized.user_timeout == plain.user_timeout);
  EXPECT_EQ(sized.count, plain.count);
}

TEST(Keepalive, KeepaliveIsSizedFromTheUnreachableTimeout) {
  // The default 20 s: a probe after 5 s of silence, then every 2 s; the kernel
  // gives up after 18 s without an answer, so its check (once per interval)
  // falls inside the window.
  Keepalive o = KeepaliveFor(seconds(20));
  EXPECT_TRUE(o.unreachable_timeout == seconds(20));
  EXPECT_TRUE(o.idle == seconds(5));
  EXPECT_TRUE(o.interval == seconds(2));
  EXPECT_TRUE(o.user_timeout == seconds(18));
  EXPECT_EQ(o.count, 6);  // (18 - 5) / 2 probes lost in a row
  EXPECT_TRUE(o.user_timeout + o.interval <= o.unreachable_timeout);
}

TEST(Keepalive, KeepaliveIsInWholeSecondsOfAtLeastOne) {
  Keepalive o = KeepaliveFor(seconds(6));
  EXPECT_TRUE(o.idle == seconds(1));
  EXPECT_TRUE(o.interval == seconds(1));
  EXPECT_TRUE(o.user_timeout == seconds(5));
  EXPECT_EQ(o.count, 4);
  Keepalive tiny = KeepaliveFor(seconds(1));
  EXPECT_TRUE(tiny.idle == seconds(1));
  EXPECT_TRUE(tiny.user_timeout == seconds(1));
  EXPECT_EQ(tiny.count, 3);
}

// Whether a blackout of `blackout` that starts at the worst moment (just before
// the next probe, an idle period after the last answer) ends the connection:
// the first probe after it must go out before the kernel gives up.
bool BlackoutEndsTheConnection(const Keepalive& o, Nanos blackout) {
  return o.idle + blackout + o.interval > o.user_timeout;
}

TEST(Keepalive, AThreeSecondBlackoutNeverEndsTheDefaultWindow) {
  const Keepalive o = KeepaliveFor(seconds(20));
  EXPECT_FALSE(BlackoutEndsTheConnection(o, seconds(3)));
  // Several probes are lost in a row before the kernel gives up, more than
  // a 3 s blackout can swallow (at most 3 / 2 + 1 of them).
  EXPECT_GT(o.count, 3 / 2 + 1);
  // A blackout as long as the window does end it.
  EXPECT_TRUE(BlackoutEndsTheConnection(o, seconds(20)));
}

TEST(Keepalive, LongerWindowsProbeLessOften) {
  const Keepalive o = KeepaliveFor(seconds(60));
  EXPECT_TRUE(o.idle == seconds(15));
  EXPECT_TRUE(o.interval == seconds(6));
  EXPECT_TRUE(o.user_timeout == seconds(54));
  EXPECT_EQ(o.count, 6);
}

int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof value;
  if (getsockopt(fd, level, name, &value, &size) != 0) return -1;
  return value;
}

TEST(Keepalive, SetKeepaliveAppliesTheOptionsInWholeSeconds) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(fd.valid());
  Keepalive options;
  options.idle = std::chrono::milliseconds(7500);  // whole seconds, at least 1
  options.interval = std::chrono::milliseconds(10);
  options.count = 4;
  options.user_timeout = std::chrono::milliseconds(11500);
  SetKeepalive(fd.get(), options);
  EXPECT_EQ(IntOption(fd.get(), SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(IntOption(fd.get(), IPPROTO_TCP, TCP_KEEPIDLE), 7);
  EXPECT_EQ(IntOption(fd.get(), IPPROTO_TCP, TCP_KEEPINTVL), 1);
  EXPECT_EQ(IntOption(fd.get(), IPPROTO_TCP, TCP_KEEPCNT), 4);
  // The kernel gives up after this much silence, in milliseconds.
  EXPECT_EQ(IntOption(fd.get(), IPPROTO_TCP, TCP_USER_TIMEOUT), 11500);
  EXPECT_EQ(IntOption(fd.get(), IPPROTO_TCP, TCP_NODELAY), 1);
}

TEST(Keepalive, SinceLastHeardCountsFromThePeersLastWord) {
  Result<Listener> listener = ListenOn(*EndpointFromLiteral("127.0.0.1", 0), 4);
  ASSERT_TRUE(listener.ok());
  Fd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const Endpoint to = *EndpointFromLiteral("127.0.0.1", listener->port);
  ASSERT_EQ(connect(client.get(), reinterpret_cast<const sockaddr*>(&to.storage), to.size), 0);
  Fd server(accept(listener->fd.get(), nullptr, nullptr));
  ASSERT_TRUE(server.valid());
  ASSERT_EQ(write(client.get(), "x", 1), 1);
  usleep(300 * 1000);
  const std::optional<Nanos> since = SinceLastHeard(server.get());
  ASSERT_TRUE(since.has_value());
  EXPECT_GE(since->count(), Nanos(std::chrono::milliseconds(250)).count());
  EXPECT_LT(since->count(), Nanos(std::chrono::seconds(10)).count());
  EXPECT_FALSE(SinceLastHeard(-1).has_value());
}

}  // namespace
}  // namespace kdist
