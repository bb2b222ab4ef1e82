#include "roll_call/coordinator.h"

#include <algorithm>
#include <cerrno>
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>

#include "base/deadline.h"
#include "base/file_limit.h"
#include "base/text.h"
#include "net/event_poller.h"
#include "roll_call/coordinator_port.h"
#include "roll_call/roll_call.h"

namespace kdist {
namespace {

constexpr size_t kReadChunk = 4096;
constexpr size_t kMaxReadPerRound = 64 * 1024;
// The listener's key in the poller; connections count from 1.
constexpr uint64_t kListenerKey = 0;

enum class Phase { kPending, kMember, kClosing };

struct Connection {
  Fd fd;
  Phase phase = Phase::kPending;
  // Pending: when it must have sent its hello; closing: when its close grace
  // ends. Unused for members.
  Nanos expires{0};
  FrameAssembler in;
  Nonce nonce{};    // the challenge sent on it, which its hello's MAC must cover
  std::string out;  // queued bytes not yet fully written; emptied once all are sent
  size_t sent = 0;  // of `out`
  bool watching_write = false;  // whether the poller reports it writable
  bool wants_write() const { return sent < out.size(); }
};

class Coordinator {
 public:
  Coordinator(Listener listener, EventPoller poller, const Hello& own, const JobShared& shared,
              const RollCallOptions& options, Clock& clock)
      : listener_(std::move(listener)),
        poller_(std::move(poller)),
        own_(own),
        shared_(shared),
        options_(options),
        waiter_(clock, options),
        call_(own, options.environment, options.consistency, options.process_hosts) {}

  Result<RollCallSummary> Run();

 private:
  Nanos Now() { return waiter_.clock().Now(); }
  std::string Line();
  Status Collect();
  void AcceptAll();
  void OnReadable(uint64_t id, Connection& c);
  void OnHelloFrame(uint64_t id, Connection& c, const std::string& frame);
  void Flush(uint64_t id, Connection& c);
  // One wait for ready connections (and the listener when `accepting`) of at
  // most `wait`: flushes the writable ones and hands the readable ones to
  // `on_readable`, stopping early when it returns false. Returns whether the
  // listener is readable (false after a stop); kInternal when epoll fails.
  Result<bool> PollRound(bool accepting, Nanos wait,
                         const std::function<bool(uint64_t, Connection&)>& on_readable);
  // Drain's reading: the connection's close (or failure) removes it.
  void OnReadableWhileClosing(uint64_t id, Connection& c);
  void Drop(uint64_t id, const std::string& reason);
  void Remove(uint64_t id, bool reset);
  void SendVerdict(uint64_t id, Connection& c, FrameType type, const Status& status);
  // Queues the last frame of a connection (a verdict) and starts its close grace.
  void SendLast(uint64_t id, Connection& c, const std::string& frame);
  // A connection that is not a member (pending or closing) has a deadline.
  void SetDeadline(uint64_t id, Connection& c, Nanos expires);
  void ClearDeadline(uint64_t id, const Connection& c);
  void Listen(bool accepting);
  void ExpireStale();
  void BroadcastStatus(const std::string& line);
  Reply MakeReply(FrameType type, StatusCode code, const std::string& message) const;
  std::string StatusFrame(const std::string& line) const;
  // Queues a progress frame for one member (skipped when its output is backed up).
  void SendStatus(uint64_t id, Connection& c, const std::string& frame);
  void Drain();
  // After "go": hands every connection to CloseInBackground.
  void CloseMembersInBackground();
  void ResetAll();

  Listener listener_;
  EventPoller poller_;
  bool listening_ = false;  // whether the listener is in the poller
  const Hello& own_;
  const JobShared& shared_;
  const RollCallOptions& options_;
  Waiter waiter_;
  RollCall call_;
  std::unordered_map<uint64_t, Connection> connections_;
  // Connections that are not members (pending or closing), by deadline.
  std::set<std::pair<Nanos, uint64_t>> deadlines_;
  size_t non_members_ = 0;
  uint64_t next_id_ = 1;
  Status failure_;               // set when the roll call failed for everybody
  uint64_t offender_ = 0;        // the connection whose hello failed it
  bool interrupted_ = false;     // the interrupt hook stopped Collect()
};

std::string Coordinator::Line() { return call_.ProgressLine(waiter_.Progress()); }

void Coordinator::SetDeadline(uint64_t id, Connection& c, Nanos expires) {
  ClearDeadline(id, c);
  c.expires = expires;
  deadlines_.emplace(expires, id);
}

void Coordinator::ClearDeadline(uint64_t id, const Connection& c) {
  deadlines_.erase({c.expires, id});
}

void Coordinator::Remove(uint64_t id, bool reset) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (it->second.phase == Phase::kMember) {
    call_.Leave(id);
  } else {
    ClearDeadline(id, it->second);
    --non_members_;
  }
  poller_.Remove(it->second.fd.get());
  if (reset) {
    it->second.fd.CloseWithReset();
  } else {
    it->second.fd.Close();
  }
  connections_.erase(it);
}

void Coordinator::Drop(uint64_t id, const std::string& reason) {
  call_.NoteDropped(reason);
  Remove(id, /*reset=*/true);
}

Reply Coordinator::MakeReply(FrameType type, StatusCode code, const std::string& message) const {
  Reply reply;
  reply.type = type;
  reply.code = code;
  reply.message = message;
  reply.host = own_.host;
  reply.pid = own_.pid;
  reply.jax_version = own_.jax_version;
  if (type == FrameType::kGo) reply.shared = shared_;
  return reply;
}

void Coordinator::SendVerdict(uint64_t id, Connection& c, FrameType type, const Status& status) {
  SendLast(id, c, EncodeReply(MakeReply(type, status.code(), status.message())));
}

void Coordinator::SendLast(uint64_t id, Connection& c, const std::string& frame) {
  c.out += frame;
  if (c.phase == Phase::kMember) ++non_members_;
  c.phase = Phase::kClosing;
  SetDeadline(id, c, Now() + options_.close_grace);
  Flush(id, c);
}

void Coordinator::Flush(uint64_t id, Connection& c) {
  while (c.wants_write()) {
    const Io io = WriteSome(c.fd.get(), std::string_view(c.out).substr(c.sent));
    if (io.state != IoState::kDone) break;  // would block, or the reader reports the error
    c.sent += io.bytes;
  }
  if (!c.wants_write()) {
    // All sent: drop the written bytes instead of keeping them for the whole roll call.
    c.out.clear();
    c.out.shrink_to_fit();
    c.sent = 0;
  }
  if (c.watching_write != c.wants_write() &&
      poller_.WatchWrite(c.fd.get(), id, c.wants_write()).ok()) {
    c.watching_write = c.wants_write();
  }
}

void Coordinator::Listen(bool accepting) {
  if (accepting == listening_) return;
  if (accepting) {
    if (!poller_.Add(listener_.fd.get(), kListenerKey, false).ok()) return;  // next round
  } else {
    poller_.Remove(listener_.fd.get());
  }
  listening_ = accepting;
}

void Coordinator::AcceptAll() {
  while (non_members_ < options_.max_pending) {
    Accepted a = AcceptOne(listener_.fd.get());
    if (a.io.state == IoState::kWouldBlock) return;
    if (a.io.state == IoState::kError) {
      if (a.io.error == EMFILE || a.io.error == ENFILE) {
        failure_ = Internal(NoFilesMessage(connections_.size()));
      }
      return;  // other errors (ENOBUFS, ...): try again next round
    }
    const uint64_t id = next_id_++;
    if (const Status added = poller_.Add(a.fd.get(), id, false); !added.ok()) {
      failure_ = Internal(added.message() + " (" + NoFilesMessage(connections_.size()) + ")");
      return;
    }
    Connection& c = connections_[id];
    c.fd = std::move(a.fd);
    ++non_members_;
    SetDeadline(id, c, Now() + options_.hello_timeout);
    // A fresh nonce for each connection: a hello made for another one (a
    // replay) does not verify on this one.
    Result<Nonce> nonce = FreshNonce();
    if (!nonce.ok()) {
      failure_ = Internal("process 0 could not draw a nonce for the roll call's challenge: " +
                          nonce.status().message());
      return;
    }
    c.nonce = *nonce;
    c.out = EncodeChallenge(Challenge{c.nonce});
    Flush(id, c);
  }
}

void Coordinator::OnHelloFrame(uint64_t id, Connection& c, const std::string& frame) {
  Result<Hello> hello = DecodeHello(frame);
  if (!hello.ok()) {
    if (hello.status().code() == StatusCode::kFailedPrecondition) {  // another protocol version
      call_.NoteDropped("a process " + hello.status().message());
      SendVerdict(id, c, FrameType::kReject,
                  FailedPrecondition("process 0 (host " + SafeText(own_.host) + ", pid " +
                                     std::to_string(own_.pid) + ") refused this hello: " +
                                     hello.status().message()));
      return;
    }
    Drop(id, "its hello is malformed: " + hello.status().message());
    return;
  }
  // A restarted process may reclaim its id once the old connection is gone.
  if (auto holder = call_.ConnectionOf(hello->process_id); holder && *holder != id) {
    auto it = connections_.find(*holder);
    if (it != connections_.end() && PeerGone(it->second.fd.get())) Remove(*holder, false);
  }
  Result<std::string> mac_input = FrameMacInput(frame);
  if (!mac_input.ok()) {  // DecodeHello accepted it: cannot happen
    Drop(id, "its hello is malformed: " + mac_input.status().message());
    return;
  }
  const RollCall::Verdict verdict = call_.Offer(id, *hello, RollCall::Arrival{c.nonce, *mac_input});
  switch (verdict.outcome) {
    case RollCall::Outcome::kJoined:
      ClearDeadline(id, c);
      --non_members_;
      c.phase = Phase::kMember;
      c.in = FrameAssembler();  // a member sends nothing more: keep no buffer for it
      // Acknowledge at once, so the worker knows process 0 itself heard it. The
      // line is the short one: the missing ids cost O(processes) to list.
      SendStatus(id, c, StatusFrame(call_.JoinedLine(waiter_.Progress())));
      return;
    case RollCall::Outcome::kRefused:
      SendVerdict(id, c, FrameType::kReject, verdict.status);
      return;
    case RollCall::Outcome::kFailed:
      failure_ = verdict.status;
      offender_ = id;
      return;
  }
}

void Coordinator::OnReadable(uint64_t id, Connection& c) {
  char buffer[kReadChunk];
  size_t total = 0;
  while (total < kMaxReadPerRound) {
    const Io io = ReadSome(c.fd.get(), buffer, sizeof buffer);
    if (io.state == IoState::kWouldBlock) return;
    if (io.state == IoState::kEof || io.state == IoState::kError) {
      if (c.phase == Phase::kPending) {
        const std::string why = io.state == IoState::kEof
                                    ? "it closed before sending a complete hello"
                                    : "it failed before sending a hello: " + ErrorText(io.error);
        Drop(id, why);
      } else {
        // A member that leaves is missing again; a closing one is done.
        Remove(id, io.state == IoState::kError);
      }
      return;
    }
    total += io.bytes;
    if (c.phase != Phase::kPending) continue;  // members and closing: discard
    const Status appended = c.in.Append(std::string_view(buffer, io.bytes));
    if (!appended.ok()) {
      Drop(id, WhyNotKdist(appended.message(), std::string_view(buffer, io.bytes)));
      return;
    }
    std::string frame = c.in.TakeFrame();
    while (!frame.empty() && IsOpening(frame)) frame = c.in.TakeFrame();  // a process's first
    if (!frame.empty()) {
      OnHelloFrame(id, c, frame);
      return;  // `c` may be gone
    }
  }
}

void Coordinator::ExpireStale() {
  const Nanos now = Now();
  std::vector<uint64_t> expired_pending, expired_closing;
  for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now; ++it) {
    const Connection& c = connections_.at(it->second);
    (c.phase == Phase::kPending ? expired_pending : expired_closing).push_back(it->second);
  }
  for (uint64_t id : expired_pending) {
    Drop(id, "it sent no complete hello within " + FormatTimeout(options_.hello_timeout));
  }
  for (uint64_t id : expired_closing) Remove(id, /*reset=*/true);
}

std::string Coordinator::StatusFrame(const std::string& line) const {
  return EncodeReply(MakeReply(FrameType::kStatus, StatusCode::kOk, line));
}

void Coordinator::SendStatus(uint64_t id, Connection& c, const std::string& frame) {
  if (c.phase != Phase::kMember || c.out.size() - c.sent > 4 * frame.size()) return;
  c.out += frame;
  Flush(id, c);
}

void Coordinator::BroadcastStatus(const std::string& line) {
  const std::string frame = StatusFrame(line);
  for (auto& [id, c] : connections_) SendStatus(id, c, frame);
}

Result<bool> Coordinator::PollRound(
    bool accepting, Nanos wait, const std::function<bool(uint64_t, Connection&)>& on_readable) {
  Listen(accepting);
  Result<std::vector<EventPoller::Event>> events = poller_.Wait(wait);
  if (!events.ok()) return Internal("the roll call's wait failed: " + events.status().message());
  bool listener_ready = false;
  for (const EventPoller::Event& event : *events) {
    if (event.key == kListenerKey) {
      listener_ready = accepting;
      continue;
    }
    auto it = connections_.find(event.key);
    if (it == connections_.end()) continue;  // removed by an earlier event this round
    if (event.writable) Flush(event.key, it->second);
    if (event.readable && !on_readable(event.key, it->second)) return false;
  }
  return listener_ready;
}

Status Coordinator::Collect() {
  const auto on_readable = [this](uint64_t id, Connection& c) {
    OnReadable(id, c);
    return failure_.ok();  // a failed roll call stops the round
  };
  while (!call_.complete() && failure_.ok()) {
    if (waiter_.Expired()) return call_.TimedOut(options_.deadline.Budget(), listener_.bound);

    const bool accepting = non_members_ < options_.max_pending;
    const Nanos next_expiry =
        deadlines_.empty() ? options_.deadline.budget() : deadlines_.begin()->first - Now();
    const Nanos slice = waiter_.Slice(std::max(next_expiry, Nanos(0)));
    KDIST_ASSIGN_OR_RETURN(const bool listener_ready, PollRound(accepting, slice, on_readable));
    if (!failure_.ok()) return failure_;
    if (listener_ready) AcceptAll();
    ExpireStale();

    bool logged = false;
    std::string line;
    const Status checked = waiter_.Check([&] {
      logged = true;
      line = Line();
      return line;
    });
    if (!checked.ok()) {
      interrupted_ = true;
      return checked;
    }
    if (logged) BroadcastStatus(line);
  }
  return failure_;
}

void Coordinator::OnReadableWhileClosing(uint64_t id, Connection& c) {
  char buffer[kReadChunk];
  const Io io = ReadSome(c.fd.get(), buffer, sizeof buffer);
  if (io.state == IoState::kEof) Remove(id, /*reset=*/false);  // they closed first
  else if (io.state == IoState::kError) Remove(id, /*reset=*/true);
}

void Coordinator::Drain() {
  const Nanos until = Now() + options_.close_grace;
  // The waiter's deadline may have passed already, so the wait is cut at the
  // check interval here rather than by waiter_.Slice().
  const Nanos check = std::max(options_.check_interval, kMinWaiterInterval);
  const auto on_readable = [this](uint64_t id, Connection& c) {
    OnReadableWhileClosing(id, c);
    return true;
  };
  // Bounded by the grace period; every round either closes connections or
  // waits at most until `until`.
  while (!connections_.empty() && Now() < until) {
    if (!PollRound(/*accepting=*/false, std::min<Nanos>(until - Now(), check), on_readable).ok()) {
      break;
    }
    if (!waiter_.Check(nullptr).ok()) break;  // interrupted: reset the rest
  }
  ResetAll();
}

void Coordinator::CloseMembersInBackground() {
  std::unordered_map<uint64_t, Closing> open;
  for (auto& [id, c] : connections_) {
    open[id] = Closing{std::move(c.fd), std::move(c.out), c.sent};
  }
  connections_.clear();
  deadlines_.clear();
  non_members_ = 0;
  CloseInBackground(std::move(poller_), std::move(open), options_.close_grace);
}

void Coordinator::ResetAll() {
  for (auto& [id, c] : connections_) {
    poller_.Remove(c.fd.get());
    c.fd.CloseWithReset();
  }
  connections_.clear();
  deadlines_.clear();
  non_members_ = 0;
}

Result<RollCallSummary> Coordinator::Run() {
  Status status = Collect();
  // No new connection from here on: a worker's probe for JAX's service must
  // never reach this listener.
  Listen(false);
  listener_.fd.Close();

  if (interrupted_) {
    ResetAll();
    return status;
  }
  // Pending connections never said who they are: reset them.
  std::vector<uint64_t> pending;
  for (const auto& [id, c] : connections_) {
    if (c.phase == Phase::kPending && id != offender_) pending.push_back(id);
  }
  for (uint64_t id : pending) Remove(id, /*reset=*/true);

  // One verdict for all, encoded once; "go" carries the differences let pass.
  const std::string notes = status.ok() ? call_.ConsistencyNotes() : "";
  Reply reply =
      MakeReply(status.ok() ? FrameType::kGo : FrameType::kReject, status.code(), status.message());
  reply.shared.consistency_notes = notes.substr(0, kMaxConsistencyNotesBytes);
  const std::string verdict = EncodeReply(reply);
  for (auto& [id, c] : connections_) {
    if (c.phase == Phase::kMember || id == offender_) SendLast(id, c, verdict);
  }
  if (!status.ok()) {
    Drain();  // the failure is returned once every process has it
    return status;
  }
  CloseMembersInBackground();

  RollCallSummary summary;
  for (const auto& [id, member] : call_.members()) summary.members.push_back(member.hello);
  summary.dropped = call_.dropped();
  summary.elapsed = waiter_.Elapsed();
  summary.listened_on = listener_.bound;
  summary.consistency_notes = notes;
  return summary;
}

}  // namespace

Result<RollCallSummary> RunCoordinatorOn(Listener listener, const Hello& own,
                                         const JobShared& shared,
                                         const RollCallOptions& options, Clock& clock) {
  // Room for a connection from every process before the first is accepted.
  if (Result<FileLimits> limits = EnsureFileLimit(own.num_processes); !limits.ok()) {
    return limits.status();
  }
  Result<EventPoller> poller = EventPoller::Create();
  if (!poller.ok()) return poller.status();
  Coordinator coordinator(std::move(listener), std::move(poller).value(), own, shared, options,
                          clock);
  return coordinator.Run();
}

Result<RollCallSummary> RunCoordinator(const Hello& own, const JobShared& shared, uint16_t port,
                                       const RollCallOptions& options, Clock& clock) {
  KDIST_ASSIGN_OR_RETURN(Listener listener, BindCoordinatorPort(port, options, clock));
  return RunCoordinatorOn(std::move(listener), own, shared, options, clock);
}

}  // namespace kdist
