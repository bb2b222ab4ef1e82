// The rendezvous book's two guards on a job that re-forms, at the numbers users get:
// a re-form (a node lost, drained or grown) never spends a --max-restarts restart, and
// the thrash guard's documented defaults (LedgerOptions: more than 4 re-forms within
// 10 minutes end the job with status 1). Only the book's public API, on its manual clock.
#include <gtest/gtest.h>

#include "rendezvous/rendezvous_book.h"
#include "testing/rendezvous_helpers.h"

namespace kdist {
namespace {

using std::chrono::seconds;
using testing::Agent;
using testing::Join;
using testing::MakeAgent;
using testing::OfKind;
using testing::Options;
using testing::Raised;

// A report of how `attempt` ended on `a`'s node: its status and, when it began there, its
// failure (the shared helper's, with a fresh coordinator port per connection).
std::vector<NodeMessage> Report(RendezvousBook& book, Agent& a, int64_t attempt, int64_t status,
                                const JobFailure& failure, Nanos now) {
  return testing::Report(book, a, attempt, status, failure,
                         41000 + static_cast<int64_t>(a.connection), now);
}

std::vector<NodeMessage> Report(RendezvousBook& book, Agent& a, int64_t attempt, int64_t status,
                                Nanos now) {
  return Report(book, a, attempt, status, JobFailure{}, now);
}

// --- a re-form never spends a restart (--max-restarts) ---------------------------------------

// Three nodes formed at MAX with --max-restarts 1: a (on the rendezvous's machine), b, c.
struct ThreeNodesOneRestart {
  ThreeNodesOneRestart() : book(WithOneRestart(), Nanos(0)) {
    (void)Join(book, a, seconds(1));
    (void)Join(book, b, seconds(2));
    EXPECT_EQ(OfKind(Join(book, c, seconds(3)), NodeReplyKind::kRoster).size(), 3u);
  }
  static RendezvousOptions WithOneRestart() {
    RendezvousOptions options = Options(2, 3);
    options.ledger.max_restarts = 1;
    return options;
  }
  RendezvousBook book;
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  Agent c = MakeAgent(3, "c", "10.0.0.3");
};

// After a re-form into attempt 1 (a and b, the two nodes left running): a program's
// failure there still has the one restart (attempt 2 runs on the same nodes), and a
// different failure in attempt 2 then ends the job, naming --max-restarts 1.
void ExpectTheOneRestartIsLeftAfterTheReform(ThreeNodesOneRestart& job, const char* cause) {
  ASSERT_EQ(job.book.attempt(), 1);
  ASSERT_EQ(job.book.Attempts().size(), 2u);
  EXPECT_FALSE(job.book.Attempts()[0].counted);
  EXPECT_NE(job.book.Attempts()[0].ended.find(cause), std::string::npos)
      << job.book.AttemptTable();
  EXPECT_TRUE(Report(job.book, job.b, 1, 3, Raised(2, "b", "KeyError: 'x'", 3), seconds(100))
                  .empty());
  const auto rosters =
      OfKind(Report(job.book, job.a, 1, 1, seconds(101)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u) << "a failure after a re-form with --max-restarts 1 must "
                                   "restart (attempt 2): the re-form spent the restart\n"
                                << job.book.AttemptTable();
  EXPECT_EQ(rosters[0].reply.attempt, 2);
  EXPECT_EQ(job.book.phase(), RendezvousBook::Phase::kRunning);
  ASSERT_EQ(job.book.Attempts().size(), 3u);
  EXPECT_TRUE(job.book.Attempts()[1].counted);
  // The restart is spent now: the next failure (another one) ends the job with its status.
  (void)Report(job.book, job.b, 2, 4, Raised(2, "b", "OSError: disk", 4), seconds(200));
  const auto ends = OfKind(Report(job.book, job.a, 2, 1, seconds(201)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].reply.exit_status, 4);
  EXPECT_NE(ends[0].reply.message.find("no restart is left (--max-restarts 1)"),
            std::string::npos)
      << ends[0].reply.message;
  EXPECT_EQ(job.book.exit_status(), 4);
}

TEST(RendezvousBookGuard, AFailureAfterALostNodesReformStillHasItsRestart) {
  ThreeNodesOneRestart job;
  EXPECT_TRUE(job.book.Leave(job.c.connection, seconds(10)).empty());
  (void)Report(job.book, job.b, 0, 1, seconds(11));
  ASSERT_EQ(
      OfKind(Report(job.book, job.a, 0, 1, seconds(12)), NodeReplyKind::kRoster).size(), 2u);
  ExpectTheOneRestartIsLeftAfterTheReform(job, "node lost: node c");
}

TEST(RendezvousBookGuard, AFailureAfterADrainedNodesReformStillHasItsRestart) {
  ThreeNodesOneRestart job;
  ASSERT_EQ(OfKind(testing::DrainNotice(job.book, job.c, 0, seconds(10)), NodeReplyKind::kStop)
                .size(),
            3u);
  (void)Report(job.book, job.c, 0, 143, seconds(11));
  (void)Report(job.book, job.b, 0, 143, seconds(11));
  ASSERT_EQ(
      OfKind(Report(job.book, job.a, 0, 143, seconds(12)), NodeReplyKind::kRoster).size(),
      2u);
  ExpectTheOneRestartIsLeftAfterTheReform(job, "drained: node c");
}

TEST(RendezvousBookGuard, AFailureAfterAGrownReformStillHasItsRestart) {
  RendezvousOptions options = Options(1, 2);
  options.ledger.max_restarts = 1;
  RendezvousBook book(options, Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  Agent b = MakeAgent(2, "b", "10.0.0.2");
  (void)Join(book, a, seconds(1));
  ASSERT_EQ(OfKind(book.Tick(seconds(11)), NodeReplyKind::kRoster).size(), 1u);
  (void)Join(book, b, seconds(20));
  ASSERT_EQ(OfKind(book.Tick(seconds(50)), NodeReplyKind::kStop).size(), 1u);  // 30 s later
  ASSERT_EQ(OfKind(Report(book, a, 0, 143, seconds(51)), NodeReplyKind::kRoster).size(), 2u);
  ASSERT_EQ(book.attempt(), 1);
  EXPECT_FALSE(book.Attempts()[0].counted);
  (void)Report(book, b, 1, 3, Raised(2, "b", "KeyError: 'x'", 3), seconds(100));
  const auto rosters = OfKind(Report(book, a, 1, 1, seconds(101)), NodeReplyKind::kRoster);
  ASSERT_EQ(rosters.size(), 2u) << "the growth spent the restart\n" << book.AttemptTable();
  EXPECT_EQ(rosters[0].reply.attempt, 2);
}

// --- the thrash guard at its documented defaults (4 re-forms within 10 minutes) ---------------
//
// Every re-form here follows an attempt whose nodes report no progress (no backup saved, no
// step past its start): the guard counts only those; the last test's attempts progress.

// a runs the job alone or with b (--nodes 1:2, every guard at its default); b is lost,
// then comes back (grows the job after the default --scale-up-after, 30 s), again and again.
class Thrashing {
 public:
  Thrashing() : book_(Options(1, 2), Nanos(0)) {
    EXPECT_EQ(book_.options().ledger.max_reforms, 4);
    EXPECT_EQ(std::chrono::duration_cast<seconds>(book_.options().ledger.reform_window).count(), 600);
    (void)Join(book_, a_, seconds(1));
    (void)Join(book_, b_, seconds(2));  // MAX: the job forms
    EXPECT_EQ(book_.phase(), RendezvousBook::Phase::kRunning);
  }

  // b's node lost at `at`; a reports its processes ended (1), with no progress unless
  // `progressed`.
  std::vector<NodeMessage> LoseB(Nanos at, bool progressed = false) {
    EXPECT_TRUE(book_.Leave(b_.connection, at).empty());
    return Report(book_, a_, book_.attempt(), 1, JobFailure{}, 40000 + book_.attempt(),
                  at + seconds(1), progressed);
  }

  // b's machine back at `at` (a new connection): after 30 s the attempt stops at one
  // agreed step (a's report, 143) and the next runs with it.
  std::vector<NodeMessage> BringBackB(Nanos at, bool progressed = false) {
    const std::string name = b_.hello.node_name;
    b_ = MakeAgent(++next_connection_, name, "10.0.0.2");
    EXPECT_EQ(OfKind(Join(book_, b_, at), NodeReplyKind::kAdmitted).size(), 1u);
    EXPECT_EQ(OfKind(book_.Tick(at + seconds(30)), NodeReplyKind::kStop).size(), 1u);
    return Report(book_, a_, book_.attempt(), 143, JobFailure{}, 40000 + book_.attempt(),
                  at + seconds(31), progressed);
  }

  RendezvousBook& book() { return book_; }

 private:
  RendezvousBook book_;
  Agent a_ = MakeAgent(1, "a", "10.0.0.1");
  Agent b_ = MakeAgent(2, "b", "10.0.0.2");
  uint64_t next_connection_ = 2;
};

void ExpectTheJobGoesOn(const std::vector<NodeMessage>& out, const RendezvousBook& book,
                        int64_t attempt) {
  EXPECT_TRUE(OfKind(out, NodeReplyKind::kEnd).empty()) << book.AttemptTable();
  EXPECT_FALSE(OfKind(out, NodeReplyKind::kRoster).empty()) << book.AttemptTable();
  EXPECT_EQ(book.attempt(), attempt);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kRunning);
}

TEST(RendezvousBookGuard, TheFifthReformWithinTenMinutesEndsTheJobTheFourthDoesNot) {
  Thrashing job;
  // Five re-forms from 100 s to 599 s: the first is still within 10 minutes of the fifth.
  ExpectTheJobGoesOn(job.LoseB(seconds(99)), job.book(), 1);         // 1 (at 100 s)
  ExpectTheJobGoesOn(job.BringBackB(seconds(200)), job.book(), 2);   // 2 (231 s)
  ExpectTheJobGoesOn(job.LoseB(seconds(300)), job.book(), 3);        // 3 (301 s)
  ExpectTheJobGoesOn(job.BringBackB(seconds(400)), job.book(), 4);   // 4 (431 s): not ended
  const std::vector<NodeMessage> out = job.LoseB(seconds(598));      // 5 (599 s)
  const auto ends = OfKind(out, NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u) << "the fifth re-form within 10 minutes must end the job\n"
                             << job.book().AttemptTable();
  EXPECT_TRUE(OfKind(out, NodeReplyKind::kRoster).empty());
  EXPECT_EQ(ends[0].reply.exit_status, 1);
  EXPECT_EQ(job.book().exit_status(), 1);
  EXPECT_EQ(job.book().phase(), RendezvousBook::Phase::kEnded);
  // The message docs/configuration.md shows, each cause named.
  const std::string& why = ends[0].reply.message;
  EXPECT_EQ(why.find("the job re-formed 5 times within 600 s without progress (more than "
                     "--max-reforms 4 within --reform-window 600 s, none of them after a backup "
                     "saved or a step past its start: the thrash guard ends it): attempt 0: node lost: node b (host box-b, at 10.0.0.2); "
                     "attempt 1: node b joined (host box-b, at 10.0.0.2); "
                     "attempt 2: node lost: node b"),
            0u)
      << why;
  EXPECT_NE(why.find("attempt 4: node lost: node b"), std::string::npos) << why;
}

TEST(RendezvousBookGuard, AReformTenMinutesAfterTheFirstIsOnlyTheFourthWithinTheWindow) {
  Thrashing job;
  ExpectTheJobGoesOn(job.LoseB(seconds(99)), job.book(), 1);         // 1 (at 100 s)
  ExpectTheJobGoesOn(job.BringBackB(seconds(200)), job.book(), 2);   // 2 (231 s)
  ExpectTheJobGoesOn(job.LoseB(seconds(300)), job.book(), 3);        // 3 (301 s)
  ExpectTheJobGoesOn(job.BringBackB(seconds(400)), job.book(), 4);   // 4 (431 s)
  // 10 minutes after the first: it has left the window, this is the fourth within it.
  ExpectTheJobGoesOn(job.LoseB(seconds(699)), job.book(), 5);        // 5 (700 s)
  // And the next one within 10 minutes of the second (231 s) is the fifth again.
  const auto ends = OfKind(job.BringBackB(seconds(790)), NodeReplyKind::kEnd);  // 821 s
  ASSERT_EQ(ends.size(), 2u) << job.book().AttemptTable();
  EXPECT_EQ(ends[0].reply.exit_status, 1);
  EXPECT_EQ(ends[0].reply.message.find("the job re-formed 5 times within 600 s without "
                                       "progress"),
            0u)
      << ends[0].reply.message;
}

TEST(RendezvousBookGuard, AJobThatSavesBetweenReformsIsNeverEndedByTheGuard) {
  // Issue 59's spot-instance user: b lost and back every 100 s, every attempt saving
  // backups: twelve re-forms within ten minutes and the job still runs.
  Thrashing job;
  for (int i = 0; i < 6; ++i) {
    ExpectTheJobGoesOn(job.LoseB(seconds(99 + 100 * i), true), job.book(), 2 * i + 1);
    ExpectTheJobGoesOn(job.BringBackB(seconds(130 + 100 * i), true), job.book(), 2 * i + 2);
  }
  // Its next attempts make none: the fifth of those within the window ends it.
  for (int i = 0; i < 2; ++i) {
    ExpectTheJobGoesOn(job.LoseB(seconds(700 + 100 * i)), job.book(), 13 + 2 * i);
    ExpectTheJobGoesOn(job.BringBackB(seconds(730 + 100 * i)), job.book(), 14 + 2 * i);
  }
  const auto ends = OfKind(job.LoseB(seconds(900)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 1u) << job.book().AttemptTable();
  EXPECT_NE(ends[0].reply.message.find("re-formed 5 times within 600 s without progress"),
            std::string::npos)
      << ends[0].reply.message;
}

}  // namespace
}  // namespace kdist
