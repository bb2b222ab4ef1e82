#include "rendezvous/node_settings.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

constexpr char kGoodToken[] = "0123456789abcdef0123";

// Resolves names from a table: IP literals give themselves.
HostLookup Table(std::map<std::string, std::string> names = {}) {
  return [names](const std::string& host) -> Result<std::vector<std::string>> {
    auto it = names.find(host);
    if (it != names.end()) return std::vector<std::string>{it->second};
    if (host.find_first_not_of("0123456789.:") == std::string::npos) {
      return std::vector<std::string>{host};
    }
    return Unavailable("no such host " + host);
  };
}

NodeRequest Agent(const std::string& rendezvous) {
  NodeRequest r;
  r.rendezvous = rendezvous;
  r.host_name = "vm-1";
  r.min_nodes = 2;
  r.max_nodes = 3;
  r.processes_per_node = 2;
  return r;
}

TEST(NodeSettings, LoopbackNeedsNoTokenAndTakesEveryDefault) {
  Result<NodeSettings> s = ResolveNodeSettings(Agent("127.0.0.1:29400"), {}, Table());
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->ip, "127.0.0.1");
  EXPECT_EQ(s->port, 29400);
  EXPECT_TRUE(s->loopback);
  EXPECT_EQ(s->token.value, "");
  EXPECT_EQ(s->node_name.value, "vm-1");
  EXPECT_EQ(s->node_name.source, "the host name");
  EXPECT_TRUE(s->unreachable_timeout.value == seconds(20));
  EXPECT_EQ(s->unreachable_timeout.source, "default");
  EXPECT_TRUE(s->scale_up_after.value == std::optional<Nanos>(seconds(30)));
  EXPECT_TRUE(s->last_call.value == seconds(30));
  EXPECT_TRUE(s->join_timeout.value == seconds(300));
  EXPECT_EQ(s->Sources().at("rendezvous"), "--rendezvous");
}

TEST(NodeSettings, TheUnreachableWindowIsTheProcessesOwn) {
  Result<NodeSettings> s = ResolveNodeSettings(Agent("127.0.0.1:29400"),
                                               {{"KDIST_UNREACHABLE_TIMEOUT", "3"}}, Table());
  KDIST_ASSERT_OK(s);
  EXPECT_TRUE(s->unreachable_timeout.value == seconds(3));
  EXPECT_EQ(s->unreachable_timeout.source, "KDIST_UNREACHABLE_TIMEOUT");
  EXPECT_TRUE(ServerOptionsFor(*s).unreachable_timeout == seconds(3));
  Result<RendezvousAgentOptions> agent = AgentOptionsFor(*s);
  KDIST_ASSERT_OK(agent);
  EXPECT_TRUE(agent->unreachable_timeout == seconds(3));
}

TEST(NodeSettings, AWindowTheProcessesWouldRefuseIsRefusedInTheirWords) {
  KDIST_EXPECT_ERROR(ResolveNodeSettings(Agent("127.0.0.1:29400"),
                                         {{"KDIST_UNREACHABLE_TIMEOUT", "0.5"}}, Table()),
                     StatusCode::kInvalidArgument,
                     "KDIST_UNREACHABLE_TIMEOUT=\"0.5\" (from the environment): expected a number "
                     "of seconds of at least 1");
}

TEST(NodeSettings, OffLoopbackATokenIsRequiredAndLongEnough) {
  KDIST_EXPECT_ERROR(ResolveNodeSettings(Agent("10.0.0.1:29400"), {}, Table()),
                     StatusCode::kInvalidArgument, "the job needs a token");
  KDIST_EXPECT_ERROR(
      ResolveNodeSettings(Agent("10.0.0.1:29400"), {{"KDIST_ROLL_CALL_TOKEN", "short"}}, Table()),
      StatusCode::kInvalidArgument,
      "the job's token (from KDIST_ROLL_CALL_TOKEN) is 5 bytes; expected at least 16");
  NodeRequest from_file = Agent("10.0.0.1:29400");
  from_file.token = kGoodToken;
  from_file.token_source = "--token-file t";
  Result<NodeSettings> s = ResolveNodeSettings(from_file, {}, Table());
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->token.source, "--token-file t");
  EXPECT_FALSE(s->loopback);
  // A short token is fine on loopback, where only this machine reaches the rendezvous.
  KDIST_EXPECT_OK(
      ResolveNodeSettings(Agent("127.0.0.1:29400"), {{"KDIST_ROLL_CALL_TOKEN", "x"}}, Table()));
}

TEST(NodeSettings, AHostNameResolvesOnceToItsFirstAddress) {
  Result<NodeSettings> s =
      ResolveNodeSettings(Agent("head:29400"), {{"KDIST_ROLL_CALL_TOKEN", kGoodToken}},
                          Table({{"head", "10.0.0.7"}}));
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->ip, "10.0.0.7");
  EXPECT_EQ(s->rendezvous.value, "head:29400");
  KDIST_EXPECT_ERROR(ResolveNodeSettings(Agent("nowhere:29400"), {}, Table()),
                     StatusCode::kUnavailable, "its host does not resolve");
  KDIST_EXPECT_ERROR(ResolveNodeSettings(Agent("10.0.0.1:99999"), {}, Table()),
                     StatusCode::kInvalidArgument, "--rendezvous \"10.0.0.1:99999\"");
}

TEST(NodeSettings, AutoTakesSlurmsFirstHostJobIdAndNodeName) {
  const Environment slurm = {{"SLURM_JOB_ID", "4100"},
                             {"SLURM_JOB_NODELIST", "node-[3-4]"},
                             {"SLURMD_NODENAME", "node-4"},
                             {"KDIST_ROLL_CALL_TOKEN", kGoodToken}};
  Result<NodeSettings> s =
      ResolveNodeSettings(Agent("auto"), slurm, Table({{"node-3", "10.0.0.3"}}));
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->ip, "10.0.0.3");
  EXPECT_EQ(s->job_id.value, "4100");
  EXPECT_EQ(s->job_id.source, "SLURM_JOB_ID");
  EXPECT_EQ(s->node_name.value, "node-4");
  EXPECT_EQ(s->node_name.source, "SLURMD_NODENAME");
  KDIST_EXPECT_ERROR(ResolveNodeSettings(Agent("auto"), {}, Table()), StatusCode::kNotFound,
                     "give --rendezvous HOST:PORT");
}

TEST(NodeSettings, FlagsWinOverSlurm) {
  NodeRequest r = Agent("127.0.0.1:29400");
  r.job_id = "mine";
  r.node_name = "n1";
  r.scale_up_after = "never";
  r.last_call = 5;
  Result<NodeSettings> s = ResolveNodeSettings(
      r, {{"SLURM_JOB_ID", "7"}, {"SLURMD_NODENAME", "node-7"}}, Table());
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->job_id.value, "mine");
  EXPECT_EQ(s->node_name.value, "n1");
  EXPECT_FALSE(s->scale_up_after.value.has_value());
  EXPECT_TRUE(s->last_call.value == seconds(5));
  EXPECT_EQ(s->last_call.source, "--last-call");
  const RendezvousOptions book = BookOptionsFor(*s);
  EXPECT_EQ(book.job_id, "mine");
  EXPECT_FALSE(book.scale_up_after.has_value());
}

TEST(NodeSettings, ServeBindsItsOwnAddressAndNamesNoNode) {
  NodeRequest r;
  r.rendezvous = "[::]:29400";
  r.serve_only = true;
  r.min_nodes = 2;
  r.max_nodes = 2;
  KDIST_EXPECT_ERROR(ResolveNodeSettings(r, {}, Table()), StatusCode::kInvalidArgument,
                     "kdist rendezvous serve [::]:29400 is off loopback");
  Result<NodeSettings> s =
      ResolveNodeSettings(r, {{"KDIST_ROLL_CALL_TOKEN", kGoodToken}, {"KDIST_UNREACHABLE_TIMEOUT", "5"}}, Table());
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->ip, "::");
  EXPECT_EQ(s->node_name.value, "");
  EXPECT_TRUE(ServerOptionsFor(*s).unreachable_timeout == seconds(5));
}

TEST(NodeSettings, ABadScaleUpAfterIsNamed) {
  NodeRequest r = Agent("127.0.0.1:29400");
  r.scale_up_after = "soon";
  KDIST_EXPECT_ERROR(ResolveNodeSettings(r, {}, Table()), StatusCode::kInvalidArgument,
                     "--scale-up-after \"soon\": expected a number of seconds");
}

TEST(NodeSettings, EachAttemptHasItsOwnRollCallToken) {
  NodeRequest r = Agent("127.0.0.1:29400");
  r.job_id = "run-7";
  r.token = kGoodToken;
  Result<NodeSettings> s = ResolveNodeSettings(r, {}, Table());
  KDIST_ASSERT_OK(s);
  const std::string first = AttemptToken(*s, 0);
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(first, AttemptToken(*s, 0));
  EXPECT_NE(first, AttemptToken(*s, 1));
  EXPECT_EQ(first.find(kGoodToken), std::string::npos);
  NodeRequest other = r;
  other.job_id = "run-8";
  Result<NodeSettings> t = ResolveNodeSettings(other, {}, Table());
  KDIST_ASSERT_OK(t);
  EXPECT_NE(first, AttemptToken(*t, 0));
}

}  // namespace
}  // namespace kdist

namespace kdist {
namespace {

// `--rendezvous etcd://...` (issue 53): the book kept in etcd.
TEST(NodeSettingsEtcd, EtcdNeedsAJobIdAndATokenOffLoopback) {
  NodeRequest request = Agent("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379");
  Result<NodeSettings> no_token = ResolveNodeSettings(request, {}, Table());
  EXPECT_EQ(no_token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_token.status().message().find("needs a token"), std::string::npos);
  request.token = kGoodToken;
  Result<NodeSettings> no_id = ResolveNodeSettings(request, {}, Table());
  EXPECT_EQ(no_id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_id.status().message().find("--job-id"), std::string::npos)
      << no_id.status().message();
  request.job_id = "train-7";
  Result<NodeSettings> s = ResolveNodeSettings(request, {{"KDIST_UNREACHABLE_TIMEOUT", "3"}}, Table());
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->store, RendezvousStore::kEtcd);
  EXPECT_FALSE(s->loopback);
  ASSERT_EQ(s->etcd.endpoints.size(), 3u);
  EXPECT_EQ(s->etcd.endpoints[2].Url(), "http://10.0.0.3:2379");
  EXPECT_EQ(s->etcd.prefix, "kdist");
  EXPECT_EQ(s->rendezvous.value,
            "etcd://http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379/kdist");
  EXPECT_EQ(s->job_id.value, "train-7");
  // The book's detached nodes have the unreachable window to come back.
  EXPECT_TRUE(BookOptionsFor(*s).reconnect_window == seconds(3));
  // etcd forgets a silent machine after the silence that ends an embedded connection.
  EXPECT_EQ(s->etcd_lease_seconds, 2);
}

TEST(NodeSettingsEtcd, TheLeaseIsTheSilenceThatEndsAConnection) {
  // KeepaliveFor: the window less one probe interval (a tenth, at least 1 s), rounded up.
  EXPECT_EQ(EtcdLeaseSeconds(seconds(3)), 2);
  EXPECT_EQ(EtcdLeaseSeconds(seconds(20)), 18);
  EXPECT_EQ(EtcdLeaseSeconds(std::chrono::milliseconds(4500)), 4);  // 3.5 s of silence
  EXPECT_EQ(EtcdLeaseSeconds(seconds(60)), 54);
  // etcd's shortest lease: never under 2 s, whatever the window.
  EXPECT_EQ(EtcdLeaseSeconds(seconds(1)), 2);
  for (int64_t w = 1; w <= 120; ++w) {
    const int64_t lease = EtcdLeaseSeconds(seconds(w));
    EXPECT_GE(lease, 2) << w;
    EXPECT_LE(lease, std::max<int64_t>(2, w)) << w;  // never longer than the window
  }
}

TEST(NodeSettingsEtcd, UnderSlurmTheJobIdIsTheAllocations) {
  NodeRequest request = Agent("etcd://127.0.0.1:2379/team-a");
  Result<NodeSettings> s = ResolveNodeSettings(
      request, {{"SLURM_JOB_ID", "4242"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_NODEID", "0"}},
      Table());
  KDIST_ASSERT_OK(s);
  EXPECT_EQ(s->job_id.value, "4242");
  EXPECT_EQ(s->job_id.source, "SLURM_JOB_ID");
  EXPECT_TRUE(s->loopback);  // every endpoint on loopback: no token needed
  EXPECT_EQ(s->etcd.prefix, "team-a");
}

TEST(NodeSettingsEtcd, AJobIdThatCannotNameKeysAndServeAreRefused) {
  NodeRequest request = Agent("etcd://127.0.0.1:2379");
  request.job_id = "a/b";
  Result<NodeSettings> bad = ResolveNodeSettings(request, {}, Table());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("names the job's keys"), std::string::npos);
  NodeRequest serve = Agent("etcd://127.0.0.1:2379");
  serve.serve_only = true;
  Result<NodeSettings> served = ResolveNodeSettings(serve, {}, Table());
  EXPECT_EQ(served.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(served.status().message().find("kdist rendezvous serve binds HOST:PORT"),
            std::string::npos);
}

TEST(NodeSettingsEtcd, AShortTokenIsRefusedOffLoopback) {
  NodeRequest request = Agent("etcd://https://10.0.0.1:2379");
  request.job_id = "j";
  request.token = "short";
  Result<NodeSettings> s = ResolveNodeSettings(request, {}, Table());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("expected at least 16"), std::string::npos);
}

}  // namespace
}  // namespace kdist
