#include "liveness/liveness_hub.h"

#include <algorithm>
#include <utility>

#include "base/deadline.h"
#include "base/file_limit.h"
#include "base/process_list.h"
#include "base/text.h"

namespace kdist {

Result<std::unique_ptr<LivenessHub>> LivenessHub::Start(int64_t num_processes, LiveMember self,
                                                        std::string nonce,
                                                        LivenessOptions options,
                                                        StopOptions stop, NoticeHandler on_notice,
                                                        Clock& clock,
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
                                                   stop, std::move(on_notice), clock,
                                                   std::move(hosts)));
  hub->poller_ = std::make_unique<EventPoller>(std::move(poller));
  KDIST_RETURN_IF_ERROR(
      hub->thread_.Start("the liveness channel", [h = hub.get()] { h->Run(); }));
  if (stop.board != nullptr) stop.board->SetWakeFd(hub->thread_.wake_write_fd());
  return hub;
}

LivenessHub::LivenessHub(Listener listener, int64_t num_processes, LiveMember self,
                         std::string nonce, LivenessOptions options, StopOptions stop,
                         NoticeHandler on_notice, Clock& clock,
                         std::vector<std::string> hosts)
    : clock_(clock),
      listener_(std::move(listener)),
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
  // On the hub's thread or an own-event caller.
  const std::string frame = EncodeLiveNotice(notice);
  for (auto& [key, peer] : peers_) {
    if (peer->process_id < 0 || peer->process_id == notice.process_id) continue;
    (void)SendAll(peer->fd.get(), frame, options_.send_timeout, clock_);
  }
}

void LivenessHub::SendToAll(const LiveNotice& notice) {
  const std::string frame = EncodeLiveNotice(notice);
  for (auto& [id, peer] : admitted_) {
    (void)SendAll(peer->fd.get(), frame, options_.send_timeout, clock_);
  }
}

void LivenessHub::SendTo(int64_t process_id, const LiveNotice& notice) {
  SendFrameTo(process_id, EncodeLiveNotice(notice));
}

void LivenessHub::SendFrameTo(int64_t process_id, const std::string& frame) {
  auto it = admitted_.find(process_id);
  if (it == admitted_.end()) return;
  (void)SendAll(it->second->fd.get(), frame, options_.send_timeout, clock_);
}

void LivenessHub::BroadcastAndQueue(const std::optional<LiveNotice>& notice,
                                    std::vector<LiveNotice>& local) {
  // process 0's own handler is called later, without the lock (Deliver).
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
      close_joins_at_ = clock_.Now() + options_.join_timeout;
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
  const Nanos start = clock_.Now();
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
    const Nanos now = clock_.Now();
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
  std::lock_guard<std::mutex> turn(deliver_mutex_);
  for (const LiveNotice& notice : local) {
    const bool ends = EndsTheJob(notice.kind);
    if (ends && !deferred_ && AnyoneUntold()) {
      deferred_ = notice;
      deferred_until_ = clock_.Now() + std::min<Nanos>(options_.join_timeout, kMaxExitDelay);
      continue;
    }
    if (on_notice_) on_notice_(notice);
  }
  local.clear();
  if (deferred_ && (clock_.Now() >= deferred_until_ || !AnyoneUntold())) {
    const LiveNotice notice = *deferred_;
    deferred_.reset();
    if (on_notice_) on_notice_(notice);
  }
}

}  // namespace kdist
