// The hub's thread: one epoll set for the wake pipe, the listener and every
// connection (a wait costs what is ready, not what is open: 16,384 connections);
// each turn ticks the books, drops late joiners, reads what is ready and hands
// process 0's own notices on, without the lock.
#include "liveness/liveness_hub.h"

#include <algorithm>

namespace kdist {

void LivenessHub::Run() {
  (void)poller_->Add(thread_.wake_fd(), kWakeKey, /*want_write=*/false);
  if (listener_.fd.valid()) (void)poller_->Add(listener_.fd.get(), kListenerKey, false);
  while (!thread_.stopping()) {
    Nanos next_expiry{0};
    std::vector<LiveNotice> local;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const Nanos now = clock_.Now();
      Tick(now, local);
      next_expiry = NextTick(now);
      if (close_joins_at_) {
        if (now >= *close_joins_at_) {
          BroadcastAndQueue(book_.CloseJoins(), local);
        } else {
          next_expiry = std::min(next_expiry, *close_joins_at_ - now);
        }
      }
      next_expiry = DropLateJoiners(now, next_expiry);
    }
    Deliver(local);  // from Tick and CloseJoins
    {
      std::lock_guard<std::mutex> turn(deliver_mutex_);
      if (deferred_) next_expiry = std::min(next_expiry, deferred_until_ - clock_.Now());
    }
    Result<std::vector<EventPoller::Event>> events =
        poller_->Wait(std::max(next_expiry, Nanos(0)));
    if (!events.ok()) {
      clock_.Sleep(std::chrono::milliseconds(10));  // never spin
      continue;
    }
    if (thread_.stopping()) break;
    std::unique_lock<std::mutex> lock(mutex_);
    for (const EventPoller::Event& event : *events) {
      if (event.key == kWakeKey) {
        thread_.DrainWake();
      } else if (event.key == kListenerKey) {
        AcceptJoining();
      } else {
        auto it = peers_.find(event.key - kFirstPeerKey);
        if (it != peers_.end()) ReadFrom(it, local);  // else closed earlier in this batch
      }
    }
    lock.unlock();
    Deliver(local);
  }
}

void LivenessHub::ReadFrom(Peers::iterator it, std::vector<LiveNotice>& local) {
  Peer& p = *it->second;
  bool told = false;  // sent the notice that ended the job: close, do not reset
  int error = 0;
  const bool open = ReadFrames(p.fd.get(), p.in, [&](const std::string& frame) {
    if (p.process_id < 0) return AdmitOrRefuse(p, frame, told);
    Result<LiveNotice> notice = DecodeLiveNotice(frame);
    if (!notice.ok()) return false;
    OnPeerNotice(p.process_id, *notice, local);
    return true;
  }, &error);
  if (open) return;
  const int64_t id = p.process_id;
  const ConnectionEnd end = EndOf(p.fd.get(), error, options_);
  poller_->Remove(p.fd.get());
  if (told) {
    p.fd.Close();  // a reset could discard the notice before it is read
  } else if (id < 0) {
    p.fd.CloseWithReset();  // refused, or closed before it joined
  }
  if (id >= 0) admitted_.erase(id);
  peers_.erase(it);
  changed_.notify_all();  // ReportFailure may wait for the last one to leave
  if (id >= 0) {
    BroadcastAndQueue(book_.OnClosed(id, end), local);
    OnGone(id, local);
  }
}

void LivenessHub::OnPeerNotice(int64_t from, const LiveNotice& notice,
                               std::vector<LiveNotice>& local) {
  switch (notice.kind) {
    case LiveKind::kFailed:
    case LiveKind::kFinished:
    case LiveKind::kLeft:
      BroadcastAndQueue(book_.OnNotice(from, notice), local);
      if (notice.kind != LiveKind::kFailed) OnGone(from, local);
      return;
    case LiveKind::kArmed:
      stop_book_.OnArmed(from);
      return;
    case LiveKind::kStopRequest: {
      const LiveMember* member = book_.member(from);
      StopRequest request{from, member ? member->host : "", member ? member->pid : 0,
                          static_cast<int>(notice.signal_number), notice.message,
                          notice.code == 1, notice.armed};
      OnStopRequest(request, local);
      return;
    }
    case LiveKind::kStopStep:
      ActOnStop(stop_book_.OnStep(from, notice.step), local);
      return;
    case LiveKind::kStalled:
      OnStalled(from, local);
      return;
    case LiveKind::kProgressReport:
      OnProgressReport(from, notice, local);
      return;
    case LiveKind::kStacksDumped:
      if (dumping_.erase(from) != 0 && dumping_.empty()) EndStalled(local);
      return;
    case LiveKind::kBarrierArrive:
      OnBarrierArrive(from, notice);
      return;
    default:
      return;  // not something a process says
  }
}

}  // namespace kdist
