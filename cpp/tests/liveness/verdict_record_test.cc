#include "liveness/verdict_record.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(VerdictRecord, EncodesOneJsonObject) {
  VerdictRecord r;
  r.event = "peer_failed";
  r.process_id = 1;
  r.host = "node-1";
  r.pid = 4242;
  r.message = "ValueError: bad \"shape\"\n\x01";
  r.exit_status = 1;
  r.line = "kdist: process 1 failed first";
  EXPECT_EQ(EncodeVerdictRecord(r),
            std::string("{\"event\": \"peer_failed\", \"process_id\": 1, \"host\": \"node-1\", "
                        "\"pid\": 4242, \"message\": \"ValueError: bad \\\"shape\\\"\\u000a"
                        "\\u0001\", \"step\": -1, \"exit_status\": 1, \"reporter\": 0, "
                        "\"line\": \"kdist: process 1 failed first\"}"));
}

TEST(VerdictRecord, KeepsUtf8AndReplacesBytesThatAreNot) {
  VerdictRecord r;
  r.message = "h\xc3\xa9 \xff!";
  const std::string json = EncodeVerdictRecord(r);
  EXPECT_NE(json.find("\"message\": \"h\xc3\xa9 \\ufffd!\""), std::string::npos) << json;
}

TEST(VerdictRecord, AppendsOneLinePerRecord) {
  char path[] = "/tmp/kdist-verdict-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  VerdictRecord r;
  r.event = "stop_at";
  r.step = 7;
  KDIST_EXPECT_OK(AppendVerdictRecord(path, r));
  r.event = "stop_now";
  KDIST_EXPECT_OK(AppendVerdictRecord(path, r));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), EncodeVerdictRecord({"stop_at", 0, "", 0, "", 7, -1, 0, ""}) + "\n" +
                            EncodeVerdictRecord({"stop_now", 0, "", 0, "", 7, -1, 0, ""}) + "\n");
  unlink(path);
  KDIST_EXPECT_OK(AppendVerdictRecord("", r));  // no file asked for: nothing to do
  KDIST_EXPECT_ERROR(AppendVerdictRecord("/nonexistent-dir/x", r), StatusCode::kUnavailable,
                     "cannot open /nonexistent-dir/x");
}

}  // namespace
}  // namespace kdist
