#include "roll_call/roll_call_options.h"

#include <vector>

#include "config/resolve.h"
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

}  // namespace
}  // namespace kdist
