#include "roll_call_options.h"

#include <vector>

#include "resolve.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t Ns(Nanos value) { return value.count(); }

TEST(Rendezvous, HelloComesFromTheSpecAndIdentity) {
  Request request;
  request.job_addresses = "127.0.0.1:5000";
  request.num_processes = "4";
  Environment env{{"KERAS_DISTRIBUTION_PROCESS_ID", "2"}, {"KDIST_RENDEZVOUS_TOKEN", "t0k"}};
  Result<ClusterSpec> spec = Resolve(request, env);
  KDIST_ASSERT_OK(spec);
  const Hello hello = MakeHello(*spec, Identity{"0.4.35", "node-2", 321});
  EXPECT_EQ(hello.process_id, int64_t{2});
  EXPECT_EQ(hello.num_processes, int64_t{4});
  EXPECT_EQ(hello.fingerprint, spec->Fingerprint());
  EXPECT_EQ(hello.coordinator, std::string("127.0.0.1:5000"));
  EXPECT_EQ(hello.num_processes_source, std::string("argument"));
  EXPECT_EQ(hello.coordinator_source, std::string("argument"));
  EXPECT_EQ(hello.jax_version, std::string("0.4.35"));
  EXPECT_EQ(hello.host, std::string("node-2"));
  EXPECT_EQ(hello.pid, int64_t{321});
  EXPECT_EQ(hello.token, std::string("t0k"));
}

TEST(Rendezvous, WorkerBackoffCapGrowsWithTheJob) {
  EXPECT_EQ(Ns(WorkerBackoff(2).initial), Ns(milliseconds(1)));
  EXPECT_EQ(Ns(WorkerBackoff(2).cap), Ns(milliseconds(2)));
  EXPECT_EQ(Ns(WorkerBackoff(8).cap), Ns(milliseconds(2)));
  EXPECT_EQ(Ns(WorkerBackoff(200).cap), Ns(milliseconds(50)));
  EXPECT_EQ(Ns(WorkerBackoff(1000).cap), Ns(milliseconds(250)));
  EXPECT_EQ(Ns(WorkerBackoff(4000).cap), Ns(seconds(1)));
  EXPECT_EQ(Ns(WorkerBackoff(1'000'000).cap), Ns(WorkerBackoff(1'000'000).initial));  // the rate bound
  EXPECT_EQ(Ns(WorkerBackoff(0).cap), Ns(milliseconds(2)));
  // The job's attempt rate at the cap stays under 8,000 per second: every
  // delay is at least half the cap.
  for (int64_t n : {2, 8, 9, 100, 201, 1000, 3999, 4000}) {
    const BackoffPolicy policy = WorkerBackoff(n);
    const double min_delay_s = NanosToSeconds(policy.cap) * (1.0 - policy.jitter);
    EXPECT_LE(static_cast<double>(n) / min_delay_s, 8000.0 * 1.0001) << n;
  }
}

TEST(Rendezvous, WorkerBackoffBoundsTheJobsRefusedConnectsFromTheFirstRetry) {
  for (int64_t n : {1, 2, 10, 11, 100, 101, 1000, 4096, 16384, 1'000'000}) {
    const BackoffPolicy policy = WorkerBackoff(n);
    const double shortest_s = NanosToSeconds(policy.initial) * (1.0 - policy.jitter);
    EXPECT_LE(static_cast<double>(n) / shortest_s, kMaxRefusedConnectsPerSecond * 1.0001) << n;
    EXPECT_GE(Ns(policy.cap), Ns(policy.initial)) << n;
  }
  EXPECT_EQ(Ns(WorkerBackoff(10).initial), Ns(milliseconds(1)));
  EXPECT_EQ(Ns(WorkerBackoff(100).initial), Ns(milliseconds(10)));
  EXPECT_EQ(Ns(WorkerBackoff(16384).initial), Ns(WorkerBackoff(16384).cap));
  EXPECT_NEAR(NanosToSeconds(WorkerBackoff(16384).initial), 1.6384, 1e-6);
}

TEST(Rendezvous, ServiceProbesAreFrequentInSmallJobsAndBoundedInLargeOnes) {
  EXPECT_EQ(Ns(ServiceProbeInterval(2)), Ns(microseconds(250)));
  EXPECT_EQ(Ns(ServiceProbeInterval(5)), Ns(microseconds(250)));
  EXPECT_EQ(Ns(ServiceProbeInterval(8)), Ns(microseconds(400)));
  for (int64_t n : {1, 2, 5, 6, 8, 100, 16384}) {
    // Every other process probes at this interval: under the job's bound.
    EXPECT_LE(static_cast<double>(n - 1) / NanosToSeconds(ServiceProbeInterval(n)),
              kMaxRefusedConnectsPerSecond * 1.0001)
        << n;
  }
  EXPECT_NEAR(NanosToSeconds(ServiceProbeInterval(16384)), 16384 / kMaxRefusedConnectsPerSecond,
              1e-9);
}

TEST(Rendezvous, TheListenBacklogIsSizedToTheJob) {
  EXPECT_EQ(ListenBacklog(2), 128);
  EXPECT_EQ(ListenBacklog(16384), 16448);
  EXPECT_EQ(ListenBacklog(1'000'000), 65535);
}

TEST(Waiter, SleepStopsAtTheDeadlineAndLogsAtTheInterval) {
  FakeClock clock;
  std::vector<std::string> lines;
  RollCallOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(300));
  options.progress_interval = seconds(5);
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Waiter waiter(clock, options);
  KDIST_EXPECT_OK(waiter.Sleep(seconds(1000), [&] { return "waiting, " + waiter.Progress(); }));
  EXPECT_EQ(Ns(clock.Now()), Ns(seconds(300)));
  EXPECT_TRUE(waiter.Expired());
  EXPECT_EQ(lines.size(), size_t{60});
  ASSERT_TRUE(!lines.empty());
  EXPECT_EQ(lines.front(), std::string("waiting, 5.0 s of 300 s"));
  EXPECT_EQ(lines[1], std::string("waiting, 10 s of 300 s"));
  for (Nanos slept : clock.sleeps()) EXPECT_LE(Ns(slept), Ns(seconds(5)));
}

TEST(Waiter, InterruptIsAskedEveryCheckIntervalAndStopsTheWait) {
  FakeClock clock;
  int asked = 0;
  RollCallOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(60));
  options.check_interval = milliseconds(100);
  options.interrupted = [&]() -> Status {
    ++asked;
    if (clock.Now() >= seconds(2)) return Internal("interrupted");
    return Status::Ok();
  };
  Waiter waiter(clock, options);
  KDIST_EXPECT_ERROR(waiter.Sleep(seconds(30), nullptr), StatusCode::kInternal, "interrupted");
  EXPECT_LE(Ns(clock.Now()), Ns(milliseconds(2100)));
  EXPECT_GE(asked, 20);
  for (Nanos slept : clock.sleeps()) EXPECT_LE(Ns(slept), Ns(milliseconds(100)));
}

TEST(Waiter, SliceRespectsDeadlineChecksAndProgress) {
  FakeClock clock;
  RollCallOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(3));
  options.progress_interval = seconds(1);
  options.progress = [](const std::string&) {};
  Waiter waiter(clock, options);
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), Ns(seconds(1)));  // next progress line
  clock.Advance(milliseconds(2500));
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), Ns(Nanos(0)));  // a line is overdue
  KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), Ns(milliseconds(500)));  // the deadline
  clock.Advance(seconds(1));
  EXPECT_EQ(Ns(waiter.Remaining()), int64_t{0});
  EXPECT_EQ(Ns(waiter.Slice(seconds(10))), int64_t{0});
}

TEST(Waiter, TimeSpentBeforeTheCallCountsAgainstTheDeadline) {
  FakeClock clock(seconds(1000));
  RollCallOptions options;
  options.deadline = Deadline(clock.Now() - milliseconds(500), seconds(3));
  Waiter waiter(clock, options);
  EXPECT_EQ(Ns(waiter.Remaining()), Ns(milliseconds(2500)));
  EXPECT_EQ(waiter.Progress(), std::string("0.5 s of 3 s"));
  KDIST_EXPECT_OK(waiter.Sleep(seconds(10), nullptr));
  EXPECT_EQ(Ns(clock.Now()), Ns(milliseconds(1002500)));
  EXPECT_EQ(waiter.Progress(), std::string("3.0 s of 3 s"));
}

TEST(Waiter, ProgressKeepsItsCadenceAcrossCalls) {
  FakeClock clock;
  std::vector<std::string> lines;
  RollCallOptions options;
  // An earlier phase used 1.7 s.
  options.deadline = Deadline(clock.Now() - milliseconds(1700), seconds(10));
  options.progress_interval = milliseconds(500);
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Waiter waiter(clock, options);
  KDIST_EXPECT_OK(waiter.Check([&] { return waiter.Progress(); }));
  EXPECT_EQ(lines.size(), size_t{0});  // nothing due at once
  KDIST_EXPECT_OK(waiter.Sleep(milliseconds(900), [&] { return waiter.Progress(); }));
  ASSERT_EQ(lines.size(), size_t{2});
  EXPECT_EQ(lines[0], std::string("2.0 s of 10 s"));
  EXPECT_EQ(lines[1], std::string("2.5 s of 10 s"));
}

TEST(Waiter, AStallSkipsMissedLinesInsteadOfFlooding) {
  FakeClock clock;
  int lines = 0;
  RollCallOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(300));
  options.progress_interval = seconds(1);
  options.progress = [&](const std::string&) { ++lines; };
  Waiter waiter(clock, options);
  clock.Advance(seconds(50));
  KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
  KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
  EXPECT_EQ(lines, 1);
}

TEST(Waiter, ZeroOrNegativeIntervalsDoNotSpin) {
  for (Nanos interval : {Nanos(0), Nanos(-5), Nanos(1)}) {
    FakeClock clock;
    int64_t lines = 0;
    int64_t asked = 0;
    RollCallOptions options;
    options.deadline = Deadline::StartingNow(clock, seconds(10));
    options.progress_interval = interval;
    options.check_interval = interval;
    options.progress = [&](const std::string&) { ++lines; };
    options.interrupted = [&]() -> Status {
      ++asked;
      return Status::Ok();
    };
    Waiter waiter(clock, options);
    // Read as 1 ms: at most one line and one check per millisecond.
    KDIST_EXPECT_OK(waiter.Sleep(seconds(60), [] { return std::string("x"); }));
    EXPECT_EQ(Ns(clock.Now()), Ns(seconds(10)));
    EXPECT_LE(lines, int64_t{10001});
    EXPECT_LE(asked, int64_t{10001});
    // At most one wake for each line and one for each check.
    EXPECT_LE(static_cast<int64_t>(clock.sleeps().size()), int64_t{20002});
    for (Nanos slept : clock.sleeps()) EXPECT_LE(Ns(slept), Ns(milliseconds(1)));
    // A stall of a million hours costs one step, not one per missed interval.
    clock.Advance(std::chrono::hours(1'000'000));
    const int64_t before = lines;
    KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
    KDIST_EXPECT_OK(waiter.Check([] { return std::string("x"); }));
    EXPECT_EQ(lines, before + 1);
  }
}

TEST(Rendezvous, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secreT"));
  EXPECT_FALSE(ConstantTimeEquals("secret", ""));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0", 2), "a"));
}

}  // namespace
}  // namespace kdist
