#include "liveness/liveness_spoke.h"

#include <chrono>
#include <memory>

#include "testing/liveness_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using testing::Job;
using testing::JoinOf;
using testing::Member;
using testing::StartJob;

TEST(LivenessSpoke, ProcessZeroGoneIsADeathForTheOthers) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 2));
  job.hub->Stop();
  ASSERT_TRUE(job.inboxes[0]->WaitFor(1));
  EXPECT_TRUE(job.inboxes[0]->notices[0].kind == LiveKind::kDied);
  EXPECT_EQ(job.inboxes[0]->notices[0].process_id, int64_t{0});
}

TEST(LivenessSpoke, AWrongNonceIsRefused) {
  Job job;
  KDIST_ASSERT_OK(StartJob(job, 2));
  Result<Endpoint> at = EndpointFromLiteral("127.0.0.1", job.hub->port());
  KDIST_ASSERT_OK(at);
  RealClock clock;
  KDIST_EXPECT_ERROR(LivenessSpoke::Join(*at, JoinOf(1, "guess"), Member(0), LivenessOptions(),
                                         StopOptions(), nullptr, clock),
                     StatusCode::kUnavailable, "refused this process");
}

TEST(LivenessSpoke, NoHubIsUnavailable) {
  Result<Listener> l = ListenOnAllInterfaces(0, 1);
  KDIST_ASSERT_OK(l);
  const uint16_t port = l->port;
  l->fd.Close();
  Result<Endpoint> at = EndpointFromLiteral("127.0.0.1", port);
  KDIST_ASSERT_OK(at);
  RealClock clock;
  KDIST_EXPECT_ERROR(
      LivenessSpoke::Join(*at, JoinOf(1), Member(0), LivenessOptions(), StopOptions(), nullptr,
                          clock),
      StatusCode::kUnavailable, "cannot connect to process 0's liveness channel");
}

}  // namespace
}  // namespace kdist
