#include "liveness/stall_book.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

ProgressReport Report(int64_t id, int64_t step, int idle_s, bool armed = true) {
  return ProgressReport{id, "node-" + std::to_string(id), 4240 + id, armed, step, seconds(idle_s)};
}

TEST(StallBook, TheProcessBehindIsNamedWithThoseAhead) {
  StallBook book(seconds(600));
  ASSERT_TRUE(book.OnStalled(1, {0, 1, 2, 3}));
  EXPECT_FALSE(book.OnStalled(2, {0, 1, 2, 3}));  // one round
  EXPECT_FALSE(book.OnReport(Report(0, 1043, 599)).has_value());
  EXPECT_FALSE(book.OnReport(Report(2, 1043, 599)).has_value());
  EXPECT_FALSE(book.OnReport(Report(3, 1043, 598)).has_value());
  auto verdict = book.OnReport(Report(1, 1042, 600));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->stuck, std::vector<int64_t>({1}));
  EXPECT_EQ(verdict->message,
            std::string("process 1 (host node-1, pid 4241) made no progress for 600 s at step "
                        "1042; processes [0, 2-3] reached step 1043"));
}

TEST(StallBook, AtOneStepTheIdleOnesAreNamed) {
  StallBook book(seconds(10));
  ASSERT_TRUE(book.OnStalled(0, {0, 1}));
  book.OnReport(Report(0, 5, 11));
  auto verdict = book.OnReport(Report(1, 5, 3));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->stuck, std::vector<int64_t>({0}));
  EXPECT_EQ(verdict->message,
            std::string("process 0 (host node-0, pid 4240) made no progress for 11 s at step 5"));
}

TEST(StallBook, ProcessesThatNeverReportedAreNotJudged) {
  StallBook book(seconds(10));
  ASSERT_TRUE(book.OnStalled(1, {0, 1}));
  book.OnReport(Report(0, -1, 500, /*armed=*/false));
  auto verdict = book.OnReport(Report(1, 7, 12));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->stuck, std::vector<int64_t>({1}));
}

TEST(StallBook, MissingAnswersDecideWithWhatCame) {
  StallBook book(seconds(10));
  ASSERT_TRUE(book.OnStalled(1, {0, 1, 2}));
  book.OnReport(Report(1, 3, 15));
  EXPECT_FALSE(book.OnGone(2).has_value());
  auto verdict = book.Decide();
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->stuck, std::vector<int64_t>({1}));
  EXPECT_FALSE(book.Decide().has_value());
}

}  // namespace
}  // namespace kdist
