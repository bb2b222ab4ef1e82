// The nodes' load generator against a real rendezvous server in this process: every
// scenario's outcome as each simulated agent was told it, checked.
#include "node_load.h"

#include <gtest/gtest.h>

#include <memory>

#include "rendezvous/rendezvous_server.h"
#include "roll_call/consistency.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

constexpr int64_t kAgents = 48;

RendezvousServerOptions ServerOptions() {
  RendezvousServerOptions o;
  o.book.job_id = "job";
  o.book.min_nodes = 2;
  o.book.max_nodes = kAgents;
  o.book.processes_per_node = 8;
  o.book.join_timeout = seconds(60);
  o.book.scale_up_after = seconds(0);
  o.book.token = "a token of sixteen bytes or more";
  o.book.ledger.max_reforms = 100;
  o.max_unadmitted = kAgents;
  return o;
}

NodeLoadOptions LoadOptions(uint16_t port, const std::string& token) {
  NodeLoadOptions o;
  o.rendezvous = *EndpointFromLiteral("127.0.0.1", port);
  o.token = token;
  o.job_id = "job";
  o.min_nodes = 2;
  o.max_nodes = kAgents;
  o.processes_per_node = 8;
  o.environment = EncodeFingerprint({{"jax", "0.7.0", false}, {"python", "3.13", false}});
  o.count = kAgents;
  o.timeout = seconds(60);
  return o;
}

struct Served {
  RealClock clock;
  std::unique_ptr<RendezvousServer> server;
  std::unique_ptr<NodeLoad> load;

  explicit Served(const std::string& token = "a token of sixteen bytes or more") {
    server = std::make_unique<RendezvousServer>(ServerOptions(), clock, [](const std::string&) {});
    EXPECT_TRUE(server->Listen(*EndpointFromLiteral("127.0.0.1", 0)).ok());
    EXPECT_TRUE(server->Start().ok());
    Result<std::unique_ptr<NodeLoad>> made = NodeLoad::Create(LoadOptions(server->port(), token), clock);
    EXPECT_TRUE(made.ok()) << made.status().message();
    load = std::move(*made);
  }
};

void ExpectAllTold(const NodeScenarioReport& r, int64_t expected) {
  EXPECT_EQ(r.expected, expected);
  EXPECT_EQ(r.told, expected);
  EXPECT_EQ(r.told_twice, 0);
  EXPECT_EQ(r.wrong, 0) << r.first_wrong;
}

TEST(NodeLoad, FormingLossDrainGrowthAndTheEndAreEachToldToEveryAgentOnce) {
  Served s;
  Result<NodeScenarioReport> joined = s.load->Join();
  KDIST_ASSERT_OK(joined);
  ExpectAllTold(*joined, kAgents);
  EXPECT_EQ(joined->attempt, 0);
  EXPECT_EQ(joined->node_count, kAgents);  // each rank 0 .. 47 held once (checked inside)
  EXPECT_GE(joined->seconds, joined->after_last_hello);

  Result<NodeScenarioReport> lost = s.load->Lose(7);
  KDIST_ASSERT_OK(lost);
  ExpectAllTold(*lost, kAgents - 1);
  EXPECT_EQ(lost->attempt, 1);
  EXPECT_EQ(lost->node_count, kAgents - 1);

  Result<NodeScenarioReport> stop = s.load->Drain(11);
  KDIST_ASSERT_OK(stop);
  ExpectAllTold(*stop, kAgents - 1);  // the drained agent too
  EXPECT_EQ(stop->attempt, 1);
  Result<NodeScenarioReport> drained = s.load->Stopped();
  KDIST_ASSERT_OK(drained);
  ExpectAllTold(*drained, kAgents - 1);
  EXPECT_EQ(drained->ended, 1);  // the drained agent, with 143
  EXPECT_EQ(drained->attempt, 2);
  EXPECT_EQ(drained->node_count, kAgents - 2);

  Result<NodeScenarioReport> grown = s.load->Grow();
  KDIST_ASSERT_OK(grown);
  ExpectAllTold(*grown, kAgents - 1);
  EXPECT_EQ(grown->attempt, 3);
  EXPECT_EQ(grown->node_count, kAgents - 1);

  Result<NodeScenarioReport> finished = s.load->Finish();
  KDIST_ASSERT_OK(finished);
  ExpectAllTold(*finished, kAgents - 1);
  EXPECT_EQ(finished->ended, kAgents - 1);
  EXPECT_EQ(finished->exit_status, 0);
  EXPECT_TRUE(s.server->Wait(seconds(30)));
  EXPECT_EQ(s.server->exit_status(), 0);
  EXPECT_EQ(s.server->Attempts().size(), 4u);
}

TEST(NodeLoad, ARefusalIsCountedWrongNotTold) {
  Served s("another token of sixteen bytes");
  Result<NodeScenarioReport> joined = s.load->Join();
  KDIST_ASSERT_OK(joined);
  EXPECT_EQ(joined->told, 0);
  EXPECT_EQ(joined->wrong, kAgents);
  EXPECT_NE(joined->first_wrong.find("refused"), std::string::npos) << joined->first_wrong;
}

TEST(NodeLoad, AScenarioForAnAgentNotRunningIsAnError) {
  Served s;
  KDIST_EXPECT_ERROR(s.load->Lose(3), StatusCode::kInvalidArgument, "no running simulated agent 3");
}

}  // namespace
}  // namespace kdist
