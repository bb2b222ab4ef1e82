// The load generator against the real coordinator: the 2,048-process roll call
// the test suite runs for correctness (no timing is asserted).
#include "roll_call_load.h"

#include <thread>

#include "roll_call/coordinator.h"
#include "roll_call/roll_call_options.h"
#include "testing/roll_call_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using testing::FastOptions;
using testing::TestHello;

struct Outcome {
  Result<RollCallSummary> summary = Internal("not run");
  Result<RollCallLoadReport> load = Internal("not run");
};

// Process 0 with `n` processes on a free loopback port, and the load generator
// for `first_id`.. given the hello template `edit` produces.
template <typename Edit>
Outcome RunJob(int64_t n, int64_t first_id, int64_t count, Edit edit) {
  Outcome out;
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(60000));
  options.max_pending = 256;
  Result<Listener> listener = BindCoordinatorPort(0, options, clock);
  if (!listener.ok()) {
    out.summary = listener.status();
    return out;
  }
  const uint16_t port = listener->port;
  Hello own = TestHello(0, n, port);
  JobShared shared{7};
  std::thread coordinator([&, l = std::move(listener).value()]() mutable {
    RealClock thread_clock;
    out.summary = RunCoordinatorOn(std::move(l), own, shared, options, thread_clock);
  });
  RollCallLoad load;
  load.coordinator = *EndpointFromLiteral("127.0.0.1", port);
  load.hello = TestHello(1, n, port);
  edit(load.hello);
  load.first_id = first_id;
  load.count = count;
  load.timeout = milliseconds(60000);
  out.load = RunRollCallLoad(load, clock);
  coordinator.join();
  return out;
}

TEST(RollCallLoad, TwoThousandFortyEightProcessesAllGetGo) {
  Outcome out = RunJob(2048, 1, 2047, [](Hello&) {});
  KDIST_ASSERT_OK(out.summary);
  KDIST_ASSERT_OK(out.load);
  EXPECT_EQ(out.summary->members.size(), 2047u);
  EXPECT_EQ(out.summary->dropped, 0);
  EXPECT_EQ(out.load->went, 2047);
  EXPECT_EQ(out.load->rejected, 0);
  EXPECT_EQ(out.load->failed, 0) << out.load->first_failure;
  // Hosts as the generator names them: 8 processes per host.
  EXPECT_EQ(out.summary->members.front().host, "sim-0000");
  EXPECT_EQ(out.summary->members.back().host, "sim-0255");
  EXPECT_LE(out.load->all_hellos_sent, out.load->last_verdict);
}

TEST(RollCallLoad, AMismatchFailsEverySimulatedProcess) {
  Outcome out = RunJob(512, 1, 511, [](Hello& h) { h.fingerprint = "another-config"; });
  KDIST_EXPECT_ERROR(out.summary, StatusCode::kFailedPrecondition, "configured differently");
  KDIST_ASSERT_OK(out.load);
  EXPECT_EQ(out.load->went, 0);
  // The first mismatching hello fails the roll call: it and every process
  // already waiting hear the verdict; the rest find the port closed.
  EXPECT_GE(out.load->rejected, 1);
  EXPECT_EQ(out.load->rejected + out.load->failed, 511);
}

// Process 0 starts 300 ms after the others: their refused connects are
// retried on kdist's worker schedule, whose rate over the job is bounded.
TEST(RollCallLoad, ALateProcessZeroIsNotFlooded) {
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(60000));
  // Reserve a free port, give it back, and listen on it again later.
  uint16_t port = 0;
  {
    Result<Listener> probe = BindCoordinatorPort(0, options, clock);
    KDIST_ASSERT_OK(probe);
    port = probe->port;
  }
  const int64_t n = 1024;
  Hello own = TestHello(0, n, port);
  JobShared shared{7};
  Result<RollCallSummary> summary = Internal("not run");
  std::thread coordinator([&] {
    std::this_thread::sleep_for(milliseconds(300));
    RealClock thread_clock;
    Result<Listener> listener = BindCoordinatorPort(port, options, thread_clock);
    if (!listener.ok()) {
      summary = listener.status();
      return;
    }
    summary = RunCoordinatorOn(std::move(listener).value(), own, shared, options, thread_clock);
  });
  RollCallLoad load;
  load.coordinator = *EndpointFromLiteral("127.0.0.1", port);
  load.hello = TestHello(1, n, port);
  load.count = n - 1;
  load.timeout = milliseconds(60000);
  Result<RollCallLoadReport> report = RunRollCallLoad(load, clock);
  coordinator.join();
  KDIST_ASSERT_OK(summary);
  KDIST_ASSERT_OK(report);
  EXPECT_EQ(report->went, n - 1);
  ASSERT_GT(report->refused_connects, 0);
  // Each process's first attempt is not delayed (they start together here);
  // after it, the retries are bounded: n per shortest delay.
  const BackoffPolicy policy = WorkerBackoff(n);
  const double window_s = NanosToSeconds(report->last_refused - report->first_refused);
  const double retries_bound =
      static_cast<double>(n) + kMaxRefusedConnectsPerSecond * window_s * 1.05 + n;
  EXPECT_LE(static_cast<double>(report->refused_connects), retries_bound)
      << report->refused_connects << " refused in " << window_s << " s; shortest delay "
      << NanosToSeconds(policy.initial) * (1 - policy.jitter) << " s";
}

TEST(RollCallLoad, ATimeoutNamesHowManyAreWaiting) {
  RollCallLoad load;
  load.coordinator = *EndpointFromLiteral("127.0.0.1", 9);  // discard: nothing listens
  load.hello = TestHello(1, 4, 9);
  load.count = 3;
  load.timeout = milliseconds(100);
  RealClock clock;
  KDIST_EXPECT_ERROR(RunRollCallLoad(load, clock), StatusCode::kDeadlineExceeded,
                     "with 3 of 3 simulated processes without a verdict");
}

}  // namespace
}  // namespace kdist
