#include "node_load.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "base/challenge.h"
#include "base/file_limit.h"
#include "base/wire.h"
#include "loopback_connect.h"
#include "net/event_poller.h"
#include "rendezvous/rendezvous_wire.h"

namespace kdist {
namespace {

constexpr Nanos kRound = std::chrono::milliseconds(10);
constexpr size_t kReadChunk = 4096;
constexpr std::string_view kChannel = "nodes' rendezvous";

// What an agent waits for in the scenario being played.
enum class Expect { kNothing, kRoster, kStop, kEnd };

enum class Stage { kIdle, kConnecting, kChallenge, kAdmission, kAdmitted, kEnded, kGone };

}  // namespace

struct NodeLoad::Agent {
  int64_t index = 0;
  std::string name;
  Fd fd;
  FrameAssembler in;
  std::string out;
  Stage stage = Stage::kIdle;
  bool watching_write = false;
  Nonce challenge{};
  Nonce nonce{};
  int64_t sequence = 1;    // its last frame's (the hello is 1)
  int64_t last_reply = 0;  // the last reply's
  int64_t attempt = -1;    // the attempt it runs (its last roster's)
  bool running = false;    // told a roster, neither ended nor gone
  bool draining = false;   // it sent a drain notice
  Expect expect = Expect::kNothing;
  int64_t end_status = 0;  // with kEnd: the status it must be told
  bool told = false;
};

class NodeLoad::Impl {
 public:
  Impl(NodeLoadOptions options, Clock& clock, EventPoller poller)
      : options_(std::move(options)), clock_(clock), poller_(std::move(poller)) {
    agents_.resize(static_cast<size_t>(options_.count));
    for (size_t i = 0; i < agents_.size(); ++i) Name(agents_[i], static_cast<int64_t>(i));
  }

  Result<NodeScenarioReport> Join();
  Result<NodeScenarioReport> Lose(int64_t index);
  Result<NodeScenarioReport> Drain(int64_t index);
  Result<NodeScenarioReport> Stopped();
  Result<NodeScenarioReport> Grow();
  Result<NodeScenarioReport> Finish();
  int64_t Running() const;

 private:
  void Name(Agent& a, int64_t index);
  // A new scenario: nobody told yet, `expected` to be told, reports that answer a stop
  // (Grow) or not.
  void Begin(int64_t expected, bool report_on_stop);
  // Plays until every agent expecting something was told (or the timeout, or nobody left
  // who could be): `start` is when the scenario began; `joining` are the agents to connect.
  Result<NodeScenarioReport> Play(const char* scenario, Nanos start, std::vector<size_t> joining);
  void Connect(Agent& a);
  void Queue(Agent& a, std::string bytes);
  void Flush(Agent& a);
  void Read(Agent& a);
  void OnFrame(Agent& a, const std::string& frame);
  void OnRoster(Agent& a, const NodeReply& roster);
  void OnStop(Agent& a, const NodeReply& stop);
  void OnEnd(Agent& a, const NodeReply& end);
  void SendReport(Agent& a, int64_t status, bool drain);
  void Told(Agent& a);
  void Wrong(const Agent& a, const std::string& what);
  void Gone(Agent& a, const std::string& why);
  uint64_t Key(const Agent& a) const { return static_cast<uint64_t>(a.index) + 1; }

  NodeLoadOptions options_;
  Clock& clock_;
  EventPoller poller_;
  std::vector<Agent> agents_;
  NodeScenarioReport report_;
  bool report_on_stop_ = false;
  int64_t expect_rosters_ = 0;  // agents of the scenario that must be told a roster
  int64_t unreachable_ = 0;     // agents of the scenario gone before they were told
  std::vector<char> ranks_;     // the ranks told in the scenario
  std::string coordinator_;     // "host:port" every roster of the scenario named
  size_t in_flight_ = 0;        // connecting, not admitted yet
  int64_t hellos_to_send_ = 0;
  Nanos last_hello_{0};
  Nanos last_told_{0};
};

void NodeLoad::Impl::Name(Agent& a, int64_t index) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%05lld", static_cast<long long>(index));
  a.index = index;
  a.name = options_.name_prefix + digits;
}

int64_t NodeLoad::Impl::Running() const {
  return std::count_if(agents_.begin(), agents_.end(), [](const Agent& a) { return a.running; });
}

void NodeLoad::Impl::Wrong(const Agent& a, const std::string& what) {
  if (report_.wrong++ == 0) report_.first_wrong = "agent " + a.name + ": " + what;
}

void NodeLoad::Impl::Gone(Agent& a, const std::string& why) {
  if (a.stage == Stage::kGone) return;
  if (a.stage == Stage::kConnecting || a.stage == Stage::kChallenge ||
      a.stage == Stage::kAdmission) {
    --in_flight_;
  }
  const bool ended = a.stage == Stage::kEnded;
  poller_.Remove(a.fd.get());
  a.fd.Close();
  a.stage = Stage::kGone;
  a.running = false;
  if (ended) return;  // the rendezvous closes an ended agent's connection: its word was said
  Wrong(a, why);
  if (a.expect != Expect::kNothing && !a.told) ++unreachable_;
}

void NodeLoad::Impl::Begin(int64_t expected, bool report_on_stop) {
  report_ = NodeScenarioReport{};
  report_.expected = expected;
  report_on_stop_ = report_on_stop;
  expect_rosters_ = 0;
  unreachable_ = 0;
  coordinator_.clear();
  for (Agent& a : agents_) {
    a.told = false;
    a.expect = Expect::kNothing;
  }
}

void NodeLoad::Impl::Told(Agent& a) {
  if (a.told) {
    ++report_.told_twice;
    return;
  }
  a.told = true;
  ++report_.told;
  last_told_ = clock_.Now();
}

void NodeLoad::Impl::Queue(Agent& a, std::string bytes) {
  a.out += bytes;
  Flush(a);
}

void NodeLoad::Impl::Flush(Agent& a) {
  if (a.stage == Stage::kGone || a.stage == Stage::kConnecting) return;
  size_t sent = 0;
  while (sent < a.out.size()) {
    const Io io = WriteSome(a.fd.get(), std::string_view(a.out).substr(sent));
    if (io.state == IoState::kWouldBlock) break;
    if (io.state != IoState::kDone) return Gone(a, "writing failed: " + ErrorText(io.error));
    sent += io.bytes;
  }
  a.out.erase(0, sent);
  const bool want = !a.out.empty();
  if (want != a.watching_write) {
    a.watching_write = want;
    (void)poller_.WatchWrite(a.fd.get(), Key(a), want);
  }
}

void NodeLoad::Impl::Connect(Agent& a) {
  Connecting c = ConnectFrom(options_.rendezvous, static_cast<size_t>(a.index));
  ++in_flight_;
  a.stage = Stage::kConnecting;
  if (c.io.state == IoState::kError) return Gone(a, "connect failed: " + ErrorText(c.io.error));
  a.fd = std::move(c.fd);
  a.out = EncodeOpening();  // as kdist's agent opens
  a.watching_write = true;
  if (!poller_.Add(a.fd.get(), Key(a), /*want_write=*/true).ok()) {
    return Gone(a, "epoll_ctl failed (out of file descriptors?)");
  }
  if (c.io.state == IoState::kDone) {
    a.stage = Stage::kChallenge;
    Flush(a);
  }
}

void NodeLoad::Impl::SendReport(Agent& a, int64_t status, bool drain) {
  NodeReport report;
  report.sequence = ++a.sequence;
  report.attempt = a.attempt;
  report.exit_status = status;
  report.coordinator_port = 10000 + (a.index + 7 * report.attempt) % 50000;  // a "fresh" port
  report.drain = drain;
  Queue(a, EncodeSignedNodeReport(std::move(report), options_.token, a.challenge));
}

void NodeLoad::Impl::Read(Agent& a) {
  char buffer[kReadChunk];
  while (a.stage != Stage::kGone) {
    const Io io = ReadSome(a.fd.get(), buffer, sizeof buffer);
    if (io.state == IoState::kWouldBlock) return;
    if (io.state != IoState::kDone) {
      return Gone(a, io.state == IoState::kEof
                         ? "the rendezvous closed its connection"
                         : "reading failed: " + ErrorText(io.error));
    }
    if (Status appended = a.in.Append(std::string_view(buffer, io.bytes)); !appended.ok()) {
      return Gone(a, "the rendezvous sent bytes that are not a frame: " + appended.message());
    }
    for (std::string frame = a.in.TakeFrame(); !frame.empty() && a.stage != Stage::kGone;
         frame = a.in.TakeFrame()) {
      OnFrame(a, frame);
    }
  }
}

void NodeLoad::Impl::OnFrame(Agent& a, const std::string& frame) {
  if (a.stage == Stage::kChallenge) {
    Result<Challenge> challenge = DecodeChallenge(frame, kChannel);
    if (!challenge.ok()) return Gone(a, "no challenge: " + challenge.status().message());
    a.challenge = challenge->nonce;
    NodeHello hello;
    hello.job_id = options_.job_id;
    hello.node_name = a.name;
    hello.host = options_.name_prefix + "host-" + std::to_string(a.index);
    hello.pid = 100000 + a.index;
    hello.processes_per_node = options_.processes_per_node;
    hello.min_nodes = options_.min_nodes;
    hello.max_nodes = options_.max_nodes;
    hello.coordinator_port = 10000 + a.index % 50000;
    hello.environment = options_.environment;
    hello.nonce = a.nonce;
    a.stage = Stage::kAdmission;
    Queue(a, EncodeSignedNodeHello(std::move(hello), options_.token, a.challenge));
    if (--hellos_to_send_ == 0) last_hello_ = clock_.Now();
    return;
  }
  // Every reply checked as kdist's agent checks it: signed over this agent's nonce and
  // numbered after the last one; a refusal is believed unsigned (it only ends this agent).
  Result<NodeReply> reply = DecodeNodeReply(frame);
  if (!reply.ok()) return Wrong(a, "an unreadable reply: " + reply.status().message());
  if (reply->kind == NodeReplyKind::kRefused) {  // its end: the rendezvous closes next
    Wrong(a, "refused: " + reply->message);
    if (a.stage == Stage::kAdmission) --in_flight_;
    a.stage = Stage::kEnded;
    a.running = false;
    if (a.expect != Expect::kNothing && !a.told) ++unreachable_;
    return;
  }
  if (!NodeFrameVerifies(frame, reply->mac, options_.token, a.nonce) ||
      reply->sequence <= a.last_reply) {
    return Wrong(a, "a reply that does not verify (or out of order: " +
                        std::to_string(reply->sequence) + " after " +
                        std::to_string(a.last_reply) + ")");
  }
  a.last_reply = reply->sequence;
  switch (reply->kind) {
    case NodeReplyKind::kWaiting: return;  // a progress line
    case NodeReplyKind::kAdmitted:
      if (a.stage != Stage::kAdmission) return Wrong(a, "admitted twice");
      a.stage = Stage::kAdmitted;
      --in_flight_;
      return;
    case NodeReplyKind::kRefused: return;  // above
    case NodeReplyKind::kRoster: return OnRoster(a, *reply);
    case NodeReplyKind::kStop: return OnStop(a, *reply);
    case NodeReplyKind::kEnd: return OnEnd(a, *reply);
  }
}

void NodeLoad::Impl::OnRoster(Agent& a, const NodeReply& roster) {
  if (a.expect != Expect::kRoster) {
    return Wrong(a, "an unexpected roster (attempt " + std::to_string(roster.attempt) + ")");
  }
  if (a.told) return Told(a);  // a second roster in one scenario: told_twice
  const std::string coordinator =
      roster.coordinator_host + ":" + std::to_string(roster.coordinator_port);
  if (coordinator_.empty()) {
    coordinator_ = coordinator;
    report_.attempt = roster.attempt;
    report_.node_count = roster.node_count;
    ranks_.assign(static_cast<size_t>(std::max<int64_t>(roster.node_count, 0)), 0);
  } else if (roster.attempt != report_.attempt || roster.node_count != report_.node_count ||
             coordinator != coordinator_) {
    Wrong(a, "told attempt " + std::to_string(roster.attempt) + " of " +
                 std::to_string(roster.node_count) + " nodes, coordinator " + coordinator +
                 "; another agent was told attempt " + std::to_string(report_.attempt) + " of " +
                 std::to_string(report_.node_count) + " nodes, coordinator " + coordinator_);
  }
  if (roster.processes_per_node != options_.processes_per_node) {
    Wrong(a, "told " + std::to_string(roster.processes_per_node) + " processes per node");
  }
  if (roster.node_rank < 0 || roster.node_rank >= static_cast<int64_t>(ranks_.size())) {
    Wrong(a, "told rank " + std::to_string(roster.node_rank) + " of " +
                 std::to_string(ranks_.size()) + " nodes");
  } else if (ranks_[static_cast<size_t>(roster.node_rank)]++ != 0) {
    Wrong(a, "told rank " + std::to_string(roster.node_rank) + ", which another agent holds");
  }
  a.attempt = roster.attempt;
  a.running = true;
  Told(a);
}

void NodeLoad::Impl::OnStop(Agent& a, const NodeReply& stop) {
  if (!a.running || stop.attempt != a.attempt) {
    return Wrong(a, "told to stop attempt " + std::to_string(stop.attempt) + " while running " +
                        (a.running ? "attempt " + std::to_string(a.attempt) : "none"));
  }
  if (a.expect == Expect::kStop) {
    report_.attempt = stop.attempt;
    return Told(a);
  }
  if (report_on_stop_ && a.expect == Expect::kRoster) {
    // Its processes stop at the agreed step (SIGTERM; BackupAndRestore saves) and it
    // reports at once.
    return SendReport(a, 143, false);
  }
  Wrong(a, "an unexpected stop of attempt " + std::to_string(stop.attempt));
}

void NodeLoad::Impl::OnEnd(Agent& a, const NodeReply& end) {
  a.running = false;
  a.stage = Stage::kEnded;
  if (a.expect != Expect::kEnd || end.exit_status != a.end_status) {
    return Wrong(a, "told to end with status " + std::to_string(end.exit_status) + ": " +
                        end.message);
  }
  report_.exit_status = end.exit_status;
  ++report_.ended;
  Told(a);
}

Result<NodeScenarioReport> NodeLoad::Impl::Play(const char* scenario, Nanos start,
                                                std::vector<size_t> joining) {
  const Nanos deadline = start + options_.timeout;
  hellos_to_send_ = static_cast<int64_t>(joining.size());
  last_hello_ = Nanos(0);
  size_t next = 0;
  while (report_.told + unreachable_ < report_.expected) {
    const Nanos now = clock_.Now();
    if (now >= deadline) {
      return DeadlineExceeded(
          std::string("the nodes' load generator's ") + scenario + " timed out after " +
          std::to_string(options_.timeout.count() / 1000000) + " ms: " +
          std::to_string(report_.told) + " of " + std::to_string(report_.expected) +
          " simulated agents were told its outcome" +
          (report_.first_wrong.empty() ? "" : "; first wrong: " + report_.first_wrong));
    }
    while (in_flight_ < options_.max_connecting && next < joining.size()) {
      Connect(agents_[joining[next++]]);
    }
    Result<std::vector<EventPoller::Event>> events =
        poller_.Wait(std::min(kRound, deadline - now));
    if (!events.ok()) return events.status();
    for (const EventPoller::Event& event : *events) {
      Agent& a = agents_[static_cast<size_t>(event.key - 1)];
      if (a.stage == Stage::kGone) continue;
      if (a.stage == Stage::kConnecting && (event.writable || event.readable)) {
        if (const int error = ConnectResult(a.fd.get()); error != 0) {
          Gone(a, "connect failed: " + ErrorText(error));
          continue;
        }
        a.stage = Stage::kChallenge;
      }
      if (event.writable) Flush(a);
      if (event.readable && a.stage != Stage::kGone) Read(a);
    }
  }
  if (!coordinator_.empty() && report_.node_count != expect_rosters_) {
    const std::string what = std::string("the ") + scenario + "'s rosters named " +
                             std::to_string(report_.node_count) + " nodes; expected " +
                             std::to_string(expect_rosters_);
    if (report_.wrong++ == 0) report_.first_wrong = what;
  }
  NodeScenarioReport out = report_;
  out.seconds = NanosToSeconds(last_told_ - start);
  if (last_hello_ > Nanos(0)) out.after_last_hello = NanosToSeconds(last_told_ - last_hello_);
  return out;
}

Result<NodeScenarioReport> NodeLoad::Impl::Join() {
  Begin(options_.count, false);
  std::vector<size_t> joining;
  for (Agent& a : agents_) {
    if (a.stage != Stage::kIdle) continue;
    KDIST_ASSIGN_OR_RETURN(a.nonce, FreshNonce());
    a.expect = Expect::kRoster;
    joining.push_back(static_cast<size_t>(a.index));
  }
  report_.expected = expect_rosters_ = static_cast<int64_t>(joining.size());
  return Play("join", clock_.Now(), std::move(joining));
}

Result<NodeScenarioReport> NodeLoad::Impl::Lose(int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(agents_.size()) ||
      !agents_[static_cast<size_t>(index)].running) {
    return InvalidArgument("no running simulated agent " + std::to_string(index));
  }
  Begin(Running() - 1, false);
  expect_rosters_ = report_.expected;
  const Nanos start = clock_.Now();
  Agent& lost = agents_[static_cast<size_t>(index)];
  poller_.Remove(lost.fd.get());
  lost.fd.Close();  // a plain close: the machine's agent is gone
  lost.stage = Stage::kGone;
  lost.running = false;
  for (Agent& a : agents_) {
    if (!a.running) continue;
    a.expect = Expect::kRoster;
    SendReport(a, 1, false);  // its processes were ended by the liveness channel
  }
  return Play("loss", start, {});
}

Result<NodeScenarioReport> NodeLoad::Impl::Drain(int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(agents_.size()) ||
      !agents_[static_cast<size_t>(index)].running) {
    return InvalidArgument("no running simulated agent " + std::to_string(index));
  }
  Begin(Running(), false);
  for (Agent& a : agents_) {
    if (a.running) a.expect = Expect::kStop;
  }
  const Nanos start = clock_.Now();
  Agent& drained = agents_[static_cast<size_t>(index)];
  drained.draining = true;
  SendReport(drained, 143, true);  // the drain notice
  return Play("drain", start, {});
}

Result<NodeScenarioReport> NodeLoad::Impl::Stopped() {
  Begin(Running(), false);
  const Nanos start = clock_.Now();
  for (Agent& a : agents_) {
    if (!a.running) continue;
    if (a.draining) {
      a.expect = Expect::kEnd;
      a.end_status = 143;
    } else {
      a.expect = Expect::kRoster;
      ++expect_rosters_;
    }
  }
  for (Agent& a : agents_) {
    if (a.running) SendReport(a, 143, false);  // stopped at the agreed step
  }
  return Play("re-form after the stop", start, {});
}

Result<NodeScenarioReport> NodeLoad::Impl::Grow() {
  Begin(Running() + 1, true);
  expect_rosters_ = report_.expected;
  for (Agent& a : agents_) {
    if (a.running) a.expect = Expect::kRoster;
  }
  agents_.emplace_back();
  Agent& added = agents_.back();
  Name(added, static_cast<int64_t>(agents_.size()) - 1);
  KDIST_ASSIGN_OR_RETURN(added.nonce, FreshNonce());
  added.expect = Expect::kRoster;
  return Play("growth", clock_.Now(), {agents_.size() - 1});
}

Result<NodeScenarioReport> NodeLoad::Impl::Finish() {
  Begin(Running(), false);
  const Nanos start = clock_.Now();
  for (Agent& a : agents_) {
    if (!a.running) continue;
    a.expect = Expect::kEnd;
    a.end_status = 0;
  }
  for (Agent& a : agents_) {
    if (a.running) SendReport(a, 0, false);
  }
  return Play("finish", start, {});
}

NodeLoad::NodeLoad() = default;
NodeLoad::~NodeLoad() = default;

Result<std::unique_ptr<NodeLoad>> NodeLoad::Create(NodeLoadOptions options, Clock& clock) {
  if (options.count < 0) {
    return InvalidArgument("the nodes' load generator needs count >= 0, got " +
                           std::to_string(options.count));
  }
  KDIST_ASSIGN_OR_RETURN(FileLimits limits, EnsureFileLimit(options.count + 16));
  (void)limits;
  KDIST_ASSIGN_OR_RETURN(EventPoller poller, EventPoller::Create());
  std::unique_ptr<NodeLoad> load(new NodeLoad());
  load->impl_ = std::make_unique<Impl>(std::move(options), clock, std::move(poller));
  return load;
}

Result<NodeScenarioReport> NodeLoad::Join() { return impl_->Join(); }
Result<NodeScenarioReport> NodeLoad::Lose(int64_t index) { return impl_->Lose(index); }
Result<NodeScenarioReport> NodeLoad::Drain(int64_t index) { return impl_->Drain(index); }
Result<NodeScenarioReport> NodeLoad::Stopped() { return impl_->Stopped(); }
Result<NodeScenarioReport> NodeLoad::Grow() { return impl_->Grow(); }
Result<NodeScenarioReport> NodeLoad::Finish() { return impl_->Finish(); }
int64_t NodeLoad::running() const { return impl_->Running(); }

}  // namespace kdist
