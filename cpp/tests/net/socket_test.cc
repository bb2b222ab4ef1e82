#include "net/socket.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

// Waits (bounded) for one event on one descriptor; returns revents.
short WaitFor(int fd, short events, int ms = 2000) {
  std::vector<pollfd> fds{{fd, events, 0}};
  if (Poll(fds, milliseconds(ms)) <= 0) return 0;
  return fds[0].revents;
}

// A connected (client, server) pair on loopback through a real listener.
struct Pair {
  Fd client, server;
};

Result<Pair> Connect(const Listener& listener, std::string_view ip = "127.0.0.1") {
  Result<Endpoint> endpoint = EndpointFromLiteral(ip, listener.port);
  if (!endpoint.ok()) return endpoint.status();
  Connecting c = StartConnect(*endpoint);
  if (c.io.state == IoState::kError) return Unavailable(ErrorText(c.io.error));
  if (c.io.state == IoState::kWouldBlock) {
    if (!(WaitFor(c.fd.get(), POLLOUT) & POLLOUT)) return Unavailable("connect timed out");
    if (const int e = ConnectResult(c.fd.get())) return Unavailable(ErrorText(e));
  }
  if (!(WaitFor(listener.fd.get(), POLLIN) & POLLIN)) return Unavailable("nothing to accept");
  Accepted a = AcceptOne(listener.fd.get());
  if (a.io.state != IoState::kDone) return Unavailable("accept failed");
  return Pair{std::move(c.fd), std::move(a.fd)};
}

TEST(Socket, ErrorTextIsLowerCase) {
  EXPECT_EQ(ErrorText(ECONNREFUSED), std::string("connection refused"));
  EXPECT_EQ(ErrorText(ETIMEDOUT), std::string("connection timed out"));
}

TEST(Socket, PeerAddressIsTheOtherEndsIpLiteral) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 4);  // [::], accepting IPv4 too
  KDIST_ASSERT_OK(listener);
  Result<Pair> pair = Connect(*listener);
  KDIST_ASSERT_OK(pair);
  EXPECT_EQ(PeerAddress(pair->server.get()), std::string("127.0.0.1"));  // not ::ffff:127.0.0.1
  EXPECT_EQ(PeerAddress(-1), std::string(""));
}

TEST(Socket, LocalAddressIsTheAddressThePeerReached) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 4);  // [::], accepting IPv4 too
  KDIST_ASSERT_OK(listener);
  Result<Pair> pair = Connect(*listener);
  KDIST_ASSERT_OK(pair);
  EXPECT_EQ(LocalAddress(pair->server.get()), std::string("127.0.0.1"));  // not "::"
  EXPECT_EQ(LocalAddress(-1), std::string(""));
}

TEST(Socket, FdClosesAndMoves) {
  int raw = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_TRUE(raw >= 0);
  {
    Fd a(raw);
    Fd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
  }
  EXPECT_EQ(fcntl(raw, F_GETFD), -1);  // closed by b's destructor
}

TEST(Socket, EndpointsPrintLikeAddresses) {
  Result<Endpoint> v4 = EndpointFromLiteral("127.0.0.1", 5000);
  KDIST_ASSERT_OK(v4);
  EXPECT_EQ(v4->ToString(), std::string("127.0.0.1:5000"));
  Result<Endpoint> v6 = EndpointFromLiteral("::1", 6000);
  KDIST_ASSERT_OK(v6);
  EXPECT_EQ(v6->ToString(), std::string("[::1]:6000"));
  KDIST_EXPECT_ERROR(EndpointFromLiteral("localhost", 1), StatusCode::kInvalidArgument, "literal");
}

TEST(Socket, DualStackListenerTakesIpv4AndIpv6) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 16);
  KDIST_ASSERT_OK(listener);
  EXPECT_TRUE(listener->port != 0);
  for (const char* ip : {"127.0.0.1", "::1"}) {
    Result<Pair> pair = Connect(*listener, ip);
    KDIST_ASSERT_OK(pair);
    Io w = WriteSome(pair->client.get(), "hello");
    EXPECT_TRUE(w.state == IoState::kDone && w.bytes == 5);
    ASSERT_TRUE(WaitFor(pair->server.get(), POLLIN) & POLLIN);
    char buffer[16];
    Io r = ReadSome(pair->server.get(), buffer, sizeof buffer);
    EXPECT_TRUE(r.state == IoState::kDone);
    EXPECT_EQ(std::string(buffer, r.bytes), std::string("hello"));
    EXPECT_TRUE(ReadSome(pair->server.get(), buffer, sizeof buffer).state ==
                      IoState::kWouldBlock);
    pair->client.Close();
    ASSERT_TRUE(WaitFor(pair->server.get(), POLLIN) & POLLIN);
    EXPECT_TRUE(ReadSome(pair->server.get(), buffer, sizeof buffer).state == IoState::kEof);
  }
  EXPECT_TRUE(AcceptOne(listener->fd.get()).io.state == IoState::kWouldBlock);
}

TEST(Socket, ResetCloseGivesThePeerAReset) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 16);
  KDIST_ASSERT_OK(listener);
  Result<Pair> pair = Connect(*listener);
  KDIST_ASSERT_OK(pair);
  pair->server.CloseWithReset();
  ASSERT_TRUE(WaitFor(pair->client.get(), POLLIN) != 0);
  char buffer[4];
  Io r = ReadSome(pair->client.get(), buffer, sizeof buffer);
  EXPECT_TRUE(r.state == IoState::kError);
  EXPECT_EQ(r.error, ECONNRESET);
  Io w = WriteSome(pair->client.get(), "x");  // no SIGPIPE: an error code
  EXPECT_TRUE(w.state == IoState::kError);
}

TEST(Socket, TakenPortIsAlreadyExistsNeverShared) {
  Result<Listener> first = ListenOnAllInterfaces(0, 16);
  KDIST_ASSERT_OK(first);
  KDIST_EXPECT_ERROR(ListenOnAllInterfaces(first->port, 16), StatusCode::kAlreadyExists,
                     "port " + std::to_string(first->port) + " is already in use");

  // A plain listener on 127.0.0.1 that allows SO_REUSEPORT sharing still
  // makes the port taken for us.
  Fd plain(socket(AF_INET, SOCK_STREAM, 0));
  const int one = 1;
  setsockopt(plain.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  Result<Endpoint> any = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(any);
  ASSERT_TRUE(bind(plain.get(), reinterpret_cast<const sockaddr*>(&any->storage),
                         any->size) == 0);
  ASSERT_TRUE(listen(plain.get(), 1) == 0);
  sockaddr_in bound{};
  socklen_t size = sizeof bound;
  getsockname(plain.get(), reinterpret_cast<sockaddr*>(&bound), &size);
  KDIST_EXPECT_ERROR(ListenOnAllInterfaces(ntohs(bound.sin_port), 16), StatusCode::kAlreadyExists,
                     "already in use");
}

TEST(Socket, TimeWaitOfAnEarlierRunDoesNotBlockTheListener) {
  uint16_t port = 0;
  {
    Result<Listener> listener = ListenOnAllInterfaces(0, 16);
    KDIST_ASSERT_OK(listener);
    port = listener->port;
    Result<Pair> pair = Connect(*listener);
    KDIST_ASSERT_OK(pair);
    pair->server.Close();  // the listening side closes first: TIME_WAIT on `port`
    ASSERT_TRUE(WaitFor(pair->client.get(), POLLIN) & POLLIN);
  }
  Result<Listener> again = ListenOnAllInterfaces(port, 16);
  KDIST_EXPECT_OK(again);
}

TEST(Socket, ConnectToAClosedPortIsRefused) {
  uint16_t port = 0;
  {
    Result<Listener> listener = ListenOnAllInterfaces(0, 16);
    KDIST_ASSERT_OK(listener);
    port = listener->port;
  }
  Result<Endpoint> endpoint = EndpointFromLiteral("127.0.0.1", port);
  KDIST_ASSERT_OK(endpoint);
  Connecting c = StartConnect(*endpoint);
  int error = c.io.error;
  if (c.io.state == IoState::kWouldBlock) {
    ASSERT_TRUE(WaitFor(c.fd.get(), POLLOUT) != 0);
    error = ConnectResult(c.fd.get());
  }
  EXPECT_EQ(error, ECONNREFUSED);
}

TEST(Socket, PollTimesOutWithinItsBound) {
  RealClock clock;
  Result<Listener> idle = ListenOnAllInterfaces(0, 1);  // nobody connects
  KDIST_ASSERT_OK(idle);
  std::vector<pollfd> fds{{idle->fd.get(), POLLIN, 0}};
  const Nanos start = clock.Now();
  EXPECT_EQ(Poll(fds, milliseconds(20)), 0);
  const Nanos took = clock.Now() - start;
  EXPECT_GE(took.count(), Nanos(milliseconds(20)).count());
  EXPECT_LT(took.count(), Nanos(milliseconds(10000)).count());
  std::vector<pollfd> none;
  EXPECT_EQ(Poll(none, Nanos(-1)), 0);
}

TEST(Socket, ListenOnOneAddressOnly) {
  Result<Endpoint> loopback = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(loopback);
  Result<Listener> listener = ListenOn(*loopback, 8);
  KDIST_ASSERT_OK(listener);
  EXPECT_TRUE(listener->port != 0);
  EXPECT_EQ(listener->bound, "127.0.0.1:" + std::to_string(listener->port));
  KDIST_EXPECT_OK(Connect(*listener, "127.0.0.1"));
  // Bound to 127.0.0.1 only: another loopback address finds nobody there.
  EXPECT_FALSE(Connect(*listener, "127.0.0.2").ok());
}

TEST(Socket, ListenOnATakenPortIsAlreadyExists) {
  Result<Endpoint> any = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(any);
  Result<Listener> first = ListenOn(*any, 8);
  KDIST_ASSERT_OK(first);
  Result<Endpoint> same = EndpointFromLiteral("127.0.0.1", first->port);
  KDIST_ASSERT_OK(same);
  KDIST_EXPECT_ERROR(ListenOn(*same, 8), StatusCode::kAlreadyExists,
                     "port " + std::to_string(first->port) + " is already in use (binding 127.0.0.1:");
}

TEST(Socket, ListenOnIPv6WildcardAcceptsIPv4) {
  Result<Endpoint> wildcard = EndpointFromLiteral("::", 0);
  KDIST_ASSERT_OK(wildcard);
  Result<Listener> listener = ListenOn(*wildcard, 8);
  if (!listener.ok()) return;  // no IPv6 stack here: nothing to check
  EXPECT_EQ(listener->bound, "[::]:" + std::to_string(listener->port));
  KDIST_EXPECT_OK(Connect(*listener, "127.0.0.1"));
}

}  // namespace
}  // namespace kdist
