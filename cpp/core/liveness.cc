#include "liveness.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "process_list.h"
#include "roll_call_options.h"
#include "text.h"
#include "wire_tags.h"
#include "worker.h"

namespace kdist {
namespace {

// The liveness channel's own field tags (the shared ones: wire_tags.h). The
// same numbers mean other fields in the roll call's frames.
enum LiveTag : uint8_t {
  kLiveTagNonce = 10,    // the join's: the nonce "go" carried
  kLiveTagKind = 16,     // the notice's: a LiveKind
  kLiveTagBarrier = 17,  // the notice's: kAllDone's barrier, 0 or 1
};

constexpr size_t kMaxNonceBytes = 128;

constexpr TagSet kJoinTags = {kTagProcessId, kLiveTagNonce, kTagHost, kTagPid};
constexpr TagSet kNoticeTags = {kLiveTagKind, kTagProcessId, kTagHost,
                                kTagPid,      kTagMessage,   kLiveTagBarrier};

constexpr std::string_view kChannel = "liveness";

std::string WithHost(const std::string& host, int64_t pid) {
  std::string out = "host " + (host.empty() ? std::string("unknown") : RelayText(host));
  if (pid > 0) out += ", pid " + std::to_string(pid);
  return out;
}

}  // namespace

const char* LiveKindName(LiveKind kind) {
  switch (kind) {
    case LiveKind::kFailed: return "failed";
    case LiveKind::kDied: return "died";
    case LiveKind::kFinished: return "finished";
    case LiveKind::kLeft: return "left";
    case LiveKind::kAllDone: return "all done";
    case LiveKind::kAdmitted: return "admitted";
  }
  return "unknown";
}

std::string EncodeLiveJoin(const LiveJoin& join) {
  FieldWriter w;
  w.Integer(kTagProcessId, join.process_id);
  w.String(kLiveTagNonce, join.nonce, kMaxNonceBytes);
  w.String(kTagHost, join.host, kMaxHostBytes);
  w.Integer(kTagPid, join.pid);
  return w.Frame(kFrameLiveJoin);
}

std::string EncodeLiveNotice(const LiveNotice& notice) {
  FieldWriter w;
  w.Integer(kLiveTagKind, static_cast<int64_t>(notice.kind));
  w.Integer(kTagProcessId, notice.process_id);
  w.String(kTagHost, notice.host, kMaxHostBytes);
  w.Integer(kTagPid, notice.pid);
  w.String(kTagMessage, notice.message, kMaxMessageBytes);
  w.Integer(kLiveTagBarrier, notice.barrier ? 1 : 0);
  return w.Frame(kFrameLiveNotice);
}

Result<LiveJoin> DecodeLiveJoin(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameLiveJoin, kChannel));
  LiveJoin join;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kJoinTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagProcessId: return ReadInteger(f, "process_id", join.process_id);
      case kLiveTagNonce: return ReadString(f, kMaxNonceBytes, "nonce", join.nonce);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", join.host);
      case kTagPid: return ReadInteger(f, "pid", join.pid);
      default: return Status::Ok();
    }
  }));
  if (!seen.Has(kTagProcessId) || !seen.Has(kLiveTagNonce)) {
    return InvalidArgument("a liveness join lacks its process id or nonce");
  }
  return join;
}

Result<LiveNotice> DecodeLiveNotice(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameLiveNotice, kChannel));
  LiveNotice notice;
  int64_t kind = 0, barrier = 1;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kNoticeTags, [&](const Field& f) {
    switch (f.tag) {
      case kLiveTagKind: return ReadInteger(f, "kind", kind);
      case kTagProcessId: return ReadInteger(f, "process_id", notice.process_id);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", notice.host);
      case kTagPid: return ReadInteger(f, "pid", notice.pid);
      case kTagMessage: return ReadString(f, kMaxMessageBytes, "message", notice.message);
      case kLiveTagBarrier: return ReadInteger(f, "barrier", barrier);
      default: return Status::Ok();
    }
  }));
  if (!seen.Has(kLiveTagKind)) return InvalidArgument("a liveness notice lacks its kind");
  if (kind < static_cast<int64_t>(LiveKind::kFailed) ||
      kind > static_cast<int64_t>(LiveKind::kAdmitted)) {
    return InvalidArgument("a liveness notice has unknown kind " + std::to_string(kind));
  }
  notice.kind = static_cast<LiveKind>(kind);
  notice.barrier = barrier != 0;
  return notice;
}

// --- LivenessBook -----------------------------------------------------------------------

LivenessBook::LivenessBook(int64_t num_processes, LiveMember self)
    : num_processes_(num_processes) {
  states_[self.process_id] = State::kRunning;
  members_[self.process_id] = std::move(self);
}

Status LivenessBook::Admit(const LiveJoin& join, std::string_view nonce) {
  if (!ConstantTimeEquals(join.nonce, nonce)) {
    return FailedPrecondition("its nonce is not this job's (a process of another job, or of "
                              "an earlier run of this one)");
  }
  if (join.process_id < 1 || join.process_id >= num_processes_) {
    return InvalidArgument("process id " + std::to_string(join.process_id) +
                           " is outside [1, " + std::to_string(num_processes_) + ")");
  }
  if (states_.count(join.process_id) != 0) {
    return FailedPrecondition("process " + std::to_string(join.process_id) +
                              " is already watched");
  }
  if (first_failure_ || all_done_) {
    return FailedPrecondition("the job already ended");
  }
  states_[join.process_id] = State::kRunning;
  members_[join.process_id] = LiveMember{join.process_id, join.host, join.pid};
  return Status::Ok();
}

std::optional<LiveNotice> LivenessBook::OnNotice(int64_t from, LiveNotice notice) {
  auto state = states_.find(from);
  if (state == states_.end()) return std::nullopt;
  const LiveMember& member = members_[from];
  notice.process_id = from;
  notice.host = member.host;
  notice.pid = member.pid;
  switch (notice.kind) {
    case LiveKind::kFailed:
      if (state->second == State::kFailed || state->second == State::kDied) return std::nullopt;
      state->second = State::kFailed;
      if (first_failure_ || all_done_) return std::nullopt;
      first_failure_ = notice;
      return notice;
    case LiveKind::kFinished:
    case LiveKind::kLeft:
      if (state->second != State::kRunning) return std::nullopt;
      state->second = notice.kind == LiveKind::kFinished ? State::kFinished : State::kLeft;
      return CheckAllDone();
    default:
      return std::nullopt;  // not something a process says about itself
  }
}

std::optional<LiveNotice> LivenessBook::OnClosed(int64_t id) {
  auto state = states_.find(id);
  if (state == states_.end()) return std::nullopt;
  const bool ended = state->second == State::kRunning ||
                     (state->second == State::kFinished && !all_done_);
  if (!ended) return std::nullopt;
  const bool had_finished = state->second == State::kFinished;
  state->second = State::kDied;
  if (first_failure_ || all_done_) return std::nullopt;
  const LiveMember& member = members_[id];
  LiveNotice notice{LiveKind::kDied, id, member.host, member.pid,
                    had_finished ? "it said it finished, then its connection closed before "
                                   "the others finished (it did not wait in JAX's shutdown "
                                   "barrier)"
                                 : "its connection closed without a finish message",
                    true};
  first_failure_ = notice;
  return notice;
}

std::vector<int64_t> LivenessBook::NotJoined() const {
  std::vector<int64_t> out;
  if (joins_closed_ || all_done_) return out;
  for (int64_t id = 1; id < num_processes_; ++id) {
    if (states_.count(id) == 0) out.push_back(id);
  }
  return out;
}

std::optional<LiveNotice> LivenessBook::CloseJoins() {
  if (joins_closed_) return std::nullopt;
  joins_closed_ = true;
  return CheckAllDone();
}

std::optional<LiveNotice> LivenessBook::CheckAllDone() {
  if (first_failure_ || all_done_) return std::nullopt;
  // A process that has not joined yet may be on its way (it joins while JAX starts).
  if (!joins_closed_ && static_cast<int64_t>(states_.size()) < num_processes_) {
    return std::nullopt;
  }
  bool barrier = true;
  for (const auto& [id, state] : states_) {
    if (state == State::kRunning) return std::nullopt;
    if (state != State::kFinished) barrier = false;
  }
  all_done_ = barrier;
  LiveNotice notice;
  notice.kind = LiveKind::kAllDone;
  notice.barrier = barrier;
  return notice;
}

std::vector<LiveMember> LivenessBook::Waiting() const {
  std::vector<LiveMember> out;
  if (first_failure_ || all_done_) return out;
  for (const auto& [id, state] : states_) {
    if (state == State::kRunning) out.push_back(members_.at(id));
  }
  return out;
}

LiveAction DecideOnNotice(const LiveNotice& notice, PeerFailurePolicy policy, bool finishing) {
  switch (notice.kind) {
    case LiveKind::kFailed:
    case LiveKind::kDied:
      return policy == PeerFailurePolicy::kExit ? LiveAction::kExitFailure : LiveAction::kReport;
    case LiveKind::kAllDone:
      return !notice.barrier && finishing ? LiveAction::kExitSuccess : LiveAction::kNone;
    default:
      return LiveAction::kNone;
  }
}

std::string DescribeFailure(const LiveNotice& notice, int64_t self, LiveAction action) {
  std::string out = "kdist: process " + std::to_string(notice.process_id) + " (" +
                    WithHost(notice.host, notice.pid) + ") ";
  if (notice.kind == LiveKind::kFailed) {
    out += "failed first: " + RelayText(notice.message);
  } else {
    out += "died (" + RelayText(notice.message) + ") while the job was running";
  }
  if (action == LiveAction::kExitFailure) {
    out += "; stopping process " + std::to_string(self);
  } else if (action == LiveAction::kReport) {
    out += "; process " + std::to_string(self) +
           " goes on (KDIST_ON_PEER_FAILURE=ignore); JAX collectives with that process "
           "will fail or hang";
  }
  return out;
}

LivenessOptions LivenessOptionsFor(Nanos heartbeat_timeout) {
  using std::chrono::seconds;
  LivenessOptions options;
  const Nanos third = std::max<Nanos>(seconds(1), heartbeat_timeout / 3);
  options.keepalive_idle = third;
  options.keepalive_interval = std::max<Nanos>(seconds(1), third / 3);
  options.keepalive_count = 3;
  return options;
}

void SetKeepalive(int fd, const LivenessOptions& options) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const int one = 1;
  const int idle = static_cast<int>(std::max<int64_t>(1, duration_cast<seconds>(options.keepalive_idle).count()));
  const int interval =
      static_cast<int>(std::max<int64_t>(1, duration_cast<seconds>(options.keepalive_interval).count()));
  const int count = std::max(1, options.keepalive_count);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // Unacknowledged data (a notice to a vanished host) fails after the same bound.
  const unsigned user_timeout = static_cast<unsigned>(
      std::min<int64_t>(INT32_MAX, 1000LL * (idle + int64_t{interval} * count)));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

namespace {

// A non-blocking pipe whose read end wakes a poll loop.
Status MakeWakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Internal("cannot create the liveness channel's wake pipe: " + ErrorText(errno));
  }
  read_end = Fd(fds[0]);
  write_end = Fd(fds[1]);
  return Status::Ok();
}

void Wake(const Fd& write_end) {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(write_end.get(), &byte, 1);
}

void DrainWake(const Fd& read_end) {
  char buffer[64];
  while (read(read_end.get(), buffer, sizeof buffer) > 0) {
  }
}

// Writes all of `bytes`, waiting for room at most `bound` in all.
Status SendAll(int fd, std::string_view bytes, Nanos bound, Clock& clock) {
  const Nanos deadline = clock.Now() + bound;
  while (!bytes.empty()) {
    Io io = WriteSome(fd, bytes);
    if (io.state == IoState::kDone) {
      bytes.remove_prefix(io.bytes);
      continue;
    }
    if (io.state != IoState::kWouldBlock) {
      return Unavailable("sending on the liveness channel failed: " + ErrorText(io.error));
    }
    const Nanos left = deadline - clock.Now();
    if (left.count() <= 0) return DeadlineExceeded("the liveness channel's peer reads nothing");
    std::vector<pollfd> fds{{fd, POLLOUT, 0}};
    if (Poll(fds, left) < 0) return Internal("poll failed on the liveness channel");
  }
  return Status::Ok();
}

// Reads what is there; frames go to `on_frame`. false: EOF, error or garbage.
bool ReadFrames(int fd, FrameAssembler& in, const std::function<bool(const std::string&)>& on_frame) {
  char buffer[4096];
  for (int round = 0; round < 16; ++round) {
    Io io = ReadSome(fd, buffer, sizeof buffer);
    if (io.state == IoState::kWouldBlock) break;
    if (io.state != IoState::kDone) return false;
    if (!in.Append(std::string_view(buffer, io.bytes)).ok()) return false;
    for (std::string frame = in.TakeFrame(); !frame.empty(); frame = in.TakeFrame()) {
      if (!on_frame(frame)) return false;
    }
  }
  return true;
}

}  // namespace

// --- LivenessHub ------------------------------------------------------------------------

struct LivenessHub::Peer {
  Fd fd;
  FrameAssembler in;
  int64_t process_id = -1;  // -1 until admitted
  Nanos join_by{0};
};

Result<std::unique_ptr<LivenessHub>> LivenessHub::Start(int64_t num_processes, LiveMember self,
                                                        std::string nonce,
                                                        LivenessOptions options,
                                                        NoticeHandler on_notice) {
  KDIST_ASSIGN_OR_RETURN(Listener listener, ListenOnAllInterfaces(0, 1024));
  std::unique_ptr<LivenessHub> hub(new LivenessHub(std::move(listener), num_processes,
                                                   std::move(self), std::move(nonce), options,
                                                   std::move(on_notice)));
  KDIST_RETURN_IF_ERROR(MakeWakePipe(hub->wake_read_, hub->wake_write_));
  hub->thread_ = std::thread([h = hub.get()] { h->Run(); });
  return hub;
}

LivenessHub::LivenessHub(Listener listener, int64_t num_processes, LiveMember self,
                         std::string nonce, LivenessOptions options, NoticeHandler on_notice)
    : listener_(std::move(listener)),
      port_(listener_.port),
      nonce_(std::move(nonce)),
      options_(options),
      on_notice_(std::move(on_notice)),
      book_(num_processes, std::move(self)) {}

LivenessHub::~LivenessHub() { Stop(); }

void LivenessHub::Stop() {
  if (stop_.exchange(true)) return;
  if (wake_write_.valid()) Wake(wake_write_);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  peers_.clear();
  listener_.fd.Close();
  changed_.notify_all();
}

void LivenessHub::Broadcast(const LiveNotice& notice) {
  // Called with mutex_ held, on the hub's thread or an own-event caller.
  const std::string frame = EncodeLiveNotice(notice);
  RealClock clock;
  for (auto& [key, peer] : peers_) {
    if (peer->process_id < 0 || peer->process_id == notice.process_id) continue;
    (void)SendAll(peer->fd.get(), frame, options_.send_timeout, clock);
  }
}

void LivenessHub::Act(const std::optional<LiveNotice>& notice, std::vector<LiveNotice>& local) {
  // Called with mutex_ held: tells every other process, then queues the
  // notice for process 0's own handler (called without the lock).
  if (!notice) return;
  Broadcast(*notice);
  changed_.notify_all();
  local.push_back(*notice);
}

Status LivenessHub::OwnEvent(const LiveNotice& notice) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return FailedPrecondition("the liveness channel is closed");
    std::optional<LiveNotice> out = book_.OnNotice(0, notice);
    if (out) {
      Broadcast(*out);
      changed_.notify_all();
    }
    if (notice.kind != LiveKind::kFailed && !close_joins_at_) {
      close_joins_at_ = RealClock().Now() + options_.join_timeout;
    }
  }
  Wake(wake_write_);  // the hub's thread now also waits for close_joins_at_
  return Status::Ok();
}

Status LivenessHub::ReportFailure(const std::string& message) {
  LiveNotice notice;
  notice.kind = LiveKind::kFailed;
  notice.message = message;
  return OwnEvent(notice);
}

Status LivenessHub::Finish(bool barrier) {
  LiveNotice notice;
  notice.kind = barrier ? LiveKind::kFinished : LiveKind::kLeft;
  return OwnEvent(notice);
}

std::vector<int64_t> LivenessHub::Watched() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> out;
  for (const auto& [key, peer] : peers_) {
    if (peer->process_id >= 0) out.push_back(peer->process_id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<bool> LivenessHub::WaitAllDone(Nanos timeout, Nanos progress_interval,
                                      const std::function<void(const std::string&)>& progress,
                                      const std::function<Status()>& interrupted) {
  RealClock clock;
  const Nanos start = clock.Now();
  const Nanos deadline = start + timeout;
  const Nanos interval = std::max<Nanos>(progress_interval, std::chrono::milliseconds(1));
  Nanos next_progress = start;
  while (true) {
    std::vector<ProcessHost> waiting;
    std::vector<int64_t> not_joined;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (book_.all_done()) return *book_.all_done();
      if (book_.first_failure()) {
        return FailedPrecondition("process " + std::to_string(book_.first_failure()->process_id) +
                                  " " + LiveKindName(book_.first_failure()->kind));
      }
      if (stop_) return FailedPrecondition("the liveness channel is closed");
      for (const LiveMember& m : book_.Waiting()) {
        if (m.process_id != 0) waiting.push_back({m.process_id, m.host});
      }
      not_joined = book_.NotJoined();
    }
    const Nanos now = clock.Now();
    if (now >= deadline) {
      return DeadlineExceeded("the others did not finish within " + FormatTimeout(timeout));
    }
    if (progress && now >= next_progress && (!waiting.empty() || !not_joined.empty())) {
      std::string line = "process 0 finished; waiting for ";
      if (!waiting.empty()) line += FormatProcessList(waiting);
      if (!not_joined.empty()) {
        line += std::string(waiting.empty() ? "" : "; and for ") +
                "processes that have not joined the liveness channel yet: [" +
                FormatIdList(not_joined) + "]";
      }
      progress(line);
      next_progress = now + interval;
    }
    if (interrupted) KDIST_RETURN_IF_ERROR(interrupted());
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::min<Nanos>({deadline - now, next_progress - now,
                                             Nanos(std::chrono::milliseconds(100))}));
  }
}

void LivenessHub::Run() {
  RealClock clock;
  while (!stop_) {
    std::vector<pollfd> fds{{wake_read_.get(), POLLIN, 0}, {listener_.fd.get(), POLLIN, 0}};
    std::vector<uint64_t> keys;
    Nanos next_expiry = std::chrono::seconds(1);
    std::vector<LiveNotice> local;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const Nanos now = clock.Now();
      if (close_joins_at_) {
        if (now >= *close_joins_at_) {
          Act(book_.CloseJoins(), local);
        } else {
          next_expiry = std::min(next_expiry, *close_joins_at_ - now);
        }
      }
      for (auto it = peers_.begin(); it != peers_.end();) {
        Peer& p = *it->second;
        if (p.process_id < 0 && now >= p.join_by) {
          it->second->fd.CloseWithReset();
          it = peers_.erase(it);
          continue;
        }
        if (p.process_id < 0) next_expiry = std::min(next_expiry, p.join_by - now);
        fds.push_back({p.fd.get(), POLLIN, 0});
        keys.push_back(it->first);
        ++it;
      }
    }
    Deliver(local);  // from CloseJoins
    if (deferred_) next_expiry = std::min(next_expiry, deferred_until_ - clock.Now());
    if (Poll(fds, std::max(next_expiry, Nanos(0))) < 0) {
      clock.Sleep(std::chrono::milliseconds(10));  // EBADF cannot happen; never spin
      continue;
    }
    if (stop_) break;
    if (fds[0].revents) DrainWake(wake_read_);
    std::unique_lock<std::mutex> lock(mutex_);
    if (fds[1].revents & POLLIN) {
      for (int i = 0; i < 64; ++i) {
        Accepted a = AcceptOne(listener_.fd.get());
        if (a.io.state != IoState::kDone) break;
        SetKeepalive(a.fd.get(), options_);
        auto peer = std::make_unique<Peer>();
        peer->fd = std::move(a.fd);
        peer->join_by = clock.Now() + options_.join_timeout;
        peers_[next_key_++] = std::move(peer);
      }
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (fds[i + 2].revents == 0) continue;
      auto it = peers_.find(keys[i]);
      if (it == peers_.end()) continue;
      Peer& p = *it->second;
      bool drop = false;
      bool told = false;  // sent the failure that ended the job: close, do not reset
      const bool open = ReadFrames(p.fd.get(), p.in, [&](const std::string& frame) {
        if (p.process_id < 0) {
          Result<LiveJoin> join = DecodeLiveJoin(frame);
          const Status admission = join.ok() ? book_.Admit(*join, nonce_) : join.status();
          if (!admission.ok()) {
            // A member of this job that joins after a failure ended it (it joins
            // while JAX starts) hears that failure instead of waiting in JAX.
            if (join.ok() && book_.first_failure() && ConstantTimeEquals(join->nonce, nonce_)) {
              told = SendAll(p.fd.get(), EncodeLiveNotice(*book_.first_failure()),
                             options_.send_timeout, clock)
                         .ok();
              if (told) told_.insert(join->process_id);
            }
            drop = true;
            return false;
          }
          p.process_id = join->process_id;
          LiveNotice admitted;
          admitted.kind = LiveKind::kAdmitted;
          admitted.process_id = join->process_id;
          (void)SendAll(p.fd.get(), EncodeLiveNotice(admitted), options_.send_timeout, clock);
          return true;
        }
        Result<LiveNotice> notice = DecodeLiveNotice(frame);
        if (!notice.ok()) return false;
        Act(book_.OnNotice(p.process_id, *notice), local);
        return true;
      });
      if (open) continue;
      const int64_t id = p.process_id;
      if (told) {
        p.fd.Close();  // a reset could discard the notice before it is read
      } else if (drop || id < 0) {
        p.fd.CloseWithReset();
      }
      peers_.erase(it);
      if (id >= 0) Act(book_.OnClosed(id), local);
    }
    lock.unlock();
    Deliver(local);
  }
}

bool LivenessHub::AnyoneUntold() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int64_t id : book_.NotJoined()) {
    if (told_.count(id) == 0) return true;
  }
  return false;
}

void LivenessHub::Deliver(std::vector<LiveNotice>& local) {
  // On the hub's thread, without mutex_. Process 0's own handler may end this
  // process (policy "exit"): a failure waits (bounded) until every process
  // that has not joined yet has joined and heard it.
  RealClock clock;
  for (const LiveNotice& notice : local) {
    const bool failure = notice.kind == LiveKind::kFailed || notice.kind == LiveKind::kDied;
    if (failure && !deferred_ && AnyoneUntold()) {
      deferred_ = notice;
      deferred_until_ = clock.Now() + std::min<Nanos>(options_.join_timeout, kMaxExitDelay);
      continue;
    }
    if (on_notice_) on_notice_(notice);
  }
  local.clear();
  if (deferred_ && (clock.Now() >= deferred_until_ || !AnyoneUntold())) {
    const LiveNotice notice = *deferred_;
    deferred_.reset();
    if (on_notice_) on_notice_(notice);
  }
}

// --- LivenessSpoke ----------------------------------------------------------------------

Result<std::unique_ptr<LivenessSpoke>> LivenessSpoke::Join(const Endpoint& hub,
                                                           const LiveJoin& join,
                                                           LiveMember coordinator,
                                                           LivenessOptions options,
                                                           NoticeHandler on_notice,
                                                           Clock& clock) {
  const Nanos deadline = clock.Now() + options.join_timeout;
  const std::string where = "process 0's liveness channel at " + hub.ToString();
  Connecting c = StartConnect(hub);
  if (c.io.state == IoState::kError) {
    return Unavailable("cannot connect to " + where + ": " + ErrorText(c.io.error));
  }
  if (c.io.state == IoState::kWouldBlock) {
    std::vector<pollfd> fds{{c.fd.get(), POLLOUT, 0}};
    const int ready = Poll(fds, deadline - clock.Now());
    if (ready <= 0) {
      return Unavailable("no answer from " + where + " within " +
                         FormatTimeout(options.join_timeout) +
                         " (a firewall that drops the port looks like this)");
    }
    const int error = ConnectResult(c.fd.get());
    if (error != 0) return Unavailable("cannot connect to " + where + ": " + ErrorText(error));
  }
  SetKeepalive(c.fd.get(), options);
  KDIST_RETURN_IF_ERROR(SendAll(c.fd.get(), EncodeLiveJoin(join), options.send_timeout, clock));
  FrameAssembler in;
  std::optional<Status> verdict;
  std::optional<LiveNotice> ended;  // the failure that ended the job before this join
  while (!verdict && !ended) {
    const Nanos left = deadline - clock.Now();
    if (left.count() <= 0) {
      return Unavailable(where + " accepted the connection but did not admit this process "
                         "within " + FormatTimeout(options.join_timeout));
    }
    std::vector<pollfd> fds{{c.fd.get(), POLLIN, 0}};
    if (Poll(fds, left) < 0) return Internal("poll failed joining " + where);
    if (fds[0].revents == 0) continue;
    const bool open = ReadFrames(c.fd.get(), in, [&](const std::string& frame) {
      Result<LiveNotice> notice = DecodeLiveNotice(frame);
      if (notice.ok() && notice->kind == LiveKind::kAdmitted) verdict = Status::Ok();
      if (notice.ok() && (notice->kind == LiveKind::kFailed || notice->kind == LiveKind::kDied)) {
        ended = *notice;
      }
      return false;  // only the admission (or the end) comes first; stop reading here
    });
    if (ended) {
      // Acted on like any notice (policy "exit" leaves here), then reported.
      if (on_notice) on_notice(*ended);
      return Unavailable(where + " refused this process: the job already ended (process " +
                         std::to_string(ended->process_id) + " " + LiveKindName(ended->kind) +
                         ": " + RelayText(ended->message) + ")");
    }
    if (!verdict && !open) {
      return Unavailable(where + " refused this process (wrong nonce, id or a job that "
                         "already ended) or is not kdist's");
    }
  }
  std::unique_ptr<LivenessSpoke> spoke(new LivenessSpoke(std::move(c.fd), join,
                                                         std::move(coordinator), options,
                                                         std::move(on_notice)));
  KDIST_RETURN_IF_ERROR(MakeWakePipe(spoke->wake_read_, spoke->wake_write_));
  spoke->thread_ = std::thread([s = spoke.get()] { s->Run(); });
  return spoke;
}

LivenessSpoke::LivenessSpoke(Fd fd, LiveJoin join, LiveMember coordinator,
                             LivenessOptions options, NoticeHandler on_notice)
    : fd_(std::move(fd)),
      join_(std::move(join)),
      coordinator_(std::move(coordinator)),
      options_(options),
      on_notice_(std::move(on_notice)) {}

LivenessSpoke::~LivenessSpoke() { Stop(); }

void LivenessSpoke::Stop() {
  if (stop_.exchange(true)) return;
  if (wake_write_.valid()) Wake(wake_write_);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(send_mutex_);
  fd_.Close();
}

Status LivenessSpoke::Send(const LiveNotice& notice) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  if (!fd_.valid() || stop_) return FailedPrecondition("the liveness channel is closed");
  RealClock clock;
  return SendAll(fd_.get(), EncodeLiveNotice(notice), options_.send_timeout, clock);
}

Status LivenessSpoke::ReportFailure(const std::string& message) {
  LiveNotice notice;
  notice.kind = LiveKind::kFailed;
  notice.process_id = join_.process_id;
  notice.message = message;
  return Send(notice);
}

Status LivenessSpoke::Finish(bool barrier) {
  LiveNotice notice;
  notice.kind = barrier ? LiveKind::kFinished : LiveKind::kLeft;
  notice.process_id = join_.process_id;
  return Send(notice);
}

void LivenessSpoke::Run() {
  FrameAssembler in;
  bool all_done = false;
  while (!stop_) {
    std::vector<pollfd> fds{{wake_read_.get(), POLLIN, 0}, {fd_.get(), POLLIN, 0}};
    if (Poll(fds, std::chrono::seconds(1)) < 0) continue;
    if (stop_) break;
    if (fds[0].revents) DrainWake(wake_read_);
    if (fds[1].revents == 0) continue;
    const bool open = ReadFrames(fd_.get(), in, [&](const std::string& frame) {
      Result<LiveNotice> notice = DecodeLiveNotice(frame);
      if (!notice.ok()) return true;  // a later version's frame: skip
      if (notice->kind == LiveKind::kAllDone) all_done = true;
      if (on_notice_) on_notice_(*notice);
      return true;
    });
    if (open) continue;
    if (!all_done && !stop_ && on_notice_) {
      on_notice_(LiveNotice{LiveKind::kDied, 0, coordinator_.host, coordinator_.pid,
                            "its liveness connection closed without a finish message", true});
    }
    break;
  }
}

}  // namespace kdist
