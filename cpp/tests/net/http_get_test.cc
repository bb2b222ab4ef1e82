#include "net/http_get.h"

#include "base/clock.h"
#include "testing/http_server.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::HttpServer;

Address Loopback(uint16_t port) { return Address{"127.0.0.1", port, HostKind::kIPv4}; }

Result<HttpReply> Get(uint16_t port, const std::string& path, Nanos bound) {
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, bound);
  Waiter waiter(clock, options);
  return HttpGet(Loopback(port), path, {{"Metadata-Flavor", "Google"}}, waiter);
}

TEST(ParseHttpReply, StatusAndBody) {
  Result<HttpReply> reply = ParseHttpReply("HTTP/1.0 200 OK\r\nA: b\r\n\r\nhello");
  KDIST_ASSERT_OK(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "hello");
  reply = ParseHttpReply("HTTP/1.1 404 Not Found\r\n\r\n");
  KDIST_ASSERT_OK(reply);
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(reply->body, "");
}

TEST(ParseHttpReply, RefusesWhatIsNotHttp) {
  KDIST_EXPECT_ERROR(ParseHttpReply("SSH-2.0-OpenSSH\r\n"), StatusCode::kUnavailable, "not HTTP");
  KDIST_EXPECT_ERROR(ParseHttpReply("HTTP/1.0 abc\r\n\r\n"), StatusCode::kUnavailable,
                     "status line");
  KDIST_EXPECT_ERROR(ParseHttpReply("HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nshort"),
                     StatusCode::kUnavailable, "Content-Length");
}

TEST(HttpGet, SendsThePathAndHeadersAndReadsTheReply) {
  HttpServer server(testing::Replies{{"/computeMetadata/v1/instance/attributes/x", HttpServer::Ok("42")}});
  Result<HttpReply> reply = Get(server.port(), "/computeMetadata/v1/instance/attributes/x",
                                seconds(5));
  KDIST_ASSERT_OK(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "42");
  ASSERT_EQ(server.requests().size(), 1u);
  const std::string request = server.requests()[0];
  EXPECT_EQ(request.rfind("GET /computeMetadata/v1/instance/attributes/x HTTP/1.0\r\n", 0), 0u);
  EXPECT_NE(request.find("\r\nMetadata-Flavor: Google\r\n"), std::string::npos);
}

TEST(HttpGet, ANotFoundIsAReplyNotAnError) {
  HttpServer server(testing::Replies{});
  Result<HttpReply> reply = Get(server.port(), "/missing", seconds(5));
  KDIST_ASSERT_OK(reply);
  EXPECT_EQ(reply->status, 404);
}

TEST(HttpGet, AClosedPortIsUnavailableAndNamed) {
  uint16_t port = 0;
  {
    Result<Listener> listener = ListenOnAllInterfaces(0, 8);
    KDIST_ASSERT_OK(listener);
    port = listener->port;
  }
  KDIST_EXPECT_ERROR(Get(port, "/a", seconds(5)), StatusCode::kUnavailable,
                     "GET http://127.0.0.1:" + std::to_string(port) + "/a");
}

TEST(HttpGet, AServerThatNeverAnswersEndsAtTheDeadline) {
  HttpServer server(testing::Replies{}, /*silent=*/true);
  RealClock clock;
  const Nanos start = clock.Now();
  KDIST_EXPECT_ERROR(Get(server.port(), "/a", milliseconds(300)), StatusCode::kDeadlineExceeded,
                     "sent no reply");
  EXPECT_LT(clock.Now() - start, seconds(3));
}

TEST(HttpGet, AReplyAboveTheCapIsRefused) {
  HttpServer server(testing::Replies{{"/big", HttpServer::Ok(std::string(5000, 'x'))}});
  RealClock clock;
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(5));
  Waiter waiter(clock, options);
  KDIST_EXPECT_ERROR(HttpGet(Loopback(server.port()), "/big", {}, waiter, 1000),
                     StatusCode::kUnavailable, "exceeds 1000 bytes");
}

}  // namespace
}  // namespace kdist
