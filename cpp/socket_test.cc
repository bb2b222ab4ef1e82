#include "socket.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>

#include "testing/check.h"

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

KDIST_TEST(Socket, ErrorTextIsLowerCase) {
  KDIST_EXPECT_EQ(ErrorText(ECONNREFUSED), std::string("connection refused"));
  KDIST_EXPECT_EQ(ErrorText(ETIMEDOUT), std::string("connection timed out"));
}

KDIST_TEST(Socket, FdClosesAndMoves) {
  int raw = socket(AF_INET, SOCK_STREAM, 0);
  KDIST_ASSERT_TRUE(raw >= 0);
  {
    Fd a(raw);
    Fd b(std::move(a));
    KDIST_EXPECT_FALSE(a.valid());
    KDIST_EXPECT_EQ(b.get(), raw);
  }
  KDIST_EXPECT_EQ(fcntl(raw, F_GETFD), -1);  // closed by b's destructor
}

KDIST_TEST(Socket, EndpointsPrintLikeAddresses) {
  Result<Endpoint> v4 = EndpointFromLiteral("127.0.0.1", 5000);
  KDIST_ASSERT_OK(v4);
  KDIST_EXPECT_EQ(v4->ToString(), std::string("127.0.0.1:5000"));
  Result<Endpoint> v6 = EndpointFromLiteral("::1", 6000);
  KDIST_ASSERT_OK(v6);
  KDIST_EXPECT_EQ(v6->ToString(), std::string("[::1]:6000"));
  KDIST_EXPECT_ERROR(EndpointFromLiteral("localhost", 1), StatusCode::kInvalidArgument, "literal");
}

KDIST_TEST(Socket, DualStackListenerTakesIpv4AndIpv6) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 16);
  KDIST_ASSERT_OK(listener);
  KDIST_EXPECT_TRUE(listener->port != 0);
  for (const char* ip : {"127.0.0.1", "::1"}) {
    Result<Pair> pair = Connect(*listener, ip);
    KDIST_ASSERT_OK(pair);
    Io w = WriteSome(pair->client.get(), "hello");
    KDIST_EXPECT_TRUE(w.state == IoState::kDone && w.bytes == 5);
    KDIST_ASSERT_TRUE(WaitFor(pair->server.get(), POLLIN) & POLLIN);
    char buffer[16];
    Io r = ReadSome(pair->server.get(), buffer, sizeof buffer);
    KDIST_EXPECT_TRUE(r.state == IoState::kDone);
    KDIST_EXPECT_EQ(std::string(buffer, r.bytes), std::string("hello"));
    KDIST_EXPECT_TRUE(ReadSome(pair->server.get(), buffer, sizeof buffer).state ==
                      IoState::kWouldBlock);
    pair->client.Close();
    KDIST_ASSERT_TRUE(WaitFor(pair->server.get(), POLLIN) & POLLIN);
    KDIST_EXPECT_TRUE(ReadSome(pair->server.get(), buffer, sizeof buffer).state == IoState::kEof);
  }
  KDIST_EXPECT_TRUE(AcceptOne(listener->fd.get()).io.state == IoState::kWouldBlock);
}

KDIST_TEST(Socket, ResetCloseGivesThePeerAReset) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 16);
  KDIST_ASSERT_OK(listener);
  Result<Pair> pair = Connect(*listener);
  KDIST_ASSERT_OK(pair);
  pair->server.CloseWithReset();
  KDIST_ASSERT_TRUE(WaitFor(pair->client.get(), POLLIN) != 0);
  char buffer[4];
  Io r = ReadSome(pair->client.get(), buffer, sizeof buffer);
  KDIST_EXPECT_TRUE(r.state == IoState::kError);
  KDIST_EXPECT_EQ(r.error, ECONNRESET);
  Io w = WriteSome(pair->client.get(), "x");  // no SIGPIPE: an error code
  KDIST_EXPECT_TRUE(w.state == IoState::kError);
}

KDIST_TEST(Socket, TakenPortIsAlreadyExistsNeverShared) {
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
  KDIST_ASSERT_TRUE(bind(plain.get(), reinterpret_cast<const sockaddr*>(&any->storage),
                         any->size) == 0);
  KDIST_ASSERT_TRUE(listen(plain.get(), 1) == 0);
  sockaddr_in bound{};
  socklen_t size = sizeof bound;
  getsockname(plain.get(), reinterpret_cast<sockaddr*>(&bound), &size);
  KDIST_EXPECT_ERROR(ListenOnAllInterfaces(ntohs(bound.sin_port), 16), StatusCode::kAlreadyExists,
                     "already in use");
}

KDIST_TEST(Socket, TimeWaitOfAnEarlierRunDoesNotBlockTheListener) {
  uint16_t port = 0;
  {
    Result<Listener> listener = ListenOnAllInterfaces(0, 16);
    KDIST_ASSERT_OK(listener);
    port = listener->port;
    Result<Pair> pair = Connect(*listener);
    KDIST_ASSERT_OK(pair);
    pair->server.Close();  // the listening side closes first: TIME_WAIT on `port`
    KDIST_ASSERT_TRUE(WaitFor(pair->client.get(), POLLIN) & POLLIN);
  }
  Result<Listener> again = ListenOnAllInterfaces(port, 16);
  KDIST_EXPECT_OK(again);
}

KDIST_TEST(Socket, ConnectToAClosedPortIsRefused) {
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
    KDIST_ASSERT_TRUE(WaitFor(c.fd.get(), POLLOUT) != 0);
    error = ConnectResult(c.fd.get());
  }
  KDIST_EXPECT_EQ(error, ECONNREFUSED);
}

KDIST_TEST(Socket, PollTimesOutWithinItsBound) {
  RealClock clock;
  Result<Listener> idle = ListenOnAllInterfaces(0, 1);  // nobody connects
  KDIST_ASSERT_OK(idle);
  std::vector<pollfd> fds{{idle->fd.get(), POLLIN, 0}};
  const Nanos start = clock.Now();
  KDIST_EXPECT_EQ(Poll(fds, milliseconds(20)), 0);
  const Nanos took = clock.Now() - start;
  KDIST_EXPECT_GE(took.count(), Nanos(milliseconds(20)).count());
  KDIST_EXPECT_LT(took.count(), Nanos(milliseconds(10000)).count());
  std::vector<pollfd> none;
  KDIST_EXPECT_EQ(Poll(none, Nanos(-1)), 0);
}

KDIST_TEST(Socket, ListenOnOneAddressOnly) {
  Result<Endpoint> loopback = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(loopback);
  Result<Listener> listener = ListenOn(*loopback, 8);
  KDIST_ASSERT_OK(listener);
  KDIST_EXPECT_TRUE(listener->port != 0);
  KDIST_EXPECT_EQ(listener->bound, "127.0.0.1:" + std::to_string(listener->port));
  KDIST_EXPECT_OK(Connect(*listener, "127.0.0.1"));
  // Bound to 127.0.0.1 only: another loopback address finds nobody there.
  KDIST_EXPECT_FALSE(Connect(*listener, "127.0.0.2").ok());
}

KDIST_TEST(Socket, ListenOnATakenPortIsAlreadyExists) {
  Result<Endpoint> any = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(any);
  Result<Listener> first = ListenOn(*any, 8);
  KDIST_ASSERT_OK(first);
  Result<Endpoint> same = EndpointFromLiteral("127.0.0.1", first->port);
  KDIST_ASSERT_OK(same);
  KDIST_EXPECT_ERROR(ListenOn(*same, 8), StatusCode::kAlreadyExists,
                     "port " + std::to_string(first->port) + " is already in use (binding 127.0.0.1:");
}

KDIST_TEST(Socket, ListenOnIPv6WildcardAcceptsIPv4) {
  Result<Endpoint> wildcard = EndpointFromLiteral("::", 0);
  KDIST_ASSERT_OK(wildcard);
  Result<Listener> listener = ListenOn(*wildcard, 8);
  if (!listener.ok()) return;  // no IPv6 stack here: nothing to check
  KDIST_EXPECT_EQ(listener->bound, "[::]:" + std::to_string(listener->port));
  KDIST_EXPECT_OK(Connect(*listener, "127.0.0.1"));
}

}  // namespace
}  // namespace kdist
