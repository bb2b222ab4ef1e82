#include "job/attempt_ledger.h"

#include <gtest/gtest.h>

namespace kdist {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

JobFailure Raised(int64_t process_id, const std::string& what) {
  JobFailure f;
  f.kind = FailureKind::kProcess;
  f.process_id = process_id;
  f.host = "box";
  f.exit_status = 1;
  f.ended_how = "exit 1";
  f.what = what;
  return f;
}

AttemptLedger Ledger(int64_t max_restarts) {
  LedgerOptions o;
  o.max_restarts = max_restarts;
  return AttemptLedger(o, Nanos(0));
}

TEST(AttemptLedger, TheSameFailureTwiceEndsTheJobWithOneWhateverRestartsAreLeft) {
  AttemptLedger ledger = Ledger(3);
  ledger.Begin(5000, {}, 2, seconds(0));
  LedgerDecision first = ledger.Failed(Raised(1, "ValueError: bad"), seconds(4));
  EXPECT_TRUE(first.again);
  EXPECT_EQ(first.message, "attempt 0 failed (exit 1); starting the job again (attempt 1 of at most 4)");
  ledger.Begin(5001, {}, 2, seconds(5));
  LedgerDecision second = ledger.Failed(Raised(1, "ValueError: bad"), seconds(9));
  EXPECT_FALSE(second.again);
  EXPECT_EQ(second.exit_status, 1);
  EXPECT_NE(second.message.find("attempt 1 failed as attempt 0 did, at the same point"),
            std::string::npos)
      << second.message;
  EXPECT_EQ(ledger.counted_restarts(), 1);
}

TEST(AttemptLedger, DifferentFailuresRestartUntilNoneIsLeft) {
  AttemptLedger ledger = Ledger(2);
  for (int i = 0; i < 2; ++i) {
    ledger.Begin(5000 + i, {}, 2, seconds(10 * i));
    EXPECT_TRUE(ledger.Failed(Raised(1, "error " + std::to_string(i)), seconds(10 * i + 5)).again);
  }
  ledger.Begin(5002, {}, 2, seconds(20));
  LedgerDecision last = ledger.Failed(Raised(1, "error 2"), seconds(25));
  EXPECT_FALSE(last.again);
  EXPECT_EQ(last.exit_status, 1);
  EXPECT_NE(last.message.find("no restart is left (--max-restarts 2)"), std::string::npos);
  EXPECT_EQ(ledger.rows().size(), 3u);
}

TEST(AttemptLedger, AReformIsNotCountedAndForgetsThePreviousFailure) {
  AttemptLedger ledger = Ledger(1);
  ledger.Begin(5000, {"a", "b", "c"}, 6, seconds(0));
  ASSERT_TRUE(ledger.Failed(Raised(1, "boom"), seconds(1)).again);
  ledger.Begin(5001, {"a", "b", "c"}, 6, seconds(2));
  LedgerDecision reform = ledger.Reformed("node lost: node c", false, seconds(3));
  EXPECT_TRUE(reform.again);
  EXPECT_FALSE(ledger.rows().back().counted);
  ledger.Begin(5002, {"a", "b"}, 4, seconds(4));
  // The same failure as attempt 0's, but on another shape: not "the same point twice";
  // and no restart is left (attempt 0's counted, the re-form did not).
  LedgerDecision after = ledger.Failed(Raised(1, "boom"), seconds(5));
  EXPECT_FALSE(after.again);
  EXPECT_NE(after.message.find("no restart is left"), std::string::npos) << after.message;
  EXPECT_EQ(ledger.counted_restarts(), 1);
}

TEST(AttemptLedger, TheThrashGuardCountsReformsWithinItsWindow) {
  AttemptLedger ledger = Ledger(0);  // defaults: more than 4 within 10 minutes
  for (int i = 0; i < 4; ++i) {
    ledger.Begin(5000 + i, {"a", "b"}, 4, minutes(i));
    EXPECT_TRUE(ledger.Reformed("node lost: node b", false, minutes(i) + seconds(30)).again);
  }
  ledger.Begin(5004, {"a", "b"}, 4, minutes(4));
  LedgerDecision fifth = ledger.Reformed("node lost: node b", false, minutes(4) + seconds(30));
  EXPECT_FALSE(fifth.again);
  EXPECT_EQ(fifth.exit_status, 1);
  EXPECT_NE(fifth.message.find("the job re-formed 5 times within 600 s without progress (more than --max-reforms 4"),
            std::string::npos)
      << fifth.message;
}

TEST(AttemptLedger, ReformsOutsideTheWindowAreForgotten) {
  AttemptLedger ledger = Ledger(0);
  for (int i = 0; i < 10; ++i) {
    ledger.Begin(5000 + i, {"a", "b"}, 4, minutes(3 * i));
    EXPECT_TRUE(ledger.Reformed("node c joined", false, minutes(3 * i) + seconds(1)).again) << i;
  }
}

TEST(AttemptLedger, TheTableHasOneRowPerAttempt) {
  AttemptLedger ledger = Ledger(1);
  ledger.Begin(5000, {}, 2, seconds(0));
  (void)ledger.Failed(Raised(1, "boom"), seconds(2));
  ledger.Begin(5001, {}, 2, seconds(3));
  (void)ledger.Finished(seconds(7));
  const std::string table = ledger.Table();
  EXPECT_EQ(table,
            "attempt  port  status  start  end    nodes  processes  counted  ended\n"
            "0        5000  1       0.0 s  2.0 s  -      2          yes      failed (exit 1): process 1 (host box): boom\n"
            "1        5001  0       3.0 s  7.0 s  -      2          yes      finished\n");
}

TEST(AttemptLedger, AnEndTheStarterDecidedIsFinal) {
  AttemptLedger ledger = Ledger(5);
  ledger.Begin(5000, {}, 2, seconds(0));
  LedgerDecision end = ledger.Ended("stopped by the launcher's SIGTERM", 143, seconds(1));
  EXPECT_FALSE(end.again);
  EXPECT_EQ(end.exit_status, 143);
  EXPECT_EQ(ledger.rows().back().ended, "stopped by the launcher's SIGTERM");
}

TEST(AttemptLedger, RowsCarryWallClockTimesWhenTheStartIsKnown) {
  LedgerOptions o;
  o.wall_start_unix_millis = 1'700'000'000'000;
  AttemptLedger ledger(o, seconds(100));
  ledger.Begin(5000, {}, 2, seconds(102));
  (void)ledger.Finished(seconds(105));
  const AttemptRow& row = ledger.rows().back();
  EXPECT_EQ(row.started_unix_millis, 1'700'000'002'000);
  EXPECT_EQ(row.ended_unix_millis, 1'700'000'005'000);
  EXPECT_NE(ledger.Table().find(WallClockTime(row.started_unix_millis) + " (2.0 s)"),
            std::string::npos)
      << ledger.Table();
}


TEST(AttemptLedger, AReformAfterProgressIsNeverCountedByTheGuard) {
  // Spot capacity: a machine lost and one back every few minutes, and every attempt saved
  // backups between them: twenty re-forms within ten minutes, and the job goes on.
  AttemptLedger ledger = Ledger(0);
  for (int i = 0; i < 20; ++i) {
    ledger.Begin(5000 + i, {"a", "b"}, 4, seconds(30 * i));
    const LedgerDecision next =
        ledger.Reformed(i % 2 == 0 ? "node lost: node b" : "node b joined", true,
                        seconds(30 * i + 20));
    EXPECT_TRUE(next.again) << i << ": " << next.message;
  }
}

TEST(AttemptLedger, OnlyReformsWithoutProgressCountAndTheEndSaysSo) {
  AttemptLedger ledger = Ledger(0);
  int64_t port = 5000;
  // Progress between the re-forms without progress resets nothing: the guard counts
  // the re-forms of attempts that got nowhere, within the window.
  for (int i = 0; i < 4; ++i) {
    ledger.Begin(port++, {"a", "b"}, 4, minutes(i));
    EXPECT_TRUE(ledger.Reformed("node lost: node b", false, minutes(i) + seconds(10)).again);
    ledger.Begin(port++, {"a"}, 2, minutes(i) + seconds(20));
    EXPECT_TRUE(ledger.Reformed("node b joined", true, minutes(i) + seconds(40)).again);
  }
  ledger.Begin(port++, {"a", "b"}, 4, minutes(5));
  const LedgerDecision fifth = ledger.Reformed("node lost: node b", false, minutes(5) + seconds(5));
  EXPECT_FALSE(fifth.again);
  EXPECT_EQ(fifth.exit_status, 1);
  EXPECT_NE(fifth.message.find("re-formed 5 times within 600 s without progress"),
            std::string::npos)
      << fifth.message;
  EXPECT_NE(fifth.message.find("none of them after a backup saved or a step past its start"),
            std::string::npos)
      << fifth.message;
  EXPECT_EQ(fifth.message.find("joined"), std::string::npos) << fifth.message;
}

TEST(AttemptLedger, TheGuardsNumbersAreSettings) {
  LedgerOptions options;
  options.max_reforms = 1;
  options.reform_window = seconds(60);
  AttemptLedger ledger(options, Nanos(0));
  ledger.Begin(5000, {"a", "b"}, 4, seconds(0));
  EXPECT_TRUE(ledger.Reformed("node lost: node b", false, seconds(1)).again);
  ledger.Begin(5001, {"a"}, 2, seconds(2));
  // The first one is out of the 60 s window by now: only one within it.
  EXPECT_TRUE(ledger.Reformed("node lost: node b", false, seconds(70)).again);
  ledger.Begin(5002, {"a"}, 2, seconds(71));
  const LedgerDecision second = ledger.Reformed("node lost: node b", false, seconds(80));
  EXPECT_FALSE(second.again);
  EXPECT_NE(second.message.find("more than --max-reforms 1 within --reform-window 60 s"),
            std::string::npos)
      << second.message;
}

}  // namespace
}  // namespace kdist
