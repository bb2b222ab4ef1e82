// The server and the agent together over loopback, with the real clock: whole
// exchanges as `kdist launch --nodes` runs them (the decisions themselves are
// rendezvous_book_test.cc's).
#include "rendezvous/rendezvous_server.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <thread>

#include "rendezvous/rendezvous_agent.h"
#include "rendezvous/rendezvous_state.h"
#include "roll_call/consistency.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class Lines {
 public:
  void Add(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ += line + "\n";
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }
  RendezvousServer::Log Sink() {
    return [this](const std::string& line) { Add(line); };
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

RendezvousServerOptions ServerOptions(int64_t min_nodes, int64_t max_nodes) {
  RendezvousServerOptions o;
  o.book.job_id = "job";
  o.book.min_nodes = min_nodes;
  o.book.max_nodes = max_nodes;
  o.book.processes_per_node = 2;
  o.book.last_call = seconds(30);
  o.book.join_timeout = seconds(60);
  o.book.token = "s3cret";
  o.progress_every = milliseconds(200);
  return o;
}

NodeHello Hello(const std::string& name, int64_t min_nodes, int64_t max_nodes) {
  NodeHello h;
  h.job_id = "job";
  h.node_name = name;
  h.host = "box-" + name;
  h.pid = 1;
  h.processes_per_node = 2;
  h.min_nodes = min_nodes;
  h.max_nodes = max_nodes;
  h.coordinator_port = 45000;
  h.environment = EncodeFingerprint({{"jax", "0.7.0", false}});
  return h;
}

RendezvousAgentOptions AgentOptions(uint16_t port, const std::string& token = "s3cret") {
  RendezvousAgentOptions o;
  o.rendezvous = *EndpointFromLiteral("127.0.0.1", port);
  o.where = "127.0.0.1:" + std::to_string(port);
  o.token = token;
  o.join_timeout = seconds(20);
  o.progress_every = milliseconds(100);
  return o;
}

// Joins, then reads replies until the roster or the end.
Result<NodeReply> JoinAndWait(RendezvousAgent& agent, NodeHello hello) {
  KDIST_RETURN_IF_ERROR(agent.Join(std::move(hello)));
  while (true) {
    Result<NodeReply> reply = agent.Next(seconds(30));
    if (!reply.ok() || reply->kind != NodeReplyKind::kWaiting) return reply;
  }
}

struct Fixture {
  RealClock clock;
  Lines lines;
  std::unique_ptr<RendezvousServer> server;
  uint16_t Start(RendezvousServerOptions options) {
    server = std::make_unique<RendezvousServer>(std::move(options), clock, lines.Sink());
    EXPECT_TRUE(server->Listen(*EndpointFromLiteral("127.0.0.1", 0)).ok());
    EXPECT_TRUE(server->Start().ok());
    return server->port();
  }
};

TEST(RendezvousServer, TwoAgentsFormRunAndEndTogether) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(2, 2));
  RealClock clock_a, clock_b;
  Lines log_a, log_b;
  RendezvousAgent a(AgentOptions(port), clock_a, log_a.Sink());
  RendezvousAgent b(AgentOptions(port), clock_b, log_b.Sink());
  auto roster_a = std::async(std::launch::async, [&] { return JoinAndWait(a, Hello("a", 2, 2)); });
  auto roster_b = std::async(std::launch::async, [&] { return JoinAndWait(b, Hello("b", 2, 2)); });
  Result<NodeReply> ra = roster_a.get();
  Result<NodeReply> rb = roster_b.get();
  KDIST_ASSERT_OK(ra);
  KDIST_ASSERT_OK(rb);
  ASSERT_EQ(ra->kind, NodeReplyKind::kRoster);
  ASSERT_EQ(rb->kind, NodeReplyKind::kRoster);
  EXPECT_EQ(ra->node_rank + rb->node_rank, 1);  // 0 and 1
  EXPECT_EQ(ra->coordinator_host, "127.0.0.1");
  EXPECT_EQ(ra->coordinator_port, 45000);
  EXPECT_EQ(ra->node_count, 2);
  EXPECT_EQ(rb->node_count, 2);

  NodeReport report;
  report.attempt = 0;
  report.coordinator_port = 45001;
  KDIST_ASSERT_OK(a.SendReport(report));
  KDIST_ASSERT_OK(b.SendReport(report));
  Result<NodeReply> end_a = a.Next(seconds(30));
  Result<NodeReply> end_b = b.Next(seconds(30));
  KDIST_ASSERT_OK(end_a);
  KDIST_ASSERT_OK(end_b);
  EXPECT_EQ(end_a->kind, NodeReplyKind::kEnd);
  EXPECT_EQ(end_a->exit_status, 0);
  EXPECT_EQ(end_b->exit_status, 0);
  ASSERT_TRUE(f.server->Wait(seconds(30)));
  EXPECT_EQ(f.server->exit_status(), 0);
  EXPECT_NE(f.server->AttemptTable().find("finished"), std::string::npos);
  EXPECT_EQ(f.lines.Text().find("s3cret"), std::string::npos);  // never printed
  // One line an attempt, not one a node.
  const std::string text = f.lines.Text();
  const size_t line = text.find("attempt 0: 2 nodes of 2 processes, coordinator 127.0.0.1:45000");
  ASSERT_NE(line, std::string::npos) << text;
  EXPECT_EQ(text.find("attempt 0:", line + 1), std::string::npos) << text;
}

// The room for connections not admitted yet is counted, not scanned: an admitted agent
// frees its room, so with room for one, agents joining one after another are all admitted.
TEST(RendezvousServer, AnAdmittedAgentFreesItsRoomForTheNext) {
  Fixture f;
  RendezvousServerOptions options = ServerOptions(3, 3);
  options.max_unadmitted = 1;
  const uint16_t port = f.Start(options);
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  RendezvousAgent b(AgentOptions(port), clock, log.Sink());
  RendezvousAgent c(AgentOptions(port), clock, log.Sink());
  KDIST_ASSERT_OK(a.Join(Hello("a", 3, 3)));
  KDIST_ASSERT_OK(b.Join(Hello("b", 3, 3)));
  KDIST_ASSERT_OK(c.Join(Hello("c", 3, 3)));
  Result<NodeReply> roster = c.Next(seconds(30));
  KDIST_ASSERT_OK(roster);
  EXPECT_EQ(roster->kind, NodeReplyKind::kRoster);
  EXPECT_EQ(roster->node_count, 3);
}

// A connection that sends no hello is dropped at hello_timeout, and its room is free again.
TEST(RendezvousServer, AConnectionSilentPastTheHelloTimeoutIsDroppedAndItsRoomFreed) {
  Fixture f;
  RendezvousServerOptions options = ServerOptions(1, 1);
  options.max_unadmitted = 1;
  options.hello_timeout = milliseconds(200);
  const uint16_t port = f.Start(options);
  Connecting silent = StartConnect(*EndpointFromLiteral("127.0.0.1", port));
  ASSERT_NE(silent.io.state, IoState::kError);
  std::this_thread::sleep_for(milliseconds(800));  // past the timeout, and a wake or two
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  Result<NodeReply> roster = JoinAndWait(a, Hello("a", 1, 1));
  KDIST_ASSERT_OK(roster);
  EXPECT_EQ(roster->kind, NodeReplyKind::kRoster);
  // The silent connection was closed: its challenge, then the end of the stream (or a reset).
  char buffer[256];
  Io io{IoState::kDone, 0, 0};
  for (int reads = 0; reads < 100 && io.state == IoState::kDone; ++reads) {
    std::vector<pollfd> fds = {{silent.fd.get(), POLLIN, 0}};
    ASSERT_GT(Poll(fds, seconds(10)), 0);
    io = ReadSome(silent.fd.get(), buffer, sizeof buffer);
  }
  EXPECT_TRUE(io.state == IoState::kEof || io.state == IoState::kError);
}

TEST(RendezvousServer, AWrongTokenIsRefusedOnBothSidesAndTheJobStillForms) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(2, 2));
  RealClock clock;
  Lines log;
  RendezvousAgent intruder(AgentOptions(port, "guess"), clock, log.Sink());
  KDIST_EXPECT_ERROR(intruder.Join(Hello("x", 2, 2)), StatusCode::kFailedPrecondition,
                     "its token is not the rendezvous's");
  EXPECT_NE(f.lines.Text().find("refused node x"), std::string::npos) << f.lines.Text();
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  RendezvousAgent b(AgentOptions(port), clock, log.Sink());
  auto ra = std::async(std::launch::async, [&] { return JoinAndWait(a, Hello("a", 2, 2)); });
  Result<NodeReply> rb = JoinAndWait(b, Hello("b", 2, 2));
  KDIST_ASSERT_OK(rb);
  EXPECT_EQ(rb->kind, NodeReplyKind::kRoster);
  EXPECT_EQ(ra.get()->kind, NodeReplyKind::kRoster);
}

TEST(RendezvousServer, AnAgentWaitsForALateRendezvousSayingWhatItWaitsFor) {
  // A port that is free now and taken by the server only later.
  Result<Listener> probe = ListenOn(*EndpointFromLiteral("127.0.0.1", 0), 1);
  KDIST_ASSERT_OK(probe);
  const uint16_t port = probe->port;
  probe->fd.Close();
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  RendezvousServerOptions options = ServerOptions(1, 1);
  auto joined = std::async(std::launch::async, [&] { return JoinAndWait(a, Hello("a", 1, 1)); });
  std::this_thread::sleep_for(milliseconds(500));
  Fixture f;
  f.server = std::make_unique<RendezvousServer>(options, f.clock, f.lines.Sink());
  KDIST_ASSERT_OK(f.server->Listen(*EndpointFromLiteral("127.0.0.1", port)));
  KDIST_ASSERT_OK(f.server->Start());
  Result<NodeReply> roster = joined.get();
  KDIST_ASSERT_OK(roster);
  EXPECT_EQ(roster->kind, NodeReplyKind::kRoster);
  EXPECT_NE(log.Text().find("waiting for the nodes' rendezvous at 127.0.0.1:"), std::string::npos)
      << log.Text();
}

TEST(RendezvousServer, AnAgentGivesUpAtItsJoinTimeout) {
  Result<Listener> probe = ListenOn(*EndpointFromLiteral("127.0.0.1", 0), 1);
  KDIST_ASSERT_OK(probe);
  const uint16_t port = probe->port;
  probe->fd.Close();
  RealClock clock;
  Lines log;
  RendezvousAgentOptions options = AgentOptions(port);
  options.join_timeout = milliseconds(400);
  RendezvousAgent a(options, clock, log.Sink());
  KDIST_EXPECT_ERROR(a.Join(Hello("a", 1, 1)), StatusCode::kDeadlineExceeded,
                     "did not answer within");
}

TEST(RendezvousServer, TooFewNodesAtTheJoinTimeoutEndsWith75) {
  Fixture f;
  RendezvousServerOptions options = ServerOptions(2, 2);
  options.book.join_timeout = milliseconds(800);
  const uint16_t port = f.Start(options);
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  Result<NodeReply> end = JoinAndWait(a, Hello("a", 2, 2));
  KDIST_ASSERT_OK(end);
  EXPECT_EQ(end->kind, NodeReplyKind::kEnd);
  EXPECT_EQ(end->exit_status, kExitNotEnoughNodes);
  EXPECT_NE(end->message.find("1 of 2 nodes joined (a at 127.0.0.1)"), std::string::npos)
      << end->message;
  ASSERT_TRUE(f.server->Wait(seconds(30)));
  EXPECT_EQ(f.server->exit_status(), kExitNotEnoughNodes);
}

TEST(RendezvousServer, AnAgentThatLosesTheRendezvousIsToldAtOnce) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(1, 1));
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  Result<NodeReply> roster = JoinAndWait(a, Hello("a", 1, 1));
  KDIST_ASSERT_OK(roster);
  f.server->Stop();
  KDIST_EXPECT_ERROR(a.Next(seconds(30)), StatusCode::kUnavailable, "lost the nodes' rendezvous");
}

TEST(RendezvousServer, AConnectionThatDoesNotSpeakTheProtocolIsDroppedAlone) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(1, 1));
  Connecting c = StartConnect(*EndpointFromLiteral("127.0.0.1", port));
  ASSERT_NE(c.io.state, IoState::kError);
  std::this_thread::sleep_for(milliseconds(100));
  (void)WriteSome(c.fd.get(), "GET / HTTP/1.1\r\n\r\n");
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(port), clock, log.Sink());
  Result<NodeReply> roster = JoinAndWait(a, Hello("a", 1, 1));
  KDIST_ASSERT_OK(roster);
  EXPECT_EQ(roster->kind, NodeReplyKind::kRoster);
}

TEST(RendezvousServer, KdistStopStopsEveryNodeAtOneStepAndEachLeavesWith143) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(2, 2));
  RealClock clock_a, clock_b, clock_s;
  Lines log_a, log_b, log_s;
  RendezvousAgent a(AgentOptions(port), clock_a, log_a.Sink());
  RendezvousAgent b(AgentOptions(port), clock_b, log_b.Sink());
  auto roster_a = std::async(std::launch::async, [&] { return JoinAndWait(a, Hello("a", 2, 2)); });
  auto roster_b = std::async(std::launch::async, [&] { return JoinAndWait(b, Hello("b", 2, 2)); });
  Result<NodeReply> ra = roster_a.get();
  KDIST_ASSERT_OK(ra);
  KDIST_ASSERT_OK(roster_b.get());
  EXPECT_EQ(ra->run_id.size(), 32u);  // the job's run, drawn by the server
  EXPECT_EQ(ra->run_id, f.server->run_id());
  EXPECT_TRUE(f.server->formed());

  RendezvousAgent asker(AgentOptions(port), clock_s, log_s.Sink());
  NodeHello stop = Hello("kdist-stop", 0, 0);
  stop.purpose = NodePurpose::kStop;
  Result<NodeReply> answer = asker.Ask(stop);
  KDIST_ASSERT_OK(answer);
  EXPECT_EQ(answer->kind, NodeReplyKind::kEnd);
  EXPECT_NE(answer->message.find("stops at one agreed step on its 2 nodes"), std::string::npos)
      << answer->message;
  for (RendezvousAgent* agent : {&a, &b}) {
    Result<NodeReply> told = agent->Next(seconds(30));
    KDIST_ASSERT_OK(told);
    EXPECT_EQ(told->kind, NodeReplyKind::kStop);
    NodeReport report;
    report.attempt = 0;
    report.exit_status = 143;  // its processes stopped at the agreed step
    report.coordinator_port = 45001;
    KDIST_ASSERT_OK(agent->SendReport(report));
  }
  for (RendezvousAgent* agent : {&a, &b}) {
    Result<NodeReply> end = agent->Next(seconds(30));
    KDIST_ASSERT_OK(end);
    EXPECT_EQ(end->kind, NodeReplyKind::kEnd);
    EXPECT_EQ(end->exit_status, kExitDrained);
    EXPECT_NE(end->message.find("the job was stopped by kdist stop (host box-kdist-stop"),
              std::string::npos)
        << end->message;
  }
  ASSERT_TRUE(f.server->Wait(seconds(30)));
  EXPECT_EQ(f.server->exit_status(), kExitDrained);
  EXPECT_NE(f.server->AttemptTable().find("stopped by kdist stop"), std::string::npos)
      << f.server->AttemptTable();
}

TEST(RendezvousServer, AbandonedWhileGatheringEveryAgentIsToldAndThePortIsFreed) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(2, 2));
  RealClock clock_a;
  Lines log_a;
  RendezvousAgent a(AgentOptions(port), clock_a, log_a.Sink());
  KDIST_ASSERT_OK(a.Join(Hello("a", 2, 2)));
  f.server->Abandon("the agent of node b, its machine, received SIGTERM");
  Result<NodeReply> end = a.Next(seconds(30));
  while (end.ok() && end->kind == NodeReplyKind::kWaiting) end = a.Next(seconds(30));
  KDIST_ASSERT_OK(end);
  EXPECT_EQ(end->kind, NodeReplyKind::kEnd);
  EXPECT_EQ(end->exit_status, kExitLostRendezvous);
  EXPECT_NE(end->message.find("ended while the job gathered: the agent of node b"),
            std::string::npos)
      << end->message;
  ASSERT_TRUE(f.server->Wait(seconds(30)));
  f.server->Stop();
  // The port is free again: a new rendezvous can bind it.
  RendezvousServer again(ServerOptions(2, 2), f.clock, f.lines.Sink());
  const Status rebound = again.Listen(*EndpointFromLiteral("127.0.0.1", port));
  EXPECT_TRUE(rebound.ok()) << rebound.message();
}

TEST(RendezvousServer, ATakenPortNamesItsHolder) {
  Fixture f;
  const uint16_t port = f.Start(ServerOptions(2, 2));
  RendezvousServer second(ServerOptions(2, 2), f.clock, f.lines.Sink());
  KDIST_EXPECT_ERROR(second.Listen(*EndpointFromLiteral("127.0.0.1", port)),
                     StatusCode::kAlreadyExists, "held by pid " + std::to_string(getpid()));
}

// The book kept in a store (`--rendezvous etcd://...`, issue 53): each change persisted
// before its messages leave, a refused persist fences the server, and another server
// restored from the last state takes the agents back.

struct Persisted {
  std::mutex mutex;
  std::vector<std::string> states;
  int refuse_from = 1 << 30;  // the first call refused (0-based)
  std::promise<void> held;     // set when a state of a running job is persisted
  std::shared_future<void> release;
  bool hold_running = false;
  bool told = false;
  RendezvousServer::Persist Hook() {
    return [this](const std::string& sealed) -> Status {
      bool wait = false;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (static_cast<int>(states.size()) >= refuse_from) return Unavailable("the store refused it");
        states.push_back(sealed);
        if (hold_running && !told && sealed.find("\"phase\":1") != std::string::npos) {
          told = true;
          wait = true;
        }
      }
      if (wait) {
        held.set_value();
        release.wait();
      }
      return Status::Ok();
    };
  }
  std::string Last() {
    std::lock_guard<std::mutex> lock(mutex);
    return states.empty() ? std::string() : states.back();
  }
};

TEST(RendezvousServerStore, EachChangeIsPersistedBeforeItsMessagesLeave) {
  Fixture f;
  Persisted store;
  std::promise<void> go;
  store.release = go.get_future().share();
  store.hold_running = true;
  f.server = std::make_unique<RendezvousServer>(ServerOptions(1, 1), f.clock, f.lines.Sink());
  f.server->PersistWith(store.Hook());
  KDIST_ASSERT_OK(f.server->Listen(*EndpointFromLiteral("127.0.0.1", 0)));
  KDIST_ASSERT_OK(f.server->Start());
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(f.server->port()), clock, log.Sink());
  auto joined = std::async(std::launch::async, [&] { return a.Join(Hello("a", 1, 1)); });
  // The job forms at once (MAX 1): its state is being persisted, and until that returns
  // neither the admission nor the roster leaves.
  ASSERT_EQ(store.held.get_future().wait_for(seconds(30)), std::future_status::ready);
  EXPECT_EQ(joined.wait_for(milliseconds(300)), std::future_status::timeout);
  go.set_value();
  KDIST_ASSERT_OK(joined.get());
  Result<NodeReply> roster = a.Next(seconds(30));
  KDIST_ASSERT_OK(roster);
  EXPECT_EQ(roster->kind, NodeReplyKind::kRoster);
  KDIST_EXPECT_OK(OpenBookState(store.Last(), "s3cret"));
}

TEST(RendezvousServerStore, ARefusedPersistFencesTheServer) {
  Fixture f;
  Persisted store;
  // Kept: the new book (persisted as the server starts) and a's admission; refused: the
  // next change.
  store.refuse_from = 2;
  f.server = std::make_unique<RendezvousServer>(ServerOptions(2, 2), f.clock, f.lines.Sink());
  f.server->PersistWith(store.Hook());
  KDIST_ASSERT_OK(f.server->Listen(*EndpointFromLiteral("127.0.0.1", 0)));
  KDIST_ASSERT_OK(f.server->Start());
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(f.server->port()), clock, log.Sink());
  RendezvousAgent b(AgentOptions(f.server->port()), clock, log.Sink());
  KDIST_ASSERT_OK(a.Join(Hello("a", 2, 2)));
  // b's admission would form the job: refused by the store, it is never delivered.
  EXPECT_FALSE(b.Join(Hello("b", 2, 2)).ok());
  ASSERT_TRUE(f.server->Wait(seconds(30)));
  EXPECT_TRUE(f.server->fenced());
  EXPECT_EQ(f.server->exit_status(), kExitLostRendezvous);
  KDIST_EXPECT_ERROR(a.Next(seconds(30)), StatusCode::kUnavailable, "lost the nodes' rendezvous");
  EXPECT_NE(f.lines.Text().find("no longer runs the nodes' rendezvous (the store refused it)"),
            std::string::npos)
      << f.lines.Text();
}

TEST(RendezvousServerStore, AServerRestoredFromTheLastStateTakesTheAgentsBack) {
  Persisted store;
  Fixture first;
  first.server = std::make_unique<RendezvousServer>(ServerOptions(1, 2), first.clock, first.lines.Sink());
  first.server->PersistWith(store.Hook());
  KDIST_ASSERT_OK(first.server->Listen(*EndpointFromLiteral("127.0.0.1", 0)));
  KDIST_ASSERT_OK(first.server->Start());
  RealClock clock;
  Lines log;
  RendezvousAgent a(AgentOptions(first.server->port()), clock, log.Sink());
  RendezvousAgent b(AgentOptions(first.server->port()), clock, log.Sink());
  NodeHello hello_a = Hello("a", 1, 2), hello_b = Hello("b", 1, 2);
  hello_b.pid = 2;
  auto ra = std::async(std::launch::async, [&] { return JoinAndWait(a, hello_a); });
  Result<NodeReply> rb = JoinAndWait(b, hello_b);
  KDIST_ASSERT_OK(rb);
  ASSERT_EQ(rb->kind, NodeReplyKind::kRoster);
  KDIST_ASSERT_OK(ra.get());
  first.server->Stop();  // its machine is lost

  Fixture second;
  second.server = std::make_unique<RendezvousServer>(ServerOptions(1, 2), second.clock, second.lines.Sink());
  second.server->PersistWith(store.Hook());
  Result<std::vector<std::string>> detached = second.server->Restore(store.Last());
  KDIST_ASSERT_OK(detached);
  std::sort(detached->begin(), detached->end());  // in rank order: a and b joined at once
  EXPECT_EQ(*detached, (std::vector<std::string>{"a", "b"}));
  KDIST_ASSERT_OK(second.server->Listen(*EndpointFromLiteral("127.0.0.1", 0)));
  KDIST_ASSERT_OK(second.server->Start());
  RendezvousAgent a2(AgentOptions(second.server->port()), clock, log.Sink());
  hello_a.purpose = NodePurpose::kRejoin;
  KDIST_ASSERT_OK(a2.Join(hello_a));
  Result<NodeReply> again = a2.Next(seconds(30));  // the roster it may have missed
  KDIST_ASSERT_OK(again);
  EXPECT_EQ(again->kind, NodeReplyKind::kRoster);
  EXPECT_EQ(again->attempt, 0);
  EXPECT_EQ(again->coordinator_port, rb->coordinator_port);
  // b's machine is lost too (its key expired): a goes on alone, in attempt 1.
  second.server->NodeGone("b");
  NodeReport report;
  report.attempt = 0;
  report.exit_status = 1;
  report.coordinator_port = 46000;
  KDIST_ASSERT_OK(a2.SendReport(report));
  Result<NodeReply> next = a2.Next(seconds(30));
  KDIST_ASSERT_OK(next);
  ASSERT_EQ(next->kind, NodeReplyKind::kRoster);
  EXPECT_EQ(next->attempt, 1);
  EXPECT_EQ(next->node_count, 1);
  EXPECT_NE(next->ended.find("node lost: node b"), std::string::npos) << next->ended;
  EXPECT_NE(second.lines.Text().find("took the job's book over at attempt 0"), std::string::npos)
      << second.lines.Text();
}

}  // namespace
}  // namespace kdist
