#include "liveness/barrier_book.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

BarrierArrival At(int64_t id, int64_t index, const std::string& name, int deadline_s = 30) {
  return BarrierArrival{id, index, name, seconds(deadline_s)};
}

TEST(BarrierBook, ReleasedWhenEveryRunningProcessArrived) {
  BarrierBook book({"a", "b", "c"});
  EXPECT_TRUE(book.OnArrive(At(0, 0, "save"), {0, 1, 2}, seconds(1)).empty());
  EXPECT_TRUE(book.OnArrive(At(2, 0, "save"), {0, 1, 2}, seconds(2)).empty());
  auto out = book.OnArrive(At(1, 0, "save"), {0, 1, 2}, seconds(3));
  ASSERT_EQ(out.size(), size_t{1});
  EXPECT_EQ(out[0].kind, BarrierVerdict::Kind::kReleased);
  EXPECT_EQ(out[0].to, std::vector<int64_t>({0, 1, 2}));
  EXPECT_FALSE(book.NextDeadline().has_value());
}

TEST(BarrierBook, TheEarliestDeadlineFailsItNamingWhoDidNotArrive) {
  BarrierBook book({"node-0", "node-1", "node-2", "node-3"});
  book.OnArrive(At(0, 0, "save", 30), {0, 1, 2, 3}, seconds(0));
  book.OnArrive(At(2, 0, "save", 12), {0, 1, 2, 3}, seconds(2));
  EXPECT_EQ(*book.NextDeadline(), seconds(12));
  EXPECT_TRUE(book.OnTime(seconds(11), {0, 1, 2, 3}).empty());
  auto out = book.OnTime(seconds(12), {0, 1, 2, 3});
  ASSERT_EQ(out.size(), size_t{1});
  EXPECT_EQ(out[0].kind, BarrierVerdict::Kind::kTimedOut);
  EXPECT_EQ(out[0].to, std::vector<int64_t>({0, 2}));
  EXPECT_EQ(out[0].message,
            std::string("barrier \"save\" timed out after 12 s: process 1 on host node-1; "
                        "process 3 on host node-3 did not arrive; processes [0, 2] waited"));
  // A late arrival hears the same failure.
  auto late = book.OnArrive(At(1, 0, "save"), {0, 1, 2, 3}, seconds(20));
  ASSERT_EQ(late.size(), size_t{1});
  EXPECT_EQ(late[0].kind, BarrierVerdict::Kind::kTimedOut);
  EXPECT_EQ(late[0].to, std::vector<int64_t>({1}));
}

TEST(BarrierBook, DifferentNamesAtOneBarrierFailNamingBoth) {
  BarrierBook book;
  book.OnArrive(At(0, 0, "save"), {0, 1, 2}, seconds(0));
  book.OnArrive(At(2, 0, "save"), {0, 1, 2}, seconds(0));
  auto out = book.OnArrive(At(1, 0, "eval"), {0, 1, 2}, seconds(0));
  ASSERT_EQ(out.size(), size_t{1});
  EXPECT_EQ(out[0].kind, BarrierVerdict::Kind::kMismatch);
  EXPECT_EQ(out[0].to, std::vector<int64_t>({0, 1, 2}));
  EXPECT_NE(out[0].message.find("process 1 at \"eval\"; processes [0, 2] at \"save\""),
            std::string::npos)
      << out[0].message;
}

TEST(BarrierBook, BarriersAreMatchedByTheirCallNumber) {
  BarrierBook book;
  book.OnArrive(At(0, 0, "a"), {0, 1}, seconds(0));
  EXPECT_TRUE(book.OnArrive(At(0, 1, "b"), {0, 1}, seconds(0)).empty());  // not yet
  auto first = book.OnArrive(At(1, 0, "a"), {0, 1}, seconds(0));
  ASSERT_EQ(first.size(), size_t{1});
  EXPECT_EQ(first[0].index, int64_t{0});
  auto second = book.OnArrive(At(1, 1, "b"), {0, 1}, seconds(0));
  ASSERT_EQ(second.size(), size_t{1});
  EXPECT_EQ(second[0].index, int64_t{1});
}

TEST(BarrierBook, AProcessThatFinishesAbandonsTheBarriersItDidNotReach) {
  BarrierBook book;
  book.OnArrive(At(0, 0, "x"), {0, 1, 2}, seconds(0));
  auto out = book.OnGone(2, "finished", {0, 1});
  ASSERT_EQ(out.size(), size_t{1});
  EXPECT_EQ(out[0].kind, BarrierVerdict::Kind::kAbandoned);
  EXPECT_NE(out[0].message.find("process 2 finished without reaching it"), std::string::npos);
}

TEST(BarrierBook, AProcessThatFailsIsNotSaidToHaveFinished) {
  BarrierBook book;
  book.OnArrive(At(0, 0, "x"), {0, 1}, seconds(0));
  auto out = book.OnGone(1, "failed", {0});
  ASSERT_EQ(out.size(), size_t{1});
  EXPECT_NE(out[0].message.find("process 1 failed without reaching it"), std::string::npos);
}

}  // namespace
}  // namespace kdist
