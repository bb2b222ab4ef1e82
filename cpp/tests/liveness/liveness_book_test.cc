#include "liveness/liveness_book.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "testing/liveness_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::JoinOf;
using testing::Member;
using testing::Self;

TEST(LivenessBook, BookAdmitsOnlyThisJobsMembersOnce) {
  LivenessBook book(3, Member(0));
  KDIST_EXPECT_ERROR(book.Admit(JoinOf(1, "other"), "nonce"), StatusCode::kFailedPrecondition,
                     "nonce");
  KDIST_EXPECT_ERROR(book.Admit(JoinOf(3), "nonce"), StatusCode::kInvalidArgument,
                     "outside [1, 3)");
  KDIST_EXPECT_ERROR(book.Admit(JoinOf(0), "nonce"), StatusCode::kInvalidArgument, "outside");
  KDIST_EXPECT_OK(book.Admit(JoinOf(1), "nonce"));
  KDIST_EXPECT_ERROR(book.Admit(JoinOf(1), "nonce"), StatusCode::kFailedPrecondition,
                     "already watched");
}

TEST(LivenessBook, BookNamesTheFirstFailureOnly) {
  LivenessBook book(3, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce"));
  KDIST_ASSERT_OK(book.Admit(JoinOf(2), "nonce"));
  std::optional<LiveNotice> first = book.OnNotice(2, Self(LiveKind::kFailed, "ValueError: x"));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->process_id, int64_t{2});
  EXPECT_EQ(first->host, std::string("node-2"));
  EXPECT_EQ(first->pid, int64_t{4002});
  EXPECT_FALSE(book.OnNotice(1, Self(LiveKind::kFailed, "later")).has_value());
  EXPECT_FALSE(book.OnClosed(1).has_value());
  EXPECT_FALSE(book.OnClosed(2).has_value());  // failed, then closed: nothing new
  EXPECT_TRUE(book.Waiting().empty());
  EXPECT_EQ(book.first_failure()->message, std::string("ValueError: x"));
}

TEST(LivenessBook, BookCallsAClosedRunningProcessDead) {
  LivenessBook book(2, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce"));
  std::optional<LiveNotice> died = book.OnClosed(1);
  ASSERT_TRUE(died.has_value());
  EXPECT_TRUE(died->kind == LiveKind::kDied);
  EXPECT_EQ(died->message, std::string("its connection closed without a finish message"));
  EXPECT_FALSE(book.OnClosed(1).has_value());
}

TEST(LivenessBook, BookSaysHowEachProcessEnded) {
  LivenessBook book(5, Member(0));
  for (int64_t id : {1, 2, 3, 4}) KDIST_ASSERT_OK(book.Admit(JoinOf(id), "nonce"));
  book.OnNotice(1, Self(LiveKind::kFinished));
  book.OnNotice(2, Self(LiveKind::kLeft));
  book.OnNotice(3, Self(LiveKind::kFailed, "ValueError: x"));
  book.OnClosed(4);
  EXPECT_STREQ(book.HowEnded(1), "finished");
  EXPECT_STREQ(book.HowEnded(2), "left");
  EXPECT_STREQ(book.HowEnded(3), "failed");
  EXPECT_STREQ(book.HowEnded(4), "died");
  EXPECT_STREQ(book.HowEnded(0), "ended");  // running
  EXPECT_STREQ(book.HowEnded(9), "ended");  // unknown
}

TEST(LivenessBook, BookEndsWhenEveryProcessFinished) {
  LivenessBook book(3, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce"));
  KDIST_ASSERT_OK(book.Admit(JoinOf(2), "nonce"));
  EXPECT_FALSE(book.OnNotice(1, Self(LiveKind::kLeft)).has_value());
  EXPECT_FALSE(book.OnClosed(1).has_value());  // it said it leaves: not a death
  EXPECT_FALSE(book.OnNotice(0, Self(LiveKind::kFinished)).has_value());
  std::vector<LiveMember> waiting = book.Waiting();
  ASSERT_EQ(waiting.size(), size_t{1});
  EXPECT_EQ(waiting[0].process_id, int64_t{2});
  std::optional<LiveNotice> done = book.OnNotice(2, Self(LiveKind::kFinished));
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->kind == LiveKind::kAllDone);
  EXPECT_FALSE(done->barrier);  // process 1 left without JAX's barrier
  EXPECT_FALSE(book.OnClosed(2).has_value());  // after the end: normal
  EXPECT_TRUE(book.all_done().has_value());
}

TEST(LivenessBook, BookWaitsForProcessesThatHaveNotJoinedUntilJoinsClose) {
  // Process 0 may finish before a process has joined (it joins while JAX
  // starts): the job is not done, and a late join is still admitted.
  LivenessBook book(3, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce"));
  EXPECT_FALSE(book.OnNotice(0, Self(LiveKind::kFinished)).has_value());
  EXPECT_FALSE(book.OnNotice(1, Self(LiveKind::kFinished)).has_value());
  EXPECT_FALSE(book.all_done().has_value());
  EXPECT_EQ(book.NotJoined(), std::vector<int64_t>{2});
  KDIST_ASSERT_OK(book.Admit(JoinOf(2), "nonce"));
  EXPECT_TRUE(book.NotJoined().empty());
  std::optional<LiveNotice> done = book.OnNotice(2, Self(LiveKind::kFinished));
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->kind == LiveKind::kAllDone);
  EXPECT_TRUE(done->barrier);
}

TEST(LivenessBook, BookClosingJoinsEndsTheWaitForProcessesThatNeverJoined) {
  LivenessBook book(4, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(2), "nonce"));
  EXPECT_FALSE(book.OnNotice(2, Self(LiveKind::kFinished)).has_value());
  EXPECT_FALSE(book.OnNotice(0, Self(LiveKind::kFinished)).has_value());
  EXPECT_EQ(book.NotJoined(), (std::vector<int64_t>{1, 3}));
  std::optional<LiveNotice> done = book.CloseJoins();
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->kind == LiveKind::kAllDone);
  EXPECT_TRUE(book.NotJoined().empty());
  EXPECT_FALSE(book.CloseJoins().has_value());  // once
  KDIST_EXPECT_ERROR(book.Admit(JoinOf(1), "nonce"), StatusCode::kFailedPrecondition,
                     "already ended");
}

TEST(LivenessBook, BookClosingJoinsWithARunningProcessWaitsForIt) {
  LivenessBook book(3, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce"));
  EXPECT_FALSE(book.OnNotice(0, Self(LiveKind::kFinished)).has_value());
  EXPECT_FALSE(book.CloseJoins().has_value());
  std::optional<LiveNotice> done = book.OnNotice(1, Self(LiveKind::kFinished));
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->kind == LiveKind::kAllDone);
}

TEST(LivenessBook, BookFinishedThenClosedBeforeTheEndIsADeath) {
  LivenessBook book(2, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce"));
  EXPECT_FALSE(book.OnNotice(1, Self(LiveKind::kFinished)).has_value());
  std::optional<LiveNotice> died = book.OnClosed(1);
  ASSERT_TRUE(died.has_value());
  EXPECT_TRUE(died->message.find("said it finished") != std::string::npos);
}

TEST(LivenessBook, DecisionsFollowThePolicy) {
  LiveNotice failed{LiveKind::kFailed, 1, "node-1", 42, "RuntimeError: boom", true};
  EXPECT_TRUE(DecideOnNotice(failed, PeerFailurePolicy::kExit, false) ==
                    LiveAction::kExitFailure);
  EXPECT_TRUE(DecideOnNotice(failed, PeerFailurePolicy::kIgnore, false) ==
                    LiveAction::kReport);
  LiveNotice done{LiveKind::kAllDone, 0, "", 0, "", false};
  EXPECT_TRUE(DecideOnNotice(done, PeerFailurePolicy::kExit, true) ==
                    LiveAction::kExitSuccess);
  EXPECT_TRUE(DecideOnNotice(done, PeerFailurePolicy::kExit, false) == LiveAction::kNone);
  done.barrier = true;
  EXPECT_TRUE(DecideOnNotice(done, PeerFailurePolicy::kExit, true) == LiveAction::kNone);
  EXPECT_EQ(DescribeFailure(failed, 0, LiveAction::kExitFailure),
                  std::string("kdist: process 1 (host node-1, pid 42) failed first: "
                              "RuntimeError: boom; stopping process 0"));
  LiveNotice died{LiveKind::kDied, 1, "node-1", 42, "killed by SIGKILL", true};
  EXPECT_EQ(DescribeFailure(died, 2, LiveAction::kExitFailure),
                  std::string("kdist: process 1 (host node-1, pid 42) died (killed by SIGKILL) "
                              "while the job was running; stopping process 2"));
}

// 20:01:07 on the first day of the Unix epoch, in milliseconds.
constexpr int64_t kAt200107 = (20 * 3600 + 67) * int64_t{1000};

// The lines give wall-clock times in local time: these tests read them in UTC.
void UseUtc() {
  setenv("TZ", "UTC", 1);
  tzset();
}

TEST(LivenessBook, ATimedOutConnectionIsUnreachableAndAClosedOneIsADeath) {
  EXPECT_TRUE(ClassifyConnectionEnd(ETIMEDOUT) == ConnectionLoss::kUnreachable);
  EXPECT_TRUE(ClassifyConnectionEnd(EHOSTUNREACH) == ConnectionLoss::kUnreachable);
  EXPECT_TRUE(ClassifyConnectionEnd(ENETUNREACH) == ConnectionLoss::kUnreachable);
  EXPECT_TRUE(ClassifyConnectionEnd(0) == ConnectionLoss::kClosed);  // end of file
  EXPECT_TRUE(ClassifyConnectionEnd(ECONNRESET) == ConnectionLoss::kClosed);
  EXPECT_TRUE(ClassifyConnectionEnd(EPIPE) == ConnectionLoss::kClosed);
}

TEST(LivenessBook, BookCallsATimedOutProcessUnreachableSinceTheWindowStart) {
  LivenessBook book(3, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce", "10.0.0.2"));
  KDIST_ASSERT_OK(book.Admit(JoinOf(2), "nonce", "10.0.0.3"));
  const ConnectionEnd end{ETIMEDOUT, kAt200107 + 20000, std::chrono::seconds(20)};
  std::optional<LiveNotice> lost = book.OnClosed(2, end);
  ASSERT_TRUE(lost.has_value());
  EXPECT_TRUE(lost->kind == LiveKind::kUnreachable);
  EXPECT_EQ(lost->process_id, int64_t{2});
  EXPECT_EQ(lost->host, std::string("node-2"));
  EXPECT_EQ(lost->pid, int64_t{4002});
  EXPECT_EQ(lost->address, std::string("10.0.0.3"));
  EXPECT_EQ(lost->millis, int64_t{20000});
  EXPECT_EQ(lost->since_unix_millis, kAt200107);
  EXPECT_EQ(lost->message, std::string("no answer from its host for 20 s (its connection "
                                       "timed out)"));
  EXPECT_TRUE(book.first_failure()->kind == LiveKind::kUnreachable);
  // Process 1 closing afterwards (it leaves with the job) adds nothing.
  EXPECT_FALSE(book.OnClosed(1, ConnectionEnd{}).has_value());
  EXPECT_FALSE(book.OnClosed(2, end).has_value());
}

TEST(LivenessBook, BookStillCallsAResetProcessDead) {
  LivenessBook book(2, Member(0));
  KDIST_ASSERT_OK(book.Admit(JoinOf(1), "nonce", "10.0.0.2"));
  std::optional<LiveNotice> died =
      book.OnClosed(1, ConnectionEnd{ECONNRESET, kAt200107, std::chrono::seconds(20)});
  ASSERT_TRUE(died.has_value());
  EXPECT_TRUE(died->kind == LiveKind::kDied);
  EXPECT_EQ(died->message, std::string("its connection closed without a finish message"));
}

TEST(LivenessBook, LosingTheCoordinatorsConnectionNamesProcessZero) {
  const LiveMember coordinator{0, "node-0", 4000, "10.0.0.1"};
  const ConnectionEnd timed_out{ETIMEDOUT, kAt200107 + 6000, std::chrono::seconds(6)};
  const LiveNotice lost = LostConnectionNotice(coordinator, timed_out, "closed");
  EXPECT_TRUE(lost.kind == LiveKind::kUnreachable);
  EXPECT_EQ(lost.process_id, int64_t{0});
  EXPECT_EQ(lost.address, std::string("10.0.0.1"));
  EXPECT_EQ(lost.since_unix_millis, kAt200107);
  const LiveNotice closed = LostConnectionNotice(coordinator, ConnectionEnd{}, "closed");
  EXPECT_TRUE(closed.kind == LiveKind::kDied);
  EXPECT_EQ(closed.message, std::string("closed"));
}

TEST(LivenessBook, AnUnreachableProcessEndsTheJobUnderThePolicy) {
  LiveNotice lost{LiveKind::kUnreachable, 2, "node-2", 977, "", true};
  EXPECT_TRUE(DecideOnNotice(lost, PeerFailurePolicy::kExit, false) == LiveAction::kExitFailure);
  EXPECT_TRUE(DecideOnNotice(lost, PeerFailurePolicy::kIgnore, false) == LiveAction::kReport);
  EXPECT_TRUE(EndsTheJob(LiveKind::kUnreachable));
  EXPECT_TRUE(EndsTheJob(LiveKind::kDied));
  EXPECT_FALSE(EndsTheJob(LiveKind::kStopAt));
}

TEST(LivenessBook, TheUnreachableLineNamesTheProcessItsHostAndSinceWhen) {
  UseUtc();
  LiveNotice lost{LiveKind::kUnreachable, 2, "node-2", 977, "", true};
  lost.address = "10.0.0.3";
  lost.millis = 20000;
  lost.since_unix_millis = kAt200107;
  EXPECT_EQ(DescribeFailure(lost, 0, LiveAction::kExitFailure),
            std::string("kdist: process 2 (host node-2, pid 977, address 10.0.0.3) is "
                        "unreachable since 20:01:07 (no answer from its host for 20 s; "
                        "KDIST_UNREACHABLE_TIMEOUT): its host lost power or its network, or a "
                        "firewall drops its traffic; the process was not seen to die "
                        "(unreachable, not dead) and may still be running there; stopping "
                        "process 0"));
}

TEST(LivenessBook, TheProcessCutOffSaysItLostTheCoordinator) {
  UseUtc();
  LiveNotice lost{LiveKind::kUnreachable, 0, "node-0", 4000, "", true};
  lost.address = "10.0.0.1";
  lost.millis = 20000;
  lost.since_unix_millis = kAt200107;
  EXPECT_EQ(DescribeFailure(lost, 2, LiveAction::kExitFailure),
            std::string("kdist: process 2 lost the coordinator: process 0 (host node-0, pid "
                        "4000, address 10.0.0.1) is unreachable since 20:01:07 (no answer from "
                        "its host for 20 s; KDIST_UNREACHABLE_TIMEOUT): this host or the "
                        "coordinator's lost power or its network, or a firewall drops the "
                        "traffic between them; process 0 was not seen to die; stopping "
                        "process 2"));
}

}  // namespace
}  // namespace kdist
