// Stopping together, process 0's side: a stop request agreed on one step (or the
// job ended at once), a stall named with the steps of the others, barriers with
// deadlines. The books decide (StopBook, StallBook, BarrierBook); this file feeds
// them and sends what they return.
#include "liveness/liveness_hub.h"

#include <algorithm>
#include <csignal>

#include "base/deadline.h"
#include "base/process_list.h"
#include "base/text.h"

namespace kdist {

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
  const Nanos arrived = clock_.Now();
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
    const Nanos now = clock_.Now();
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

void LivenessHub::OnStopRequest(const StopRequest& request, std::vector<LiveNotice>& local) {
  // Process 0's own board is read now, not at its thread's next tick: a request
  // that arrives first must still see that process 0 asks should_stop.
  if (stop_.board != nullptr && stop_.board->armed()) stop_book_.OnArmed(0);
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
  stall_answers_by_ = clock_.Now() + stop_.answer_timeout;
  LiveNotice query;
  query.kind = LiveKind::kProgressQuery;
  const std::string frame = EncodeLiveNotice(query);  // once for all
  for (int64_t id : running) {
    if (id != 0) SendFrameTo(id, frame);
  }
  ProgressReport own = watch_.Report(0, clock_.Now());
  own.host = self_.host;
  own.pid = self_.pid;
  ActOnStallVerdict(stall_book_->OnReport(own), local);
}

void LivenessHub::OnProgressReport(int64_t from, const LiveNotice& notice,
                                   std::vector<LiveNotice>& local) {
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
  dumps_by_ = clock_.Now() + stop_.answer_timeout;
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

void LivenessHub::OnBarrierArrive(int64_t from, const LiveNotice& notice) {
  const Nanos now = clock_.Now();
  Deliver(barrier_book_.OnArrive(
      BarrierArrival{from, notice.index, notice.name,
                     now + std::chrono::milliseconds(std::max<int64_t>(0, notice.millis))},
      book_.RunningCount(/*with_unjoined=*/true),
      [this] { return book_.Running(/*with_unjoined=*/true); }, now));
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

}  // namespace kdist
