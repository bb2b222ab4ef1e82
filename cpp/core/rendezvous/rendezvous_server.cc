#include "rendezvous/rendezvous_server.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "base/file_limit.h"
#include "base/text.h"
#include "net/keepalive.h"
#include "base/challenge.h"
#include "base/hmac_sha256.h"
#include "net/port_owner.h"
#include "rendezvous/rendezvous_state.h"

namespace kdist {
namespace {

constexpr uint64_t kListenerKey = 0;
constexpr uint64_t kWakeKey = 1;
constexpr size_t kReadChunk = 4096;

}  // namespace

namespace {

// A fresh run id: 16 random bytes in hex ("" when the kernel has none to give).
std::string FreshRunId() {
  Result<Nonce> nonce = FreshNonce();
  if (!nonce.ok()) return "";
  return HexText(std::string_view(reinterpret_cast<const char*>(nonce->data()), nonce->size()));
}

// The options with the job's run id drawn and the ledger's wall clock set, when not given.
RendezvousServerOptions Completed(RendezvousServerOptions options) {
  if (options.book.run_id.empty()) options.book.run_id = FreshRunId();
  if (options.book.ledger.wall_start_unix_millis == 0) {
    options.book.ledger.wall_start_unix_millis = WallClockMillis();
  }
  return options;
}

}  // namespace

RendezvousServer::RendezvousServer(RendezvousServerOptions options, Clock& clock, Log log)
    : options_(Completed(std::move(options))),
      clock_(clock),
      log_(std::move(log)),
      book_(options_.book, clock.Now()) {}

RendezvousServer::~RendezvousServer() { Stop(); }

Status RendezvousServer::Listen(const Endpoint& where) {
  // Room in the accept queue for every agent of the job connecting at once (a full queue
  // drops SYNs, which the kernel retries only after a second).
  Result<Listener> listener = ListenOn(where, ListenBacklog(options_.book.max_nodes));
  if (!listener.ok() && listener.status().code() == StatusCode::kAlreadyExists) {
    const std::string owner =
        DescribePortOwner(FindPortOwner(where.port(), clock_, std::chrono::seconds(1)));
    return AlreadyExists(listener.status().message() + (owner.empty() ? "" : ", " + owner));
  }
  KDIST_ASSIGN_OR_RETURN(listener_, std::move(listener));
  port_ = listener_.port;
  return Status::Ok();
}

Status RendezvousServer::Start() {
  if (!listener_.fd.valid()) return FailedPrecondition("the rendezvous server has no listener");
  // A descriptor per agent, and per connection not admitted yet.
  KDIST_RETURN_IF_ERROR(
      EnsureFileLimit(options_.book.max_nodes + options_.max_unadmitted).status());
  KDIST_ASSIGN_OR_RETURN(EventPoller poller, EventPoller::Create());
  poller_ = std::make_unique<EventPoller>(std::move(poller));
  KDIST_RETURN_IF_ERROR(poller_->Add(listener_.fd.get(), kListenerKey, false));
  return thread_.Start("the nodes' rendezvous", [this] { Loop(); });
}

void RendezvousServer::Stop() {
  thread_.Stop();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ended_) {
    ended_ = true;
    exit_status_ = kExitLostRendezvous;
    table_ = book_.AttemptTable();
    attempts_ = book_.Attempts();
    status_ = book_.StatusJson(clock_.Now(), std::numeric_limits<size_t>::max());
  }
  ended_cv_.notify_all();
}

void RendezvousServer::Abandon(std::string why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abandon_ = std::move(why);
  }
  thread_.Wake();
}

std::string RendezvousServer::StatusJson(Nanos timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_) return status_;
  const uint64_t wanted = ++status_asked_;
  lock.unlock();
  thread_.Wake();
  lock.lock();
  ended_cv_.wait_for(lock, timeout, [&] { return ended_ || status_served_ >= wanted; });
  return status_;
}

void RendezvousServer::ServeStatus(Nanos now) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_served_ >= status_asked_) return;
  }
  std::string status = book_.StatusJson(now, std::numeric_limits<size_t>::max());
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = std::move(status);
  status_served_ = status_asked_;
  ended_cv_.notify_all();
}

bool RendezvousServer::Wait(Nanos timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return ended_cv_.wait_for(lock, timeout, [this] { return ended_; });
}

void RendezvousServer::PersistWith(Persist persist) {
  persist_ = std::move(persist);
  options_.book.keep_environments = true;
  book_.KeepEnvironments();
}

Result<std::vector<std::string>> RendezvousServer::Restore(std::string_view sealed) {
  KDIST_ASSIGN_OR_RETURN(RendezvousBook book, RestoreBook(options_.book, sealed, clock_.Now(), WallClockMillis()));
  persisted_ = book.EncodeState();
  book_ = std::move(book);
  options_.book.run_id = book_.options().run_id;
  log_("this machine took the job's book over at attempt " +
       std::to_string(book_.attempt()) + " (" + book_.ProgressLine(clock_.Now()) + ")");
  return book_.DetachedNodes();
}

void RendezvousServer::NodeGone(std::string name) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    gone_.push_back(std::move(name));
  }
  thread_.Wake();
}

bool RendezvousServer::job_ended() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_ended_;
}

bool RendezvousServer::fenced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fenced_;
}

void RendezvousServer::TakeGoneNodes(Nanos now) {
  std::vector<std::string> gone;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    gone.swap(gone_);
  }
  for (const std::string& name : gone) {
    log_("node " + name + "'s agent is gone (its key in the job's store expired)");
    Decided(book_.NodeGone(name, now), now);
  }
}

void RendezvousServer::Decided(const std::vector<NodeMessage>& messages, Nanos now) {
  if (fenced_) return;
  if (persist_) {
    std::string state = book_.EncodeState();
    if (state != persisted_) {
      const Status kept = persist_(
          SealBookState(state, book_.OffsetOf(now), options_.book.token, WallClockMillis()));
      if (!kept.ok()) {
        Fence(kept);
        return;
      }
      persisted_ = std::move(state);
    }
  }
  Deliver(messages);
}

void RendezvousServer::Fence(const Status& why) {
  log_("this machine no longer runs the nodes' rendezvous (" + why.message() +
       "): it delivers nothing more; another machine takes the job's book over from the store");
  std::lock_guard<std::mutex> lock(mutex_);
  fenced_ = true;
}

int64_t RendezvousServer::exit_status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exit_status_;
}

std::vector<AttemptRow> RendezvousServer::Attempts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return attempts_;
}

std::string RendezvousServer::AttemptTable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return table_;
}

void RendezvousServer::Loop() {
  if (poller_->Add(thread_.wake_fd(), kWakeKey, false).ok()) {
    // (when it fails, Stop still ends the loop at its next bounded wait)
  }
  Nanos next_progress = clock_.Now() + options_.progress_every;
  std::optional<Nanos> ended_at;
  while (!thread_.stopping() && !fenced_) {
    Nanos now = clock_.Now();
    Nanos wait = std::chrono::milliseconds(500);
    if (std::optional<Nanos> next = book_.NextDeadline()) wait = std::min(wait, *next - now);
    Result<std::vector<EventPoller::Event>> events = poller_->Wait(std::max(wait, Nanos(0)));
    now = clock_.Now();
    if (events.ok()) {
      for (const EventPoller::Event& event : *events) {
        if (event.key == kWakeKey) {
          thread_.DrainWake();
          TakeGoneNodes(now);
        } else if (event.key == kListenerKey) {
          AcceptAll(now);
        } else {
          if (event.readable) ReadFrom(event.key, now);
          if (event.writable) Flush(event.key);
        }
      }
    }
    Decided(book_.Tick(now), now);
    if (fenced_) break;
    std::optional<std::string> abandon;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abandon.swap(abandon_);
    }
    if (abandon) Decided(book_.Abandon(*abandon, now), now);
    if (book_.formed()) formed_ = true;  // a restored book may have formed already
    if (fenced_) break;
    DropLate(now);
    if (fenced_) break;
    if (book_.phase() == RendezvousBook::Phase::kGathering && now >= next_progress) {
      const std::string line = book_.ProgressLine(now);
      if (options_.log_progress) log_(line);
      std::vector<NodeMessage> waiting;
      for (const auto& [key, c] : connections_) {
        if (!c.admitted) continue;
        NodeMessage m;
        m.connection = key;
        m.reply.kind = NodeReplyKind::kWaiting;
        m.reply.message = line;
        waiting.push_back(std::move(m));
      }
      Deliver(waiting);
      next_progress = now + options_.progress_every;
    }
    if (book_.phase() == RendezvousBook::Phase::kEnded) {
      if (!ended_at) ended_at = now;
      bool flushed = std::all_of(connections_.begin(), connections_.end(),
                                 [](const auto& kv) { return kv.second.out.empty(); });
      if ((flushed || now - *ended_at >= options_.end_flush) &&
          now - *ended_at >= options_.linger) {
        break;
      }
    }
    ServeStatus(now);
  }
  for (auto& [key, c] : connections_) {
    poller_->Remove(c.fd.get());
    c.fd.Close();
  }
  connections_.clear();
  // The port is free the moment the rendezvous ends: a new one may serve it at once.
  poller_->Remove(listener_.fd.get());
  listener_.fd.Close();
  if (book_.phase() == RendezvousBook::Phase::kEnded && !fenced_) {
    log_("the job ended with status " + std::to_string(book_.exit_status()) +
         "; its attempts:\n" + book_.AttemptTable() + "goodput: " + book_.GoodputLine(clock_.Now()));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ended_) {
    ended_ = true;
    job_ended_ = book_.phase() == RendezvousBook::Phase::kEnded && !fenced_;
    exit_status_ = job_ended_ ? book_.exit_status() : kExitLostRendezvous;
    table_ = book_.AttemptTable();
    attempts_ = book_.Attempts();
    status_ = book_.StatusJson(clock_.Now(), std::numeric_limits<size_t>::max());
  }
  ended_cv_.notify_all();
}

void RendezvousServer::DropLate(Nanos now) {
  // Connections that never sent their hello in time: the oldest first, in the order they
  // were accepted, so each costs O(1) once, not a scan of every connection at every wake.
  while (!awaiting_hello_.empty()) {
    const auto [accepted, key] = awaiting_hello_.front();
    const auto it = connections_.find(key);
    if (it != connections_.end() && !it->second.admitted && !it->second.closing &&
        now - accepted < options_.hello_timeout) {
      break;
    }
    awaiting_hello_.pop_front();
    if (it != connections_.end() && !it->second.admitted && !it->second.closing) {
      Drop(key, now, false);
    }
  }
}

void RendezvousServer::AcceptAll(Nanos now) {
  while (true) {
    Accepted a = AcceptOne(listener_.fd.get());
    if (a.io.state != IoState::kDone) return;
    if (unadmitted_ >= options_.max_unadmitted) {
      a.fd.CloseWithReset();  // bounded: agents retry, a flood costs nothing
      continue;
    }
    Result<Nonce> nonce = FreshNonce();
    if (!nonce.ok()) {
      log_("dropped a connection: " + nonce.status().message());
      a.fd.CloseWithReset();
      continue;
    }
    const uint64_t key = next_key_++;
    Connection c;
    SetKeepalive(a.fd.get(), KeepaliveFor(options_.unreachable_timeout));
    c.peer = PeerAddress(a.fd.get());
    c.local = LocalAddress(a.fd.get());
    c.fd = std::move(a.fd);
    c.challenge = *nonce;
    c.accepted = now;
    c.out = EncodeChallenge(Challenge{*nonce});
    c.watching_write = false;
    if (!poller_->Add(c.fd.get(), key, false).ok()) continue;
    connections_.emplace(key, std::move(c));
    ++unadmitted_;
    awaiting_hello_.emplace_back(now, key);
    Flush(key);  // the challenge at once: a fresh socket has room for it (no wake, no epoll_ctl)
  }
}

void RendezvousServer::ReadFrom(uint64_t key, Nanos now) {
  auto it = connections_.find(key);
  if (it == connections_.end()) return;
  char buffer[kReadChunk];
  Io io = ReadSome(it->second.fd.get(), buffer, sizeof buffer);
  if (io.state == IoState::kWouldBlock) return;
  if (io.state != IoState::kDone) {
    Drop(key, now, true);
    return;
  }
  Connection& c = it->second;
  if (c.closing) return;
  if (!c.in.Append(std::string_view(buffer, io.bytes)).ok() ||
      (!c.admitted && c.in.buffered() > kMaxNodeHelloFrameBytes)) {
    Drop(key, now, true);
    return;
  }
  while (connections_.count(key) != 0) {
    std::string frame = connections_[key].in.TakeFrame();
    if (frame.empty()) break;
    HandleFrame(key, frame, now);
  }
  // An agent says something a few times a job: between frames its buffer holds nothing
  // (memory per agent, not the largest frame it ever sent).
  auto left = connections_.find(key);
  if (left != connections_.end() && left->second.in.buffered() == 0) {
    left->second.in = FrameAssembler();
  }
}

void RendezvousServer::HandleFrame(uint64_t key, const std::string& frame, Nanos now) {
  Connection& c = connections_[key];
  if (IsOpening(frame)) return;
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  if (!header.ok()) {
    Drop(key, now, true);
    return;
  }
  if (header->type == kFrameNodeHello && !c.admitted && !c.knows_agent_nonce) {
    Result<NodeHello> hello = DecodeNodeHello(frame);
    if (!hello.ok()) {
      log_("dropped a connection from " + c.peer + ": " +
           hello.status().message());
      Drop(key, now, false);
      return;
    }
    c.agent_nonce = hello->nonce;
    c.knows_agent_nonce = true;
    RendezvousBook::Arrival arrival;
    arrival.nonce = c.challenge;
    arrival.frame = frame;
    arrival.peer_host = c.peer;
    arrival.local_host = c.local;
    std::vector<NodeMessage> out = book_.Offer(key, *hello, arrival, now);
    for (const NodeMessage& m : out) {
      if (m.connection != key) continue;
      if (m.reply.kind == NodeReplyKind::kAdmitted) {
        c.admitted = true;
        --unadmitted_;
        log_(m.reply.message);
      } else if (m.reply.kind == NodeReplyKind::kRefused) {
        log_(m.reply.message);
      }
    }
    Decided(out, now);
    return;
  }
  if (header->type == kFrameNodeReport && c.admitted) {
    Result<NodeReport> report = DecodeNodeReport(frame);
    if (!report.ok()) {
      Drop(key, now, true);
      return;
    }
    Decided(book_.Report(key, *report, frame, now), now);
    return;
  }
  Drop(key, now, c.admitted);
}

void RendezvousServer::Deliver(const std::vector<NodeMessage>& messages) {
  for (const NodeMessage& m : messages) {
    auto it = connections_.find(m.connection);
    if (it == connections_.end()) continue;
    Connection& c = it->second;
    NodeReply reply = m.reply;
    reply.sequence = ++c.sequence;
    c.out += EncodeSignedNodeReply(std::move(reply), book_.options().token, c.agent_nonce);
    if (m.reply.kind == NodeReplyKind::kRefused && !c.admitted) c.closing = true;
    if (m.reply.kind == NodeReplyKind::kEnd || m.reply.kind == NodeReplyKind::kStatus) {
      c.closing = true;
    }
    if (m.reply.kind == NodeReplyKind::kRoster) {
      formed_ = true;  // before the roster leaves: an agent that has one sees it formed
      if (m.reply.node_rank == 0) LogRoster(m.reply);
    }
    Flush(m.connection);
  }
}

void RendezvousServer::LogRoster(const NodeReply& roster) {
  // One line an attempt, naming at most kListedNodes nodes (a line a node would be N lines
  // an attempt); each agent's own line says which processes it runs.
  const std::vector<std::string> names = book_.NodeNames();
  const size_t listed = std::min(names.size(), kListedNodes);
  std::string ranks = Join(std::vector<std::string>(names.begin(), names.begin() + listed), ", ");
  if (listed < names.size()) ranks += " and " + std::to_string(names.size() - listed) + " more";
  log_("attempt " + std::to_string(roster.attempt) + ": " +
       std::to_string(roster.node_count) + " nodes of " +
       std::to_string(roster.processes_per_node) + " processes, coordinator " +
       roster.coordinator_host + ":" + std::to_string(roster.coordinator_port) +
       "; by rank: " + ranks);
}

void RendezvousServer::Flush(uint64_t key) {
  auto it = connections_.find(key);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  while (!c.out.empty()) {
    Io io = WriteSome(c.fd.get(), c.out);
    if (io.state == IoState::kWouldBlock) break;
    if (io.state != IoState::kDone) {
      c.out.clear();
      Drop(key, clock_.Now(), true);
      return;
    }
    c.out.erase(0, io.bytes);
  }
  if (c.out.empty()) std::string().swap(c.out);  // its capacity too, until the next reply
  if (c.watching_write != !c.out.empty()) {  // a system call only when it changes
    c.watching_write = !c.out.empty();
    (void)poller_->WatchWrite(c.fd.get(), key, c.watching_write);
  }
  if (c.out.empty() && c.closing && book_.phase() != RendezvousBook::Phase::kEnded) {
    Drop(key, clock_.Now(), c.admitted);
  }
}

void RendezvousServer::Drop(uint64_t key, Nanos now, bool tell_book) {
  auto it = connections_.find(key);
  if (it == connections_.end()) return;
  poller_->Remove(it->second.fd.get());
  const bool admitted = it->second.admitted;
  if (!admitted) --unadmitted_;
  const std::string peer = it->second.peer;
  it->second.fd.CloseWithReset();
  connections_.erase(it);
  if (tell_book && admitted) {
    log_("the agent at " + peer + " left");
    Decided(book_.Leave(key, now), now);
  }
}

}  // namespace kdist
