#include "liveness_book.h"

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

}  // namespace
}  // namespace kdist
