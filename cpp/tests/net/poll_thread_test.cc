#include "net/poll_thread.h"

#include <poll.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "base/clock.h"
#include "net/socket.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A loop as the liveness channel's: polls the wake pipe with a long timeout
// and counts the wakes it saw.
struct CountingLoop {
  PollThread thread;
  std::atomic<int> wakes{0};
  std::atomic<int> rounds{0};

  Status Start(Nanos poll_timeout = seconds(30)) {
    return thread.Start("a test", [this, poll_timeout] {
      while (!thread.stopping()) {
        std::vector<pollfd> fds{{thread.wake_fd(), POLLIN, 0}};
        if (Poll(fds, poll_timeout) < 0) continue;
        ++rounds;
        if (fds[0].revents) {
          thread.DrainWake();
          ++wakes;
        }
      }
    });
  }
};

// Waits (bounded) until `value` reaches `at_least`.
bool Reaches(const std::atomic<int>& value, int at_least) {
  RealClock clock;
  const Nanos deadline = clock.Now() + seconds(10);
  while (value.load() < at_least) {
    if (clock.Now() >= deadline) return false;
    clock.Sleep(milliseconds(1));
  }
  return true;
}

TEST(PollThread, WakeEndsTheLoopsPollAtOnce) {
  CountingLoop loop;
  KDIST_ASSERT_OK(loop.Start());
  EXPECT_GE(loop.thread.wake_fd(), 0);
  loop.thread.Wake();
  ASSERT_TRUE(Reaches(loop.wakes, 1));  // long before the 30 s poll timeout
  loop.thread.Wake();
  ASSERT_TRUE(Reaches(loop.wakes, 2));
  EXPECT_TRUE(loop.thread.Stop());
}

bool Readable(int fd) {
  std::vector<pollfd> fds{{fd, POLLIN, 0}};
  return Poll(fds, Nanos(0)) > 0 && (fds[0].revents & POLLIN) != 0;
}

TEST(PollThread, DrainWakeEmptiesThePipeInOneCall) {
  PollThread thread;
  RealClock clock;
  // A loop that never polls, so the test alone reads the pipe.
  KDIST_ASSERT_OK(thread.Start("a test", [&] {
    while (!thread.stopping()) clock.Sleep(milliseconds(1));
  }));
  EXPECT_FALSE(Readable(thread.wake_fd()));
  for (int i = 0; i < 1000; ++i) thread.Wake();
  EXPECT_TRUE(Readable(thread.wake_fd()));
  thread.DrainWake();
  EXPECT_FALSE(Readable(thread.wake_fd()));
  thread.DrainWake();  // an empty pipe: returns at once
  EXPECT_TRUE(thread.Stop());
}

TEST(PollThread, StopEndsTheLoopOnceAndOnlyOnce) {
  CountingLoop loop;
  KDIST_ASSERT_OK(loop.Start());
  EXPECT_FALSE(loop.thread.stopping());
  RealClock clock;
  const Nanos start = clock.Now();
  EXPECT_TRUE(loop.thread.Stop());  // wakes the loop: no wait for its 30 s poll
  EXPECT_LT(clock.Now() - start, Nanos(seconds(10)));
  EXPECT_TRUE(loop.thread.stopping());
  EXPECT_FALSE(loop.thread.Stop());
  loop.thread.Wake();  // after the end: harmless
}

TEST(PollThread, NotStartedIsStoppedWithoutAThread) {
  PollThread thread;
  EXPECT_EQ(thread.wake_fd(), -1);
  thread.Wake();  // no pipe yet: nothing happens
  EXPECT_TRUE(thread.Stop());
  EXPECT_TRUE(thread.stopping());
}

TEST(PollThread, StartsOnce) {
  CountingLoop loop;
  KDIST_ASSERT_OK(loop.Start());
  KDIST_EXPECT_ERROR(loop.thread.Start("a test", [] {}), StatusCode::kFailedPrecondition,
                     "started before");
  loop.thread.Stop();
}

}  // namespace
}  // namespace kdist
