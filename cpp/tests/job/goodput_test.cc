#include "job/goodput.h"

#include <gtest/gtest.h>

#include "job/attempt_ledger.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kWall = 1'700'000'000'000;  // the job's start, Unix milliseconds

AttemptLedger Ledger(int64_t max_restarts) {
  LedgerOptions o;
  o.max_restarts = max_restarts;
  o.wall_start_unix_millis = kWall;
  return AttemptLedger(o, Nanos(0));
}

// Steps `first`..`last` reported at `first_at`..`last_at` seconds since the job started.
StepReport Steps(int64_t first, double first_at, int64_t last, double last_at) {
  StepReport r;
  r.first_step = first;
  r.first_step_unix_millis = kWall + static_cast<int64_t>(first_at * 1000);
  r.step = last;
  r.step_unix_millis = kWall + static_cast<int64_t>(last_at * 1000);
  return r;
}

JobFailure Raised() {
  JobFailure f;
  f.kind = FailureKind::kProcess;
  f.process_id = 1;
  f.exit_status = 1;
  f.what = "boom";
  return f;
}

TEST(Goodput, AFailureAndARestartFromTheStartSplitTheWallTimeByCause) {
  AttemptLedger ledger = Ledger(1);
  ledger.Begin(5000, {}, 2, seconds(0));
  ledger.NoteSteps(0, Steps(0, 4, 50, 54));  // 1 s a step from 4 s
  ASSERT_TRUE(ledger.Failed(Raised(), seconds(60)).again);
  ledger.Begin(5001, {}, 2, seconds(62));
  ledger.NoteSteps(0 + 1, Steps(0, 65, 100, 165));  // from step 0 again: 56 steps redone
  ASSERT_FALSE(ledger.Finished(seconds(170)).again);
  const Goodput g = ledger.GoodputAt(seconds(999));  // over: the job's end counts
  EXPECT_DOUBLE_EQ(g.starting_seconds, 4);
  // Attempt 0's failure found 6 s after its newest step, 2 s to the next attempt, 3 s to its
  // first step.
  EXPECT_DOUBLE_EQ(g.restarting_seconds, 6 + 2 + 3);
  // Attempt 0 reached step 50; attempt 1 redid 0..50 at 1 s a step.
  EXPECT_DOUBLE_EQ(g.recomputing_seconds, 50);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 50 + (105 - 50));
  EXPECT_DOUBLE_EQ(g.waiting_seconds, 0);
  EXPECT_DOUBLE_EQ(g.wall_seconds(), 170);
  EXPECT_NEAR(g.ratio(), 105.0 / 170.0, 1e-12);
  EXPECT_EQ(ledger.Restarts(), (std::map<std::string, int64_t>{{"failure", 1}}));
  EXPECT_EQ(ledger.NewestStep(), 100);
  EXPECT_EQ(g.Line(), "productive 105.0 s (62% of 170.0 s), starting 4.0 s, restarting 11.0 s, "
                     "recomputing 50.0 s, waiting 0.0 s");
}

TEST(Goodput, AResumeFromABackupRecomputesOnlyTheStepsPastIt) {
  AttemptLedger ledger = Ledger(1);
  ledger.Begin(5000, {}, 2, seconds(0));
  ledger.NoteSteps(0, Steps(0, 1, 20, 21));
  ASSERT_TRUE(ledger.Failed(Raised(), seconds(21)).again);
  ledger.Begin(5001, {}, 2, seconds(21));
  ledger.NoteSteps(1, Steps(15, 23, 35, 43));  // resumed at 15, 1 s a step: 5 steps redone
  const Goodput g = ledger.GoodputAt(seconds(43));
  EXPECT_DOUBLE_EQ(g.recomputing_seconds, 5);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 20 + 15);
  EXPECT_DOUBLE_EQ(g.wall_seconds(), 43);
}

TEST(Goodput, GatheringIsWaitingAndAnAttemptWithoutStepsIsRestarting) {
  AttemptLedger ledger = Ledger(0);
  ledger.Gathering(seconds(0));
  ledger.Begin(5000, {"a", "b"}, 4, seconds(10));  // 10 s gathering nodes
  ledger.NoteSteps(0, Steps(0, 12, 8, 20));
  ASSERT_TRUE(ledger.Reformed("node lost: b (host hb, at 10.0.0.2)", true, seconds(30)).again);
  ledger.Gathering(seconds(31));  // fewer than MIN left: gathering again
  EXPECT_EQ(ledger.Restarts(), (std::map<std::string, int64_t>{{"node_lost", 1}}));
  Goodput g = ledger.GoodputAt(seconds(40));
  EXPECT_DOUBLE_EQ(g.waiting_seconds, 10 + 9);
  EXPECT_DOUBLE_EQ(g.starting_seconds, 2);
  EXPECT_DOUBLE_EQ(g.productive_seconds, 8);
  EXPECT_DOUBLE_EQ(g.restarting_seconds, 10 + 1);  // its newest step at 20, lost at 30
  ledger.Begin(5001, {"a", "c"}, 4, seconds(45));
  g = ledger.GoodputAt(seconds(50));  // attempt 1 reported no step yet: restarting
  EXPECT_DOUBLE_EQ(g.waiting_seconds, 10 + 14);
  EXPECT_DOUBLE_EQ(g.restarting_seconds, 11 + 5);
  EXPECT_DOUBLE_EQ(g.wall_seconds(), 50);
}

TEST(Goodput, RestartsByCauseNamesEachEventOfAReform) {
  std::vector<AttemptRow> rows(4);
  rows[0].counted = true;
  rows[0].ended = "failed (exit 1): process 1";
  rows[1].counted = false;
  rows[1].ended = "node lost: b (host hb, at 10.0.0.2); drained: c (host hc, at 10.0.0.3)";
  rows[2].counted = false;
  rows[2].ended = "node d (host hd, at 10.0.0.4) joined";
  rows[3].ended = "finished";
  for (AttemptRow& row : rows) row.ended_seconds = 1;
  EXPECT_EQ(RestartsByCause(rows, false),
            (std::map<std::string, int64_t>{
                {"failure", 1}, {"node_lost", 1}, {"drained", 1}, {"grown", 1}}));
}

TEST(Goodput, StepsWithoutAWallClockAreNotKeptAndNothingIsNegative) {
  LedgerOptions o;  // no wall clock
  AttemptLedger ledger(o, Nanos(0));
  ledger.Begin(5000, {}, 1, seconds(0));
  ledger.NoteSteps(0, Steps(0, 1, 5, 2));
  EXPECT_EQ(ledger.rows()[0].step, -1);
  const Goodput g = ledger.GoodputAt(milliseconds(2500));
  EXPECT_DOUBLE_EQ(g.starting_seconds, 2.5);
  EXPECT_DOUBLE_EQ(g.ratio(), 0);
  EXPECT_DOUBLE_EQ(GoodputOf({}, -1, 0).ratio(), 0);
}

TEST(Goodput, AStateRestoredGoesOnCountingTheSame) {
  AttemptLedger ledger = Ledger(0);
  ledger.Gathering(seconds(0));
  ledger.Begin(5000, {"a"}, 1, seconds(3));
  ledger.NoteSteps(0, Steps(0, 4, 10, 14));
  AttemptLedger restored(ledger.options(), ledger.State());
  EXPECT_DOUBLE_EQ(restored.GoodputAt(seconds(20)).productive_seconds,
                   ledger.GoodputAt(seconds(20)).productive_seconds);
  EXPECT_DOUBLE_EQ(restored.GoodputAt(seconds(20)).waiting_seconds, 3);
}

}  // namespace
}  // namespace kdist
