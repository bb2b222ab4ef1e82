#include "liveness/liveness_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "net/socket.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

TEST(LivenessConnection, KeepaliveIsSizedFromTheUnreachableTimeout) {
  // The default 20 s: a probe after 5 s of silence, then every 2 s; the kernel
  // gives up after 18 s without an answer, so its check (once per interval)
  // falls inside the window.
  LivenessOptions o = LivenessOptionsFor(seconds(20));
  EXPECT_TRUE(o.unreachable_timeout == seconds(20));
  EXPECT_TRUE(o.keepalive_idle == seconds(5));
  EXPECT_TRUE(o.keepalive_interval == seconds(2));
  EXPECT_TRUE(o.user_timeout == seconds(18));
  EXPECT_EQ(o.keepalive_count, 6);  // (18 - 5) / 2 probes lost in a row
  EXPECT_TRUE(o.user_timeout + o.keepalive_interval <= o.unreachable_timeout);
}

TEST(LivenessConnection, KeepaliveIsInWholeSecondsOfAtLeastOne) {
  LivenessOptions o = LivenessOptionsFor(seconds(6));
  EXPECT_TRUE(o.keepalive_idle == seconds(1));
  EXPECT_TRUE(o.keepalive_interval == seconds(1));
  EXPECT_TRUE(o.user_timeout == seconds(5));
  EXPECT_EQ(o.keepalive_count, 4);
  LivenessOptions tiny = LivenessOptionsFor(seconds(1));
  EXPECT_TRUE(tiny.keepalive_idle == seconds(1));
  EXPECT_TRUE(tiny.user_timeout == seconds(1));
  EXPECT_EQ(tiny.keepalive_count, 3);
}

// Whether a blackout of `blackout` that starts at the worst moment (just before
// the next probe, an idle period after the last answer) ends the connection:
// the first probe after it must go out before the kernel gives up.
bool BlackoutEndsTheConnection(const LivenessOptions& o, Nanos blackout) {
  return o.keepalive_idle + blackout + o.keepalive_interval > o.user_timeout;
}

TEST(LivenessConnection, AThreeSecondBlackoutNeverEndsTheDefaultWindow) {
  const LivenessOptions o = LivenessOptionsFor(seconds(20));
  EXPECT_FALSE(BlackoutEndsTheConnection(o, seconds(3)));
  // Several probes are lost in a row before the kernel gives up, more than
  // a 3 s blackout can swallow (at most 3 / 2 + 1 of them).
  EXPECT_GT(o.keepalive_count, 3 / 2 + 1);
  // A blackout as long as the window does end it.
  EXPECT_TRUE(BlackoutEndsTheConnection(o, seconds(20)));
}

TEST(LivenessConnection, LongerWindowsProbeLessOften) {
  const LivenessOptions o = LivenessOptionsFor(seconds(60));
  EXPECT_TRUE(o.keepalive_idle == seconds(15));
  EXPECT_TRUE(o.keepalive_interval == seconds(6));
  EXPECT_TRUE(o.user_timeout == seconds(54));
  EXPECT_EQ(o.keepalive_count, 6);
}

int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof value;
  if (getsockopt(fd, level, name, &value, &size) != 0) return -1;
  return value;
}

TEST(LivenessConnection, SetKeepaliveAppliesTheOptionsInWholeSeconds) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(fd.valid());
  LivenessOptions options;
  options.keepalive_idle = std::chrono::milliseconds(7500);  // whole seconds, at least 1
  options.keepalive_interval = std::chrono::milliseconds(10);
  options.keepalive_count = 4;
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

// A connected pair of non-blocking stream sockets.
struct Pair {
  Fd a, b;
};

Pair MakePair() {
  int fds[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return {};
  return {Fd(fds[0]), Fd(fds[1])};
}

TEST(LivenessConnection, SendAllSendsEveryByte) {
  Pair p = MakePair();
  ASSERT_TRUE(p.a.valid());
  FakeClock clock;
  const std::string bytes(1000, 'x');
  KDIST_EXPECT_OK(SendAll(p.a.get(), bytes, seconds(1), clock));
  char buffer[2000];
  Io io = ReadSome(p.b.get(), buffer, sizeof buffer);
  ASSERT_TRUE(io.state == IoState::kDone);
  EXPECT_EQ(std::string(buffer, io.bytes), bytes);
}

TEST(LivenessConnection, SendAllGivesUpWhenThePeerReadsNothingWithinTheBound) {
  Pair p = MakePair();
  ASSERT_TRUE(p.a.valid());
  FakeClock clock;  // does not move: a zero bound is spent at the first full buffer
  const std::string bytes(8 << 20, 'x');  // more than any socket buffer holds
  KDIST_EXPECT_ERROR(SendAll(p.a.get(), bytes, Nanos(0), clock), StatusCode::kDeadlineExceeded,
                     "the liveness channel's peer reads nothing");
}

TEST(LivenessConnection, SendAllToAClosedPeerIsUnavailable) {
  Pair p = MakePair();
  ASSERT_TRUE(p.a.valid());
  p.b.Close();
  FakeClock clock;
  KDIST_EXPECT_ERROR(SendAll(p.a.get(), "x", seconds(1), clock), StatusCode::kUnavailable,
                     "sending on the liveness channel failed");
}

TEST(LivenessConnection, ReadFramesHandsOverWholeFramesAndKeepsTheRest) {
  Pair p = MakePair();
  ASSERT_TRUE(p.a.valid());
  FieldWriter first, second;
  first.Integer(1, 11);
  second.Integer(1, 22);
  const std::string one = first.Frame(kFrameLiveNotice), two = second.Frame(kFrameLiveNotice);
  FakeClock clock;
  KDIST_ASSERT_OK(SendAll(p.a.get(), one + two + two.substr(0, 5), seconds(1), clock));
  FrameAssembler in;
  std::vector<std::string> frames;
  const auto collect = [&](const std::string& frame) {
    frames.push_back(frame);
    return true;
  };
  EXPECT_TRUE(ReadFrames(p.b.get(), in, collect));
  EXPECT_EQ(frames, (std::vector<std::string>{one, two}));
  EXPECT_EQ(in.buffered(), size_t{5});
  EXPECT_TRUE(ReadFrames(p.b.get(), in, collect));  // nothing new: still open
  KDIST_ASSERT_OK(SendAll(p.a.get(), two.substr(5), seconds(1), clock));
  EXPECT_TRUE(ReadFrames(p.b.get(), in, collect));
  EXPECT_EQ(frames.size(), size_t{3});
  p.a.Close();
  EXPECT_FALSE(ReadFrames(p.b.get(), in, collect));  // EOF
}

TEST(LivenessConnection, ReadFramesStopsOnGarbageOrWhenTold) {
  Pair p = MakePair();
  ASSERT_TRUE(p.a.valid());
  FakeClock clock;
  KDIST_ASSERT_OK(SendAll(p.a.get(), "GET / HTTP/1.1\r\n", seconds(1), clock));
  FrameAssembler in;
  int calls = 0;
  EXPECT_FALSE(ReadFrames(p.b.get(), in, [&](const std::string&) {
    ++calls;
    return true;
  }));
  EXPECT_EQ(calls, 0);

  Pair q = MakePair();
  ASSERT_TRUE(q.a.valid());
  const std::string frame = FieldWriter().Frame(kFrameLiveNotice);
  KDIST_ASSERT_OK(SendAll(q.a.get(), frame + frame, seconds(1), clock));
  FrameAssembler in2;
  EXPECT_FALSE(ReadFrames(q.b.get(), in2, [&](const std::string&) {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);  // the second frame is not handed over
}

}  // namespace
}  // namespace kdist
