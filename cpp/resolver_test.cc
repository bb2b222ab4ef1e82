#include "resolver.h"

#include <dirent.h>
#include <netdb.h>

#include <thread>

#include "testing/check.h"

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

Address Make(std::string host, uint16_t port, HostKind kind) {
  Address a;
  a.host = std::move(host);
  a.port = port;
  a.kind = kind;
  return a;
}

KDIST_TEST(Resolver, IpLiteralsNeedNoLookup) {
  RealClock clock;
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(1);
  Waiter waiter(clock, options);
  auto v4 = ResolveEndpoints(Make("127.0.0.1", 5000, HostKind::kIPv4), waiter, nullptr);
  KDIST_ASSERT_OK(v4);
  KDIST_ASSERT_EQ(v4->size(), size_t{1});
  KDIST_EXPECT_EQ(v4->front().ToString(), std::string("127.0.0.1:5000"));
  auto v6 = ResolveEndpoints(Make("::1", 6000, HostKind::kIPv6), waiter, nullptr);
  KDIST_ASSERT_OK(v6);
  KDIST_EXPECT_EQ(v6->front().ToString(), std::string("[::1]:6000"));
}

KDIST_TEST(Resolver, LocalhostResolvesAndLeavesNoThread) {
  RealClock clock;
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(5);
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  auto endpoints = ResolveEndpoints(Make("localhost", 7000, HostKind::kName), waiter, nullptr);
  KDIST_ASSERT_OK(endpoints);
  KDIST_EXPECT_GE(endpoints->size(), size_t{1});
  bool loopback = false;
  for (const Endpoint& e : *endpoints) {
    KDIST_EXPECT_EQ(e.port(), uint16_t{7000});
    if (e.ToString() == "127.0.0.1:7000" || e.ToString() == "[::1]:7000") loopback = true;
  }
  KDIST_EXPECT_TRUE(loopback);
  KDIST_EXPECT_EQ(ThreadCount(), before);
}

// A resolver that takes 600 ms to answer, like a slow DNS server.
int SlowLookup(const char* host, const char* service, const addrinfo* hints, addrinfo** result) {
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  return getaddrinfo(host, service, hints, result);
}

// Waits (bounded) until the thread count drops back to `want`.
bool ThreadsReturnTo(int want) {
  for (int i = 0; i < 300 && ThreadCount() != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ThreadCount() == want;
}

KDIST_TEST(Resolver, SlowLookupIsAbandonedAtTheDeadline) {
  RealClock clock;
  RendezvousOptions options;
  options.timeout = std::chrono::milliseconds(150);
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  const Nanos start = clock.Now();
  auto endpoints =
      ResolveEndpointsWith(Make("localhost", 1, HostKind::kName), waiter, nullptr, &SlowLookup);
  const Nanos took = clock.Now() - start;
  KDIST_EXPECT_ERROR(endpoints, StatusCode::kDeadlineExceeded,
                     "resolving \"localhost\" did not finish within");
  KDIST_EXPECT_LT(took.count(), Nanos(std::chrono::milliseconds(450)).count());
  // The abandoned helper ends by itself once the lookup returns.
  KDIST_EXPECT_TRUE(ThreadsReturnTo(before));
}

KDIST_TEST(Resolver, SlowLookupWithinTheDeadlineIsJoined) {
  RealClock clock;
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(5);
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  auto endpoints =
      ResolveEndpointsWith(Make("localhost", 1, HostKind::kName), waiter, nullptr, &SlowLookup);
  KDIST_EXPECT_OK(endpoints);
  KDIST_EXPECT_EQ(ThreadCount(), before);  // joined before returning, no waiting needed
}

KDIST_TEST(Resolver, InterruptStopsTheWait) {
  RealClock clock;
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(5);
  options.check_interval = std::chrono::milliseconds(20);
  int asked = 0;
  options.interrupted = [&]() -> Status {
    return ++asked >= 3 ? Internal("interrupted by test") : Status::Ok();
  };
  Waiter waiter(clock, options);
  const int before = ThreadCount();
  const Nanos start = clock.Now();
  auto endpoints =
      ResolveEndpointsWith(Make("localhost", 1, HostKind::kName), waiter, nullptr, &SlowLookup);
  KDIST_EXPECT_ERROR(endpoints, StatusCode::kInternal, "interrupted by test");
  KDIST_EXPECT_LT((clock.Now() - start).count(), Nanos(std::chrono::milliseconds(400)).count());
  KDIST_EXPECT_TRUE(ThreadsReturnTo(before));
}

KDIST_TEST(Resolver, UnknownNameIsUnavailable) {
  // "invalid." is reserved (RFC 6761) and answered locally; no query leaves the machine
  // when resolution is done from /etc/hosts, and the test accepts either failure kind.
  RealClock clock;
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(5);
  Waiter waiter(clock, options);
  auto endpoints = ResolveEndpointsWith(Make("no-such-host.invalid", 1, HostKind::kName), waiter,
                                        nullptr,
                                        [](const char*, const char*, const addrinfo*,
                                           addrinfo**) { return EAI_NONAME; });
  KDIST_EXPECT_ERROR(endpoints, StatusCode::kUnavailable, "cannot resolve \"no-such-host.invalid\"");
}

}  // namespace
}  // namespace kdist
