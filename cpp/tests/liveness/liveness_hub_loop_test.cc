// The hub's thread (liveness_hub_loop.cc): a closed connection is a death.
#include "liveness/liveness_hub.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "testing/liveness_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Inbox;
using testing::Job;
using testing::JoinOf;
using testing::Member;
using testing::StartJob;

TEST(LivenessHub, AClosedConnectionIsADeathAndProcessZerosFailureIsToldToAll) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 3));
  job.spokes[1]->Stop();  // as the kernel closes a killed process's socket
  ASSERT_TRUE(job.hub_inbox.WaitFor(1));
  EXPECT_TRUE(job.hub_inbox.notices[0].kind == LiveKind::kDied);
  EXPECT_EQ(job.hub_inbox.notices[0].process_id, int64_t{2});
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  EXPECT_TRUE(job.inboxes[0]->notices[0].kind == LiveKind::kDied);

  Job second;
  KDIST_ASSERT_OK(StartJob(second, 2));
  KDIST_EXPECT_OK(second.hub->ReportFailure("KeyError: 'x'"));
  ASSERT_TRUE(second.inboxes[0]->WaitFor(1));
  EXPECT_EQ(second.inboxes[0]->notices[0].process_id, int64_t{0});
  second.hub->Stop();  // after a failure, process 0's close adds nothing the spoke acts on
}

}  // namespace
}  // namespace kdist
