#include "net/dns.h"

#include <dirent.h>
#include <netdb.h>

#include <atomic>
#include <thread>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

int ThreadCount() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    closedir(dir);
  }
  return count;
}

// The thread count once it reaches `expected` or stops falling: a joined thread
// may stay in /proc/self/task for a moment after pthread_join returns (the
// kernel wakes the joiner before the task is gone). Bounded at 1 s.
int SettledThreadCount(int expected) {
  int count = ThreadCount();
  for (int i = 0; i < 100 && count > expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = ThreadCount();
  }
  return count;
}

Address Make(std::string host, uint16_t port, HostKind kind) {
  Address a;
  a.host = std::move(host);
  a.port = port;
  a.kind = kind;
  return a;
}

TEST(Resolver, IpLiteralsNeedNoLookup) {
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, std::chrono::seconds(1));
  Waiter waiter(clock, options);
  auto v4 = ResolveEndpoints(Make("127.0.0.1", 5000, HostKind::kIPv4), waiter, nullptr);
  KDIST_ASSERT_OK(v4);
  ASSERT_EQ(v4->size(), size_t{1});
  EXPECT_EQ(v4->front().ToString(), std::string("127.0.0.1:5000"));
  auto v6 = ResolveEndpoints(Make("::1", 6000, HostKind::kIPv6), waiter, nullptr);
  KDIST_ASSERT_OK(v6);
  EXPECT_EQ(v6->front().ToString(), std::string("[::1]:6000"));
}

TEST(Resolver, LocalhostResolvesAndLeavesNoThread) {
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, std::chrono::seconds(5));
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  auto endpoints = ResolveEndpoints(Make("localhost", 7000, HostKind::kName), waiter, nullptr);
  KDIST_ASSERT_OK(endpoints);
  EXPECT_GE(endpoints->size(), size_t{1});
  bool loopback = false;
  for (const Endpoint& e : *endpoints) {
    EXPECT_EQ(e.port(), uint16_t{7000});
    if (e.ToString() == "127.0.0.1:7000" || e.ToString() == "[::1]:7000") loopback = true;
  }
  EXPECT_TRUE(loopback);
  EXPECT_EQ(SettledThreadCount(before), before);
}

// A resolver that does not answer until the test lets it (at most 10 s), like
// a DNS server that is down.
std::atomic<bool> g_answer{false};

int BlockedLookup(const char* host, const char* service, const addrinfo* hints,
                  addrinfo** result) {
  for (int i = 0; i < 1000 && !g_answer; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return getaddrinfo(host, service, hints, result);
}

// Waits (bounded) until the thread count drops back to `want`.
bool ThreadsReturnTo(int want) {
  for (int i = 0; i < 1000 && ThreadCount() != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ThreadCount() == want;
}

TEST(Resolver, BlockedLookupIsAbandonedAtTheDeadline) {
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, std::chrono::milliseconds(150));
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  g_answer = false;
  // The lookup cannot answer before g_answer is set: returning at all proves
  // the deadline, not the resolver, ended the wait.
  auto endpoints =
      ResolveEndpointsWith(Make("localhost", 1, HostKind::kName), waiter, nullptr, &BlockedLookup);
  KDIST_EXPECT_ERROR(endpoints, StatusCode::kDeadlineExceeded,
                     "resolving \"localhost\" did not finish within");
  EXPECT_EQ(ThreadCount(), before + 1);  // the abandoned helper, still blocked
  g_answer = true;
  EXPECT_TRUE(ThreadsReturnTo(before));  // it ends by itself once answered
}

TEST(Resolver, SlowLookupWithinTheDeadlineIsJoined) {
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, std::chrono::seconds(30));
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  g_answer = false;
  std::thread answer_later([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    g_answer = true;
  });
  auto endpoints =
      ResolveEndpointsWith(Make("localhost", 1, HostKind::kName), waiter, nullptr, &BlockedLookup);
  answer_later.join();
  KDIST_EXPECT_OK(endpoints);
  EXPECT_EQ(SettledThreadCount(before), before);  // joined before returning
}

TEST(Resolver, InterruptStopsTheWait) {
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, std::chrono::seconds(30));
  options.check_interval = std::chrono::milliseconds(20);
  int asked = 0;
  options.interrupted = [&]() -> Status {
    return ++asked >= 3 ? Internal("interrupted by test") : Status::Ok();
  };
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  g_answer = false;
  auto endpoints =
      ResolveEndpointsWith(Make("localhost", 1, HostKind::kName), waiter, nullptr, &BlockedLookup);
  KDIST_EXPECT_ERROR(endpoints, StatusCode::kInternal, "interrupted by test");
  EXPECT_EQ(asked, 3);
  g_answer = true;
  EXPECT_TRUE(ThreadsReturnTo(before));
}

TEST(Resolver, UnknownNameIsUnavailable) {
  // "invalid." is reserved (RFC 6761) and answered locally; no query leaves the machine
  // when resolution is done from /etc/hosts, and the test accepts either failure kind.
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, std::chrono::seconds(5));
  Waiter waiter(clock, options);
  auto endpoints = ResolveEndpointsWith(Make("no-such-host.invalid", 1, HostKind::kName), waiter,
                                        nullptr,
                                        [](const char*, const char*, const addrinfo*,
                                           addrinfo**) { return EAI_NONAME; });
  KDIST_EXPECT_ERROR(endpoints, StatusCode::kUnavailable, "cannot resolve \"no-such-host.invalid\"");
}

}  // namespace
}  // namespace kdist
