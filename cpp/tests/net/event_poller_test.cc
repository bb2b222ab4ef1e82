#include "net/event_poller.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

struct SocketPair {
  Fd a, b;
};

SocketPair MakePair() {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  return {Fd(fds[0]), Fd(fds[1])};
}

// The events of one wait; a failed wait fails the test and reads as none.
std::vector<EventPoller::Event> Ready(Result<std::vector<EventPoller::Event>> waited) {
  EXPECT_TRUE(waited.ok()) << waited.status().message();
  return waited.ok() ? *waited : std::vector<EventPoller::Event>{};
}

std::vector<uint64_t> Keys(const std::vector<EventPoller::Event>& events) {
  std::vector<uint64_t> keys;
  for (const auto& e : events) keys.push_back(e.key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(EventPollerTest, NothingReadyTimesOutEmpty) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair pair = MakePair();
  KDIST_ASSERT_OK(poller.Add(pair.a.get(), 7, /*want_write=*/false));
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(10)));
  EXPECT_TRUE(events.empty());
}

TEST(EventPollerTest, ReportsTheKeyOfTheReadableSocketOnly) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair first = MakePair(), second = MakePair();
  KDIST_ASSERT_OK(poller.Add(first.a.get(), 1, false));
  KDIST_ASSERT_OK(poller.Add(second.a.get(), 2, false));
  ASSERT_EQ(write(second.b.get(), "x", 1), 1);
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(2000)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].key, 2u);
  EXPECT_TRUE(events[0].readable);
  EXPECT_FALSE(events[0].writable);
}

TEST(EventPollerTest, LevelTriggeredUntilDrained) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair pair = MakePair();
  KDIST_ASSERT_OK(poller.Add(pair.a.get(), 3, false));
  ASSERT_EQ(write(pair.b.get(), "xy", 2), 2);
  for (int round = 0; round < 2; ++round) {
    std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(2000)));
    EXPECT_EQ(Keys(events), std::vector<uint64_t>{3});
  }
  char buffer[2];
  ASSERT_EQ(read(pair.a.get(), buffer, 2), 2);
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(10)));
  EXPECT_TRUE(events.empty());
}

TEST(EventPollerTest, WritabilityOnlyWhileAsked) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair pair = MakePair();
  KDIST_ASSERT_OK(poller.Add(pair.a.get(), 4, /*want_write=*/true));
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(2000)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].writable);
  KDIST_ASSERT_OK(poller.WatchWrite(pair.a.get(), 4, /*want_write=*/false));
  events = Ready(poller.Wait(milliseconds(10)));
  EXPECT_TRUE(events.empty());
}

TEST(EventPollerTest, APeerThatClosesMakesTheSocketReadable) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair pair = MakePair();
  KDIST_ASSERT_OK(poller.Add(pair.a.get(), 5, false));
  pair.b.Close();
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(2000)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].readable);
}

TEST(EventPollerTest, ARemovedSocketIsNoLongerReported) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair pair = MakePair();
  KDIST_ASSERT_OK(poller.Add(pair.a.get(), 6, false));
  poller.Remove(pair.a.get());
  ASSERT_EQ(write(pair.b.get(), "x", 1), 1);
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(10)));
  EXPECT_TRUE(events.empty());
}

TEST(EventPollerTest, AddingTwiceIsAnError) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  SocketPair pair = MakePair();
  KDIST_ASSERT_OK(poller.Add(pair.a.get(), 1, false));
  KDIST_EXPECT_ERROR(poller.Add(pair.a.get(), 1, false), StatusCode::kInternal, "epoll_ctl(ADD)");
}

TEST(EventPollerTest, ReturnsAtMostMaxEventsPerWait) {
  Result<EventPoller> created = EventPoller::Create();
  KDIST_ASSERT_OK(created);
  EventPoller& poller = *created;
  std::vector<SocketPair> pairs;
  const int count = EventPoller::kMaxEvents + 10;
  for (int i = 0; i < count; ++i) {
    pairs.push_back(MakePair());
    KDIST_ASSERT_OK(poller.Add(pairs.back().a.get(), static_cast<uint64_t>(i), false));
    ASSERT_EQ(write(pairs.back().b.get(), "x", 1), 1);
  }
  std::vector<EventPoller::Event> events = Ready(poller.Wait(milliseconds(2000)));
  EXPECT_EQ(events.size(), static_cast<size_t>(EventPoller::kMaxEvents));
}

}  // namespace
}  // namespace kdist
