#include "liveness/liveness_hub.h"

#include <algorithm>
#include <csignal>
#include <utility>

#include "base/deadline.h"
#include "base/file_limit.h"
#include "base/hmac_sha256.h"
#include "base/process_list.h"
#include "base/text.h"

namespace kdist {

struct LivenessHub::Peer {
  Fd fd;
  FrameAssembler in;
  int64_t process_id = -1;  // -1 until admitted
  Nanos join_by{0};
};

Result<std::unique_ptr<LivenessHub>> LivenessHub::Start(int64_t num_processes, LiveMember self,
                                                        std::string nonce,
                                                        LivenessOptions options,
                                                        StopOptions stop, NoticeHandler on_notice,
                                                        std::vector<std::string> hosts) {
  Listener listener;  // none for a job of one process: nobody joins
  if (num_processes > 1) {
    // A connection from every process, open while JAX's are (the roll call's
    // raise may not have happened in this process: a hub started on its own).
    KDIST_ASSIGN_OR_RETURN(const FileLimits limits, EnsureFileLimit(num_processes));
    (void)limits;
    // Every process connects at once, right after "go": a backlog of 1024 overflowed
    // at 2,049 processes into the kernel's 1 s SYN retry (the roll call's sizing).
    KDIST_ASSIGN_OR_RETURN(listener, ListenOnAllInterfaces(0, ListenBacklog(num_processes)));
  }
  KDIST_ASSIGN_OR_RETURN(EventPoller poller, EventPoller::Create());
  std::unique_ptr<LivenessHub> hub(new LivenessHub(std::move(listener), num_processes,
                                                   std::move(self), std::move(nonce), options,
                                                   stop, std::move(on_notice), std::move(hosts)));
  hub->poller_ = std::make_unique<EventPoller>(std::move(poller));
  KDIST_RETURN_IF_ERROR(
      hub->thread_.Start("the liveness channel", [h = hub.get()] { h->Run(); }));
  if (stop.board != nullptr) stop.board->SetWakeFd(hub->thread_.wake_write_fd());
  return hub;
}

LivenessHub::LivenessHub(Listener listener, int64_t num_processes, LiveMember self,
                         std::string nonce, LivenessOptions options, StopOptions stop,
                         NoticeHandler on_notice, std::vector<std::string> hosts)
    : listener_(std::move(listener)),
      port_(listener_.port),
      self_(self),
      nonce_(std::move(nonce)),
      options_(options),
      stop_(stop),
      on_notice_(std::move(on_notice)),
      book_(num_processes, std::move(self)),
      watch_(stop),
      barrier_book_(std::move(hosts)) {
  if (stop.stall_timeout) stall_book_.emplace(*stop.stall_timeout);
}

LivenessHub::~LivenessHub() { Stop(); }

void LivenessHub::Stop() {
  if (stop_.board != nullptr) stop_.board->SetWakeFd(-1);
  if (!thread_.Stop()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  admitted_.clear();
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

void LivenessHub::SendToAll(const LiveNotice& notice) {
  const std::string frame = EncodeLiveNotice(notice);
  RealClock clock;
  for (auto& [id, peer] : admitted_) {
    (void)SendAll(peer->fd.get(), frame, options_.send_timeout, clock);
  }
}

void LivenessHub::SendTo(int64_t process_id, const LiveNotice& notice) {
  SendFrameTo(process_id, EncodeLiveNotice(notice));
}

void LivenessHub::SendFrameTo(int64_t process_id, const std::string& frame) {
  auto it = admitted_.find(process_id);
  if (it == admitted_.end()) return;
  RealClock clock;
  (void)SendAll(it->second->fd.get(), frame, options_.send_timeout, clock);
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
    if (thread_.stopping()) return FailedPrecondition("the liveness channel is closed");
    std::optional<LiveNotice> out = book_.OnNotice(0, notice);
    if (out) {
      Broadcast(*out);
      changed_.notify_all();
    }
    if (notice.kind != LiveKind::kFailed && !close_joins_at_) {
      close_joins_at_ = RealClock().Now() + options_.join_timeout;
    }
  }
  thread_.Wake();  // the hub's thread now also waits for close_joins_at_
  return Status::Ok();
}

Status LivenessHub::ReportFailure(const std::string& message) {
  LiveNotice notice;
  notice.kind = LiveKind::kFailed;
  notice.message = message;
  KDIST_RETURN_IF_ERROR(OwnEvent(notice));
  // Process 0 leaves last (see AnyoneUntold): the others leave as soon as they hear.
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, kMaxExitDelay, [this] { return admitted_.empty(); });
  return Status::Ok();
}

Status LivenessHub::Finish(bool barrier) {
  LiveNotice notice;
  notice.kind = barrier ? LiveKind::kFinished : LiveKind::kLeft;
  return OwnEvent(notice);
}

Status LivenessHub::RequestStop(const std::string& reason) {
  std::vector<LiveNotice> local;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (thread_.stopping()) return FailedPrecondition("the liveness channel is closed");
    StopRequest request{0, self_.host, self_.pid, 0, reason, false};
    OnStopRequest(request, local);
  }
  Deliver(local);
  return Status::Ok();
}

Status LivenessHub::Barrier(const std::string& name, int64_t index, Nanos timeout,
                            const std::function<Status()>& interrupted) {
  RealClock clock;
  const Nanos arrived = clock.Now();
  // The hub's own verdict comes in the wire's form, like every other process's.
  const Nanos bound = timeout + stop_.answer_timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_.board != nullptr) stop_.board->Beat();
  Deliver(barrier_book_.OnArrive(BarrierArrival{0, index, name, arrived + timeout},
                                 book_.Running(/*with_unjoined=*/true), arrived));
  thread_.Wake();  // the hub's thread now also waits for this barrier's deadline
  while (true) {
    auto done = own_barriers_.find(index);
    if (done != own_barriers_.end()) {
      const LiveNotice notice = BarrierNotice(done->second);
      own_barriers_.erase(done);
      if (stop_.board != nullptr) stop_.board->Beat();
      return BarrierStatus(notice);
    }
    if (thread_.stopping()) return FailedPrecondition("the liveness channel is closed");
    const Nanos now = clock.Now();
    if (now - arrived >= bound) {
      return DeadlineExceeded("barrier " + Quote(name) + " got no verdict within " +
                              FormatTimeout(bound));
    }
    if (interrupted) {
      lock.unlock();
      KDIST_RETURN_IF_ERROR(interrupted());
      lock.lock();
    }
    changed_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

bool LivenessHub::JobEnded() {
  std::lock_guard<std::mutex> lock(mutex_);
  return book_.first_failure().has_value();
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
      if (thread_.stopping()) return FailedPrecondition("the liveness channel is closed");
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

// --- stopping together ---------------------------------------------------------------

void LivenessHub::OnStopRequest(const StopRequest& request, std::vector<LiveNotice>& local) {
  ActOnStop(stop_book_.OnRequest(request, book_.Running(/*with_unjoined=*/false)), local);
}

void LivenessHub::ActOnStop(StopBook::Action action, std::vector<LiveNotice>& local) {
  if (action == StopBook::Action::kNone || !stop_book_.request()) return;
  const StopRequest& request = *stop_book_.request();
  LiveNotice notice;
  notice.process_id = request.process_id;
  notice.host = request.host;
  notice.pid = request.pid;
  notice.signal_number = request.signal_number;
  notice.message = request.reason;
  switch (action) {
    case StopBook::Action::kQuery: {
      notice.kind = LiveKind::kStopQuery;
      SendToAll(notice);  // the requester too (Broadcast would skip it)
      const int64_t own = stop_.board != nullptr ? stop_.board->BeginAgreement() : -1;
      ActOnStop(stop_book_.OnStep(0, own), local);
      return;
    }
    case StopBook::Action::kDecided:
      notice.kind = LiveKind::kStopAt;
      notice.step = stop_book_.stop_step();
      if (stop_.board != nullptr) {
        stop_.board->Decide(notice.step, static_cast<int>(notice.signal_number));
      }
      SendToAll(notice);
      local.push_back(notice);
      return;
    case StopBook::Action::kStopNow:
      notice.kind = LiveKind::kStopNow;
      notice.code = stop_book_.ended_urgently() ? 1 : 0;
      if (book_.EndJob(notice)) {
        SendToAll(notice);
        changed_.notify_all();
        local.push_back(notice);
      }
      return;
    case StopBook::Action::kNone:
      return;
  }
}

void LivenessHub::OnStalled(int64_t from, std::vector<LiveNotice>& local) {
  if (!stall_book_) return;
  const std::set<int64_t> running = book_.Running(/*with_unjoined=*/false);
  if (!stall_book_->OnStalled(from, running)) return;
  RealClock clock;
  stall_answers_by_ = clock.Now() + stop_.answer_timeout;
  LiveNotice query;
  query.kind = LiveKind::kProgressQuery;
  const std::string frame = EncodeLiveNotice(query);  // once for all
  for (int64_t id : running) {
    if (id != 0) SendFrameTo(id, frame);
  }
  ProgressReport own = watch_.Report(0, clock.Now());
  own.host = self_.host;
  own.pid = self_.pid;
  ActOnStallVerdict(stall_book_->OnReport(own), local);
}

void LivenessHub::ActOnStallVerdict(const std::optional<StallVerdict>& verdict,
                                    std::vector<LiveNotice>& local) {
  if (!verdict) return;
  stall_verdict_ = verdict;
  dumping_.clear();
  if (stop_.stack_signal != 0) {
    LiveNotice dump;
    dump.kind = LiveKind::kDumpStacks;
    for (int64_t id : verdict->stuck) {
      if (id == 0) {
        raise(stop_.stack_signal);  // process 0's own stacks, written at once
      } else {
        dumping_.insert(id);
        SendTo(id, dump);
      }
    }
  }
  dumps_by_ = RealClock().Now() + stop_.answer_timeout;
  if (dumping_.empty()) EndStalled(local);
}

void LivenessHub::EndStalled(std::vector<LiveNotice>& local) {
  if (!stall_verdict_) return;
  LiveNotice notice;
  notice.kind = LiveKind::kJobStalled;
  notice.message = stall_verdict_->message;
  // The notice is about the (first) stuck process, so that its record names it.
  if (!stall_verdict_->stuck.empty()) {
    notice.process_id = stall_verdict_->stuck.front();
    if (const LiveMember* stuck = book_.member(notice.process_id)) {
      notice.host = stuck->host;
      notice.pid = stuck->pid;
    }
  }
  if (stop_.stack_signal != 0 && !stall_verdict_->stuck.empty()) {
    const std::vector<int64_t>& stuck = stall_verdict_->stuck;
    notice.message += stuck.size() == 1
                          ? "; the Python stacks of process " + std::to_string(stuck.front()) +
                                " (every thread) are on its stderr"
                          : "; the Python stacks of processes [" + FormatIdList(stuck) +
                                "] (every thread) are on their stderr";
  }
  stall_verdict_.reset();
  if (book_.EndJob(notice)) {
    SendToAll(notice);  // the stuck process too: it is named, but the stall is the job's
    changed_.notify_all();
    local.push_back(notice);
  }
}

void LivenessHub::Deliver(const std::vector<BarrierVerdict>& verdicts) {
  // With mutex_ held: each process that arrived hears its barrier's verdict.
  for (const BarrierVerdict& verdict : verdicts) {
    const std::string frame = EncodeLiveNotice(BarrierNotice(verdict));  // once for all
    for (int64_t id : verdict.to) {
      if (id == 0) {
        own_barriers_[verdict.index] = verdict;
      } else {
        SendFrameTo(id, frame);
      }
    }
  }
  if (!verdicts.empty()) changed_.notify_all();
}

void LivenessHub::OnGone(int64_t process_id, std::vector<LiveNotice>& local) {
  ActOnStop(stop_book_.OnGone(process_id), local);
  if (stall_book_) ActOnStallVerdict(stall_book_->OnGone(process_id), local);
  if (dumping_.erase(process_id) != 0 && dumping_.empty()) EndStalled(local);
  if (!barrier_book_.HasOpen()) return;  // without building the running set at each finish
  Deliver(barrier_book_.OnGone(process_id, book_.HowEnded(process_id),
                               book_.Running(/*with_unjoined=*/true)));
}

void LivenessHub::OnPeerNotice(int64_t from, const LiveNotice& notice,
                               std::vector<LiveNotice>& local) {
  switch (notice.kind) {
    case LiveKind::kFailed:
    case LiveKind::kFinished:
    case LiveKind::kLeft:
      Act(book_.OnNotice(from, notice), local);
      if (notice.kind != LiveKind::kFailed) OnGone(from, local);
      return;
    case LiveKind::kArmed:
      stop_book_.OnArmed(from);
      return;
    case LiveKind::kStopRequest: {
      const LiveMember* member = book_.member(from);
      StopRequest request{from, member ? member->host : "", member ? member->pid : 0,
                          static_cast<int>(notice.signal_number), notice.message,
                          notice.code == 1};
      OnStopRequest(request, local);
      return;
    }
    case LiveKind::kStopStep:
      ActOnStop(stop_book_.OnStep(from, notice.step), local);
      return;
    case LiveKind::kStalled:
      OnStalled(from, local);
      return;
    case LiveKind::kProgressReport: {
      if (!stall_book_) return;
      ProgressReport report;
      report.process_id = from;
      if (const LiveMember* member = book_.member(from)) {
        report.host = member->host;
        report.pid = member->pid;
      }
      report.armed = notice.code == 1;
      report.step = notice.step;
      report.idle = std::chrono::milliseconds(notice.millis);
      ActOnStallVerdict(stall_book_->OnReport(report), local);
      return;
    }
    case LiveKind::kStacksDumped:
      if (dumping_.erase(from) != 0 && dumping_.empty()) EndStalled(local);
      return;
    case LiveKind::kBarrierArrive: {
      const Nanos now = RealClock().Now();
      Deliver(barrier_book_.OnArrive(
          BarrierArrival{from, notice.index, notice.name,
                         now + std::chrono::milliseconds(std::max<int64_t>(0, notice.millis))},
          book_.RunningCount(/*with_unjoined=*/true),
          [this] { return book_.Running(/*with_unjoined=*/true); }, now));
      return;
    }
    default:
      return;  // not something a process says
  }
}

void LivenessHub::Tick(Nanos now, std::vector<LiveNotice>& local) {
  // With mutex_ held.
  if (watch_.active()) {
    const BoardNews news = watch_.Tick(now);
    if (news.armed) stop_book_.OnArmed(0);
    if (news.signal_number != 0) {
      OnStopRequest(StopRequest{0, self_.host, self_.pid, news.signal_number, "", news.urgent},
                    local);
    }
    if (news.stalled) OnStalled(0, local);
  }
  if (stall_book_ && stall_book_->deciding() && now >= stall_answers_by_) {
    ActOnStallVerdict(stall_book_->Decide(), local);
  }
  if (!dumping_.empty() && now >= dumps_by_) {
    dumping_.clear();
    EndStalled(local);
  }
  if (barrier_book_.HasOpen()) {
    Deliver(barrier_book_.OnTime(now, book_.Running(/*with_unjoined=*/true)));
  }
}

Nanos LivenessHub::NextTick(Nanos now) const {
  Nanos next = std::chrono::seconds(1);
  if (watch_.active()) next = std::min(next, kBoardTick);
  if (std::optional<Nanos> deadline = barrier_book_.NextDeadline()) {
    next = std::min(next, std::max(Nanos(0), *deadline - now));
  }
  return next;
}

// --- the thread ---------------------------------------------------------------------

void LivenessHub::Run() {
  RealClock clock;
  // One epoll set for the wake pipe, the listener and every connection: a wait
  // costs what is ready, not what is open (16,384 connections).
  constexpr uint64_t kWakeKey = 0, kListenerKey = 1, kFirstPeerKey = 2;
  (void)poller_->Add(thread_.wake_fd(), kWakeKey, /*want_write=*/false);
  if (listener_.fd.valid()) (void)poller_->Add(listener_.fd.get(), kListenerKey, false);
  while (!thread_.stopping()) {
    Nanos next_expiry{0};
    std::vector<LiveNotice> local;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const Nanos now = clock.Now();
      Tick(now, local);
      next_expiry = NextTick(now);
      if (close_joins_at_) {
        if (now >= *close_joins_at_) {
          Act(book_.CloseJoins(), local);
        } else {
          next_expiry = std::min(next_expiry, *close_joins_at_ - now);
        }
      }
      // The connections not admitted yet, in the order accepted (so by join_by).
      while (!unjoined_.empty()) {
        auto it = peers_.find(unjoined_.front());
        if (it == peers_.end() || it->second->process_id >= 0) {
          unjoined_.pop_front();
          continue;
        }
        if (now < it->second->join_by) {
          next_expiry = std::min(next_expiry, it->second->join_by - now);
          break;
        }
        poller_->Remove(it->second->fd.get());
        it->second->fd.CloseWithReset();  // never admitted: not in admitted_
        peers_.erase(it);
        unjoined_.pop_front();
      }
    }
    Deliver(local);  // from Tick and CloseJoins
    {
      std::lock_guard<std::mutex> turn(deliver_mutex_);
      if (deferred_) next_expiry = std::min(next_expiry, deferred_until_ - clock.Now());
    }
    Result<std::vector<EventPoller::Event>> events =
        poller_->Wait(std::max(next_expiry, Nanos(0)));
    if (!events.ok()) {
      clock.Sleep(std::chrono::milliseconds(10));  // never spin
      continue;
    }
    if (thread_.stopping()) break;
    std::unique_lock<std::mutex> lock(mutex_);
    for (const EventPoller::Event& event : *events) {
      if (event.key == kWakeKey) {
        thread_.DrainWake();
        continue;
      }
      if (event.key == kListenerKey) {
        for (int i = 0; i < 1024; ++i) {  // bounded: the connections' frames wait meanwhile
          Accepted a = AcceptOne(listener_.fd.get());
          if (a.io.state != IoState::kDone) break;
          SetKeepalive(a.fd.get(), options_);
          auto peer = std::make_unique<Peer>();
          peer->fd = std::move(a.fd);
          peer->join_by = clock.Now() + options_.join_timeout;
          const uint64_t key = next_key_++;
          if (!poller_->Add(peer->fd.get(), key + kFirstPeerKey, false).ok()) {
            peer->fd.CloseWithReset();  // out of descriptors: it retries or times out
            continue;
          }
          peers_[key] = std::move(peer);
          unjoined_.push_back(key);
        }
        continue;
      }
      auto it = peers_.find(event.key - kFirstPeerKey);
      if (it == peers_.end()) continue;  // closed earlier in this batch
      Peer& p = *it->second;
      bool drop = false;
      bool told = false;  // sent the notice that ended the job: close, do not reset
      int error = 0;
      const bool open = ReadFrames(p.fd.get(), p.in, [&](const std::string& frame) {
        if (p.process_id < 0) {
          Result<LiveJoin> join = DecodeLiveJoin(frame);
          const Status admission =
              join.ok() ? book_.Admit(*join, nonce_, PeerAddress(p.fd.get())) : join.status();
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
          admitted_[p.process_id] = &p;
          barrier_book_.SetHost(join->process_id, join->host);
          LiveNotice admitted;
          admitted.kind = LiveKind::kAdmitted;
          admitted.process_id = join->process_id;
          (void)SendAll(p.fd.get(), EncodeLiveNotice(admitted), options_.send_timeout, clock);
          if (stop_book_.decided()) {
            // A stop step agreed before it joined: it stops there too.
            LiveNotice at;
            at.kind = LiveKind::kStopAt;
            const StopRequest& request = *stop_book_.request();
            at.process_id = request.process_id;
            at.host = request.host;
            at.pid = request.pid;
            at.signal_number = request.signal_number;
            at.message = request.reason;
            at.step = stop_book_.stop_step();
            (void)SendAll(p.fd.get(), EncodeLiveNotice(at), options_.send_timeout, clock);
          }
          return true;
        }
        Result<LiveNotice> notice = DecodeLiveNotice(frame);
        if (!notice.ok()) return false;
        OnPeerNotice(p.process_id, *notice, local);
        return true;
      }, &error);
      if (open) continue;
      const int64_t id = p.process_id;
      poller_->Remove(p.fd.get());
      if (told) {
        p.fd.Close();  // a reset could discard the notice before it is read
      } else if (drop || id < 0) {
        p.fd.CloseWithReset();
      }
      if (id >= 0) admitted_.erase(id);
      peers_.erase(it);
      changed_.notify_all();  // ReportFailure may wait for the last one to leave
      if (id >= 0) {
        Act(book_.OnClosed(id, ConnectionEnd{error, WallClockMillis(),
                                             options_.unreachable_timeout}),
            local);
        OnGone(id, local);
      }
    }
    lock.unlock();
    Deliver(local);
  }
}

bool LivenessHub::AnyoneUntold() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Process 0 leaves last: its JAX service going away first would make the others'
  // JAX clients abort the process before kdist's line and exit status.
  if (!admitted_.empty()) return true;
  for (int64_t id : book_.NotJoined()) {
    if (told_.count(id) == 0) return true;
  }
  return false;
}

void LivenessHub::Deliver(std::vector<LiveNotice>& local) {
  // On the hub's thread (or an own-event caller), without mutex_. Process 0's
  // own handler may end this process (policy "exit", a stop, a stall): such a
  // notice waits (bounded) until every process that has not joined yet has
  // joined and heard it.
  RealClock clock;
  std::lock_guard<std::mutex> turn(deliver_mutex_);
  for (const LiveNotice& notice : local) {
    const bool ends = EndsTheJob(notice.kind);
    if (ends && !deferred_ && AnyoneUntold()) {
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

}  // namespace kdist
