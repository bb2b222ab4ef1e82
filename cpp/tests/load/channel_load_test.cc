// The channel's load generator against a real hub in this process: every
// scenario's outcome as each simulated process was told it.
#include "channel_load.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>

#include "stop/stop_board.h"
#include "testing/liveness_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::Job;
using testing::StartJob;

constexpr int kProcesses = 65;  // process 0 and 64 simulated

std::unique_ptr<ChannelLoad> Joined(Job& job, RealClock& clock) {
  ChannelLoadOptions options;
  options.hub = job.at;
  options.nonce = "nonce";
  options.count = kProcesses - 1;
  options.timeout = std::chrono::seconds(60);
  Result<std::unique_ptr<ChannelLoad>> load = ChannelLoad::Create(options, clock);
  EXPECT_TRUE(load.ok()) << load.status().message();
  Result<ChannelScenarioReport> joined = (*load)->Join();
  EXPECT_TRUE(joined.ok()) << joined.status().message();
  EXPECT_EQ(joined->told, kProcesses - 1);
  EXPECT_EQ(joined->other, 0);
  return std::move(*load);
}

TEST(ChannelLoad, StopBarrierAndFinishAreEachToldToEveryProcessOnce) {
  Job job;
  job.with_boards = true;
  ASSERT_TRUE(StartJob(job, kProcesses, {}, /*joined=*/0).ok());
  RealClock clock;
  std::unique_ptr<ChannelLoad> load = Joined(job, clock);

  Result<int64_t> idle = load->BytesWhileIdle(std::chrono::milliseconds(200));
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(*idle, 0);

  Result<ChannelScenarioReport> stop = load->Stop(1, 100);
  ASSERT_TRUE(stop.ok()) << stop.status().message();
  EXPECT_EQ(stop->told, kProcesses - 1);
  EXPECT_EQ(stop->lowest, 107);  // after the highest step any process answered
  EXPECT_EQ(stop->highest, 107);
  EXPECT_EQ(stop->other, 0) << stop->first_other;

  auto own = std::async(std::launch::async, [&] {
    return job.hub->Barrier("b", 0, std::chrono::seconds(60), nullptr);
  });
  Result<ChannelScenarioReport> barrier = load->Barrier(0, "b");
  ASSERT_TRUE(barrier.ok()) << barrier.status().message();
  EXPECT_TRUE(own.get().ok());
  EXPECT_EQ(barrier->told, kProcesses - 1);
  EXPECT_EQ(barrier->told_twice, 0);
  EXPECT_EQ(barrier->highest, 0);  // released, not failed

  ASSERT_TRUE(job.hub->Finish(true).ok());
  Result<ChannelScenarioReport> finish = load->Finish();
  ASSERT_TRUE(finish.ok()) << finish.status().message();
  EXPECT_EQ(finish->told, kProcesses - 1);
  EXPECT_EQ(finish->lowest, 1);  // through JAX's barrier
}

TEST(ChannelLoad, AClosedConnectionIsToldToEveryOtherProcessNamingIt) {
  Job job;
  ASSERT_TRUE(StartJob(job, kProcesses, {}, /*joined=*/0).ok());
  RealClock clock;
  std::unique_ptr<ChannelLoad> load = Joined(job, clock);
  Result<ChannelScenarioReport> failure = load->Failure(7);
  ASSERT_TRUE(failure.ok()) << failure.status().message();
  EXPECT_EQ(failure->told, kProcesses - 2);
  EXPECT_EQ(failure->lowest, 7);
  EXPECT_EQ(failure->highest, 7);
  EXPECT_EQ(failure->other, 0) << failure->first_other;
}

}  // namespace
}  // namespace kdist
