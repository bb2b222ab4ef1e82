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
