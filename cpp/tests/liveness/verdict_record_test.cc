#include "liveness/verdict_record.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "liveness/liveness_book.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(VerdictRecord, EncodesOneJsonObject) {
  VerdictRecord r;
  r.event = VerdictEvent::kPeerFailed;
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
  r.event = VerdictEvent::kStopAt;
  r.step = 7;
  KDIST_EXPECT_OK(AppendVerdictRecord(path, r));
  r.event = VerdictEvent::kStopNow;
  KDIST_EXPECT_OK(AppendVerdictRecord(path, r));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), EncodeVerdictRecord({VerdictEvent::kStopAt, 0, "", 0, "", 7, -1, 0, ""}) + "\n" +
                            EncodeVerdictRecord({VerdictEvent::kStopNow, 0, "", 0, "", 7, -1, 0, ""}) + "\n");
  unlink(path);
  KDIST_EXPECT_OK(AppendVerdictRecord("", r));  // no file asked for: nothing to do
  KDIST_EXPECT_ERROR(AppendVerdictRecord("/nonexistent-dir/x", r), StatusCode::kUnavailable,
                     "cannot open /nonexistent-dir/x");
}

TEST(VerdictRecord, EveryEventHasItsOneName) {
  std::vector<std::string> names;
  for (VerdictEvent event : kAllVerdictEvents) names.push_back(VerdictEventName(event));
  EXPECT_EQ(names, (std::vector<std::string>{"failed", "peer_failed", "died", "unreachable",
                                             "stop_now", "stop_at", "stalled"}));
}

TEST(VerdictRecord, TheNoticesThatEndAJobAreVerdicts) {
  EXPECT_EQ(VerdictEventOf(LiveKind::kFailed), VerdictEvent::kPeerFailed);
  EXPECT_EQ(VerdictEventOf(LiveKind::kDied), VerdictEvent::kDied);
  EXPECT_EQ(VerdictEventOf(LiveKind::kUnreachable), VerdictEvent::kUnreachable);
  EXPECT_EQ(VerdictEventOf(LiveKind::kStopNow), VerdictEvent::kStopNow);
  EXPECT_EQ(VerdictEventOf(LiveKind::kStopAt), VerdictEvent::kStopAt);
  EXPECT_EQ(VerdictEventOf(LiveKind::kJobStalled), VerdictEvent::kStalled);
  for (LiveKind kind : {LiveKind::kAdmitted, LiveKind::kFinished, LiveKind::kAllDone,
                        LiveKind::kStopQuery, LiveKind::kBarrierDone}) {
    EXPECT_FALSE(VerdictEventOf(kind).has_value()) << LiveKindName(kind);
    EXPECT_EQ(EndsTheJob(kind), false) << LiveKindName(kind);
  }
  for (LiveKind kind : {LiveKind::kFailed, LiveKind::kDied, LiveKind::kUnreachable,
                        LiveKind::kStopNow, LiveKind::kJobStalled}) {
    EXPECT_TRUE(EndsTheJob(kind) && VerdictEventOf(kind)) << LiveKindName(kind);
  }
}

}  // namespace
}  // namespace kdist
