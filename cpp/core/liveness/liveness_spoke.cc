#include "liveness/liveness_spoke.h"

#include <csignal>
#include <optional>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/text.h"
#include "liveness/barrier_book.h"

namespace kdist {

Result<std::unique_ptr<LivenessSpoke>> LivenessSpoke::Join(const Endpoint& hub,
                                                           const LiveJoin& join,
                                                           LiveMember coordinator,
                                                           LivenessOptions options,
                                                           StopOptions stop,
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
  SetKeepalive(c.fd.get(), options.keepalive);
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
      if (notice.ok() && EndsTheJob(notice->kind)) ended = *notice;
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
  std::unique_ptr<LivenessSpoke> spoke(new LivenessSpoke(std::move(c.fd), std::move(in), join,
                                                         std::move(coordinator), options, stop,
                                                         std::move(on_notice), clock));
  KDIST_RETURN_IF_ERROR(
      spoke->thread_.Start("the liveness channel", [s = spoke.get()] { s->Run(); }));
  if (stop.board != nullptr) stop.board->SetWakeFd(spoke->thread_.wake_write_fd());
  return spoke;
}

LivenessSpoke::LivenessSpoke(Fd fd, FrameAssembler in, LiveJoin join, LiveMember coordinator,
                             LivenessOptions options, StopOptions stop, NoticeHandler on_notice,
                             Clock& clock)
    : clock_(clock),
      fd_(std::move(fd)),
      in_(std::move(in)),
      join_(std::move(join)),
      coordinator_(std::move(coordinator)),
      options_(options),
      stop_(stop),
      on_notice_(std::move(on_notice)),
      watch_(stop) {}

LivenessSpoke::~LivenessSpoke() { Stop(); }

void LivenessSpoke::Stop() {
  if (stop_.board != nullptr) stop_.board->SetWakeFd(-1);
  if (!thread_.Stop()) return;
  {
    std::lock_guard<std::mutex> lock(send_mutex_);
    fd_.Close();
  }
  barrier_done_.notify_all();
}

Status LivenessSpoke::Send(const LiveNotice& notice) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  if (!fd_.valid() || thread_.stopping()) {
    return FailedPrecondition("the liveness channel is closed");
  }
  return SendAll(fd_.get(), EncodeLiveNotice(notice), options_.send_timeout, clock_);
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

Status LivenessSpoke::RequestStop(const std::string& reason) {
  LiveNotice notice;
  notice.kind = LiveKind::kStopRequest;
  notice.process_id = join_.process_id;
  notice.message = reason;
  notice.armed = stop_.board != nullptr && stop_.board->armed();
  return Send(notice);
}

Status LivenessSpoke::Barrier(const std::string& name, int64_t index, Nanos timeout,
                              const std::function<Status()>& interrupted) {
  if (stop_.board != nullptr) stop_.board->Beat();
  LiveNotice arrive;
  arrive.kind = LiveKind::kBarrierArrive;
  arrive.process_id = join_.process_id;
  arrive.index = index;
  arrive.name = name;
  arrive.millis = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  KDIST_RETURN_IF_ERROR(Send(arrive));
  // Process 0 decides at the deadline; this bound only ends the wait if it
  // never answers (its failure or death ends this process meanwhile anyway).
  const Nanos until = clock_.Now() + timeout + stop_.answer_timeout;
  std::unique_lock<std::mutex> lock(barrier_mutex_);
  while (true) {
    auto done = barriers_.find(index);
    if (done != barriers_.end()) {
      const LiveNotice notice = done->second;
      barriers_.erase(done);
      if (stop_.board != nullptr) stop_.board->Beat();
      return BarrierStatus(notice);
    }
    if (thread_.stopping()) return FailedPrecondition("the liveness channel is closed");
    if (clock_.Now() >= until) {
      return DeadlineExceeded("barrier " + Quote(name) + ": process 0 gave no verdict within " +
                              FormatTimeout(timeout + stop_.answer_timeout));
    }
    if (interrupted) {
      lock.unlock();
      KDIST_RETURN_IF_ERROR(interrupted());
      lock.lock();
    }
    barrier_done_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void LivenessSpoke::OnNotice(const LiveNotice& notice) {
  switch (notice.kind) {
    case LiveKind::kStopQuery: {
      LiveNotice answer;
      answer.kind = LiveKind::kStopStep;
      answer.process_id = join_.process_id;
      answer.step = stop_.board != nullptr ? stop_.board->BeginAgreement() : -1;
      (void)Send(answer);
      return;
    }
    case LiveKind::kStopAt:
      if (stop_.board != nullptr) {
        stop_.board->Decide(notice.step, static_cast<int>(notice.signal_number));
      }
      break;  // and the handler says so
    case LiveKind::kProgressQuery: {
      const ProgressReport report = watch_.Report(join_.process_id, clock_.Now());
      LiveNotice answer;
      answer.kind = LiveKind::kProgressReport;
      answer.process_id = join_.process_id;
      answer.step = report.step;
      answer.millis = std::chrono::duration_cast<std::chrono::milliseconds>(report.idle).count();
      answer.code = report.armed ? 1 : 0;
      (void)Send(answer);
      return;
    }
    case LiveKind::kDumpStacks: {
      if (stop_.stack_signal != 0) raise(stop_.stack_signal);  // written before raise returns
      LiveNotice answer;
      answer.kind = LiveKind::kStacksDumped;
      answer.process_id = join_.process_id;
      (void)Send(answer);
      return;
    }
    case LiveKind::kBarrierDone: {
      {
        std::lock_guard<std::mutex> lock(barrier_mutex_);
        barriers_[notice.index] = notice;
      }
      barrier_done_.notify_all();
      return;
    }
    default:
      break;
  }
  if (on_notice_) on_notice_(notice);
}

void LivenessSpoke::Tick(Nanos now) {
  if (!watch_.active()) return;
  const BoardNews news = watch_.Tick(now);
  if (news.armed) {
    LiveNotice armed;
    armed.kind = LiveKind::kArmed;
    armed.process_id = join_.process_id;
    (void)Send(armed);
  }
  if (news.signal_number != 0) {
    LiveNotice request;
    request.kind = LiveKind::kStopRequest;
    request.process_id = join_.process_id;
    request.signal_number = news.signal_number;
    request.code = news.urgent ? 1 : 0;
    request.armed = stop_.board->armed();
    (void)Send(request);
  }
  if (news.stalled) {
    const ProgressReport report = watch_.Report(join_.process_id, now);
    LiveNotice stalled;
    stalled.kind = LiveKind::kStalled;
    stalled.process_id = join_.process_id;
    stalled.step = report.step;
    stalled.millis = std::chrono::duration_cast<std::chrono::milliseconds>(report.idle).count();
    (void)Send(stalled);
  }
}

void LivenessSpoke::Run() {
  bool all_done = false;
  const auto read = [&](const std::string& frame) {
    Result<LiveNotice> notice = DecodeLiveNotice(frame);
    if (!notice.ok()) return true;  // a later version's frame: skip
    if (notice->kind == LiveKind::kAllDone) all_done = true;
    OnNotice(*notice);
    return true;
  };
  // What arrived with the admission, before the thread started.
  for (std::string frame = in_.TakeFrame(); !frame.empty(); frame = in_.TakeFrame()) read(frame);
  while (!thread_.stopping()) {
    std::vector<pollfd> fds{{thread_.wake_fd(), POLLIN, 0}, {fd_.get(), POLLIN, 0}};
    const Nanos wait = watch_.active() ? kBoardTick : Nanos(std::chrono::seconds(1));
    if (Poll(fds, wait) < 0) continue;
    if (thread_.stopping()) break;
    if (fds[0].revents) thread_.DrainWake();
    Tick(clock_.Now());
    if (fds[1].revents == 0) continue;
    int error = 0;
    const bool open = ReadFrames(fd_.get(), in_, read, &error);
    if (open) continue;
    if (!all_done && !thread_.stopping() && on_notice_) {
      on_notice_(LostConnectionNotice(coordinator_, EndOf(fd_.get(), error, options_),
                                      "its liveness connection closed without a finish message"));
    }
    break;
  }
}

}  // namespace kdist
