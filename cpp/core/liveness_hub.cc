#include "liveness_hub.h"

#include <algorithm>
#include <utility>

#include "process_list.h"
#include "roll_call_options.h"

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
                                                        NoticeHandler on_notice) {
  KDIST_ASSIGN_OR_RETURN(Listener listener, ListenOnAllInterfaces(0, 1024));
  std::unique_ptr<LivenessHub> hub(new LivenessHub(std::move(listener), num_processes,
                                                   std::move(self), std::move(nonce), options,
                                                   std::move(on_notice)));
  KDIST_RETURN_IF_ERROR(
      hub->thread_.Start("the liveness channel", [h = hub.get()] { h->Run(); }));
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
  if (!thread_.Stop()) return;
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

void LivenessHub::Run() {
  RealClock clock;
  while (!thread_.stopping()) {
    std::vector<pollfd> fds{{thread_.wake_fd(), POLLIN, 0}, {listener_.fd.get(), POLLIN, 0}};
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
    if (thread_.stopping()) break;
    if (fds[0].revents) thread_.DrainWake();
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

}  // namespace kdist
