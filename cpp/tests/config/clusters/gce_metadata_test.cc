#include "config/clusters/gce_metadata.h"

#include "testing/http_server.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using testing::HttpServer;

const std::string kPath = "/computeMetadata/v1/instance/attributes/";

Environment At(uint16_t port) {
  return {{"GCE_METADATA_IP", "127.0.0.1:" + std::to_string(port)}};
}

TEST(GceMetadata, AsksWithTheHeaderAndKeepsEachAnswer) {
  HttpServer server(testing::Replies{{kPath + "agent-worker-number", HttpServer::Ok("1")}});
  RealClock clock;
  GceMetadataServer metadata(At(server.port()), clock);
  EXPECT_EQ(metadata.Attribute("agent-worker-number").value(), "1");
  EXPECT_EQ(metadata.Attribute("agent-worker-number").value(), "1");
  EXPECT_EQ(metadata.requests(), 1);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].find("Metadata-Flavor: Google"), std::string::npos);
}

TEST(GceMetadata, AMissingAttributeIsNotFoundAtOnce) {
  HttpServer server(testing::Replies{});
  RealClock clock;
  GceMetadataServer metadata(At(server.port()), clock);
  KDIST_EXPECT_ERROR(metadata.Attribute("tpu-env"), StatusCode::kNotFound, "HTTP 404");
  EXPECT_EQ(metadata.requests(), 1);
}

TEST(GceMetadata, AServerThatNeverAnswersIsNamedWithinItsBound) {
  HttpServer server(testing::Replies{}, /*silent=*/true);
  RealClock clock;
  MetadataBounds bounds;
  bounds.attempt = milliseconds(200);
  bounds.pause = milliseconds(50);
  GceMetadataServer metadata(At(server.port()), clock, bounds);
  const Nanos start = clock.Now();
  KDIST_EXPECT_ERROR(metadata.Attribute("agent-worker-number"), StatusCode::kDeadlineExceeded,
                     "the GCE metadata server at \"127.0.0.1:" + std::to_string(server.port()) +
                         "\" (GCE_METADATA_IP) did not give the instance attribute "
                         "\"agent-worker-number\" in 3 attempts");
  EXPECT_EQ(metadata.requests(), 3);
  EXPECT_LT(clock.Now() - start, std::chrono::seconds(5));
}

TEST(GceMetadata, RetriesAnErrorThenNamesIt) {
  HttpServer server(testing::Replies{{kPath + "x", "HTTP/1.0 503 Busy\r\n\r\nbusy"}});
  FakeClock clock;  // the pauses between attempts are the fake clock's
  GceMetadataServer metadata(At(server.port()), clock);
  KDIST_EXPECT_ERROR(metadata.Attribute("x"), StatusCode::kUnavailable, "HTTP 503");
  EXPECT_EQ(metadata.requests(), 3);
  EXPECT_EQ(clock.sleeps().size(), 2u);
}

TEST(GceMetadata, DefaultServerAndMalformedAddress) {
  RealClock clock;
  EXPECT_EQ(GceMetadataServer({}, clock).Describe(),
            "the GCE metadata server at \"metadata.google.internal\" (GCE_METADATA_IP is not set)");
  GceMetadataServer bad({{"GCE_METADATA_IP", "not a host"}}, clock);
  KDIST_EXPECT_ERROR(bad.Attribute("x"), StatusCode::kInvalidArgument, "GCE_METADATA_IP");
  EXPECT_EQ(bad.requests(), 0);
}

}  // namespace
}  // namespace kdist
