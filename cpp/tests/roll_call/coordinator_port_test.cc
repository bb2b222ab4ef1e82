#include "roll_call/coordinator_port.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testing/roll_call_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using testing::FastOptions;

TEST(CoordinatorPort, BindsOnlyTheBindAddressWhenGiven) {
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(1000));
  Result<Endpoint> bind_at = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(bind_at);
  // The coordinator's own port (12345) is not what is bound: the bind address's is.
  Result<Listener> listener = BindCoordinatorPort(12345, options, clock, *bind_at);
  KDIST_ASSERT_OK(listener);
  EXPECT_TRUE(listener->port != 12345);
  EXPECT_EQ(listener->bound, "127.0.0.1:" + std::to_string(listener->port));
}

TEST(CoordinatorPort, ATakenBindAddressNamesThePort) {
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(1000));
  Result<Listener> holder = ListenOnAllInterfaces(0, 4);
  KDIST_ASSERT_OK(holder);
  Result<Endpoint> bind_at = EndpointFromLiteral("127.0.0.1", holder->port);
  KDIST_ASSERT_OK(bind_at);
  KDIST_EXPECT_ERROR(BindCoordinatorPort(1, options, clock, *bind_at),
                     StatusCode::kAlreadyExists,
                     "process 0 cannot use coordinator port " + std::to_string(holder->port));
}

TEST(CoordinatorPort, APeerThatClosedIsGoneAndOneThatSpeaksIsNot) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  Fd ours(pair[0]);
  Fd theirs(pair[1]);
  EXPECT_FALSE(PeerGone(ours.get()));  // nothing sent yet: still there
  ASSERT_EQ(write(theirs.get(), "x", 1), 1);
  EXPECT_FALSE(PeerGone(ours.get()));  // it spoke; the byte stays unread
  theirs.Close();
  char byte;
  ASSERT_EQ(read(ours.get(), &byte, 1), 1);
  EXPECT_TRUE(PeerGone(ours.get()));
}

TEST(CoordinatorPort, AGrpcClientIsNamedAsOne) {
  EXPECT_EQ(WhyNotKdist("not kdist", "GET / HTTP/1.1"), "not kdist");
  EXPECT_NE(WhyNotKdist("not kdist", "PRI * HTTP/2.0\r\n").find("a gRPC client"),
            std::string::npos);
}

TEST(CoordinatorPort, RunningOutOfFilesNamesTheLimitAndTheFix) {
  const std::string message = NoFilesMessage(1021);
  EXPECT_NE(message.find("1021 connections open"), std::string::npos) << message;
  EXPECT_NE(message.find("ulimit -n"), std::string::npos) << message;
}

}  // namespace
}  // namespace kdist
