#include "liveness_spoke.h"

#include <optional>
#include <utility>
#include <vector>

#include "roll_call_options.h"
#include "worker.h"

namespace kdist {

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
  KDIST_RETURN_IF_ERROR(
      spoke->thread_.Start("the liveness channel", [s = spoke.get()] { s->Run(); }));
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
  if (!thread_.Stop()) return;
  std::lock_guard<std::mutex> lock(send_mutex_);
  fd_.Close();
}

Status LivenessSpoke::Send(const LiveNotice& notice) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  if (!fd_.valid() || thread_.stopping()) {
    return FailedPrecondition("the liveness channel is closed");
  }
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
  while (!thread_.stopping()) {
    std::vector<pollfd> fds{{thread_.wake_fd(), POLLIN, 0}, {fd_.get(), POLLIN, 0}};
    if (Poll(fds, std::chrono::seconds(1)) < 0) continue;
    if (thread_.stopping()) break;
    if (fds[0].revents) thread_.DrainWake();
    if (fds[1].revents == 0) continue;
    const bool open = ReadFrames(fd_.get(), in, [&](const std::string& frame) {
      Result<LiveNotice> notice = DecodeLiveNotice(frame);
      if (!notice.ok()) return true;  // a later version's frame: skip
      if (notice->kind == LiveKind::kAllDone) all_done = true;
      if (on_notice_) on_notice_(*notice);
      return true;
    });
    if (open) continue;
    if (!all_done && !thread_.stopping() && on_notice_) {
      on_notice_(LiveNotice{LiveKind::kDied, 0, coordinator_.host, coordinator_.pid,
                            "its liveness connection closed without a finish message", true});
    }
    break;
  }
}

}  // namespace kdist
