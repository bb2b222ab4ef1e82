#include "liveness/liveness_channel.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <string_view>
#include <thread>
#include <utility>

#include "base/hmac_sha256.h"
#include "base/text.h"
#include "stop/stop_signals.h"

namespace kdist {
namespace {

// Once every process finished and some leave without JAX's barrier, process 0
// waits this long (at most) for their connections to close, so that it leaves last.
constexpr int kLastOutPolls = 200;
constexpr Nanos kLastOutPoll = std::chrono::milliseconds(10);

void WriteLineToStderr(const std::string& line) {
  std::string out = line + "\n";
  std::string_view rest = out;
  for (int i = 0; i < 64 && !rest.empty(); ++i) {
    const ssize_t n = write(STDERR_FILENO, rest.data(), rest.size());
    if (n <= 0) break;
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

std::string HexOf(const Nonce& nonce) {
  return HexText(std::string_view(reinterpret_cast<const char*>(nonce.data()), nonce.size()));
}

}  // namespace

LivenessOptions LivenessOptionsOf(const ClusterSpec& spec) {
  return LivenessOptionsFor(spec.unreachable_timeout.value);
}

StopOptions StopOptionsOf(const ClusterSpec& spec, StopBoard* board) {
  StopOptions stop;
  stop.board = board;
  stop.stall_timeout = spec.stall_timeout.value;
  stop.stack_signal = spec.stall_timeout.value ? StackSignal() : 0;
  return stop;
}

LiveMember ThisProcess(int64_t process_id) {
  struct utsname names {};
  std::string host = uname(&names) == 0 ? std::string(names.nodename) : std::string();
  return LiveMember{process_id, std::move(host), static_cast<int64_t>(getpid()), ""};
}

LivenessChannel::LivenessChannel(const ClusterSpec& spec, int64_t process_id, ChannelHooks hooks)
    : clock_(hooks.clock != nullptr ? *hooks.clock : own_clock_),
      hooks_(std::move(hooks)),
      self_(ThisProcess(process_id)),
      policy_(spec.on_peer_failure.value),
      verdict_file_(spec.verdict_file.value) {}

LivenessChannel::~LivenessChannel() { Stop(); }

Result<std::unique_ptr<LivenessChannel>> LivenessChannel::StartHub(const ClusterSpec& spec,
                                                                   StopBoard* board, bool alone,
                                                                   ChannelHooks hooks) {
  std::unique_ptr<LivenessChannel> channel(new LivenessChannel(spec, 0, std::move(hooks)));
  if (!alone) {
    KDIST_ASSIGN_OR_RETURN(const Nonce nonce, FreshNonce());
    channel->nonce_ = HexOf(nonce);
  }
  KDIST_ASSIGN_OR_RETURN(
      channel->hub_,
      LivenessHub::Start(alone ? 1 : spec.num_processes.value, channel->self_, channel->nonce_,
                         LivenessOptionsOf(spec), StopOptionsOf(spec, board),
                         [c = channel.get()](const LiveNotice& notice) { c->Act(notice); },
                         channel->clock_,
                         alone ? std::vector<std::string>{} : spec.process_hosts.value));
  return channel;
}

Result<std::unique_ptr<LivenessChannel>> LivenessChannel::Join(
    const ClusterSpec& spec, StopBoard* board, const Endpoint& hub, const std::string& nonce,
    LiveMember coordinator, Nanos join_timeout, ChannelHooks hooks) {
  std::unique_ptr<LivenessChannel> channel(
      new LivenessChannel(spec, spec.process_id.value, std::move(hooks)));
  LivenessOptions options = LivenessOptionsOf(spec);
  options.join_timeout = join_timeout;
  const LiveMember& self = channel->self_;
  KDIST_ASSIGN_OR_RETURN(
      channel->spoke_,
      LivenessSpoke::Join(hub, LiveJoin{self.process_id, nonce, self.host, self.pid},
                          std::move(coordinator), options, StopOptionsOf(spec, board),
                          [c = channel.get()](const LiveNotice& notice) { c->Act(notice); },
                          channel->clock_));
  return channel;
}

uint16_t LivenessChannel::port() const { return hub_ ? hub_->port() : 0; }

void LivenessChannel::Act(const LiveNotice& notice) {
  const LiveAction action = DecideOnNotice(notice, policy_, finishing_.load());
  if (action == LiveAction::kExitFailure || action == LiveAction::kExitStopped ||
      action == LiveAction::kExitStalled) {
    ended_ = true;
  }
  switch (action) {
    case LiveAction::kNone:
      return;
    case LiveAction::kReport: {
      const std::string line = DescribeFailure(notice, self_.process_id, action);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        reported_.push_back(line);
      }
      Say(notice, line, -1);
      return;
    }
    case LiveAction::kSayStop:
      Say(notice, DescribeStop(notice, self_.process_id), -1);
      return;
    case LiveAction::kExitFailure:
      Leave(notice, DescribeFailure(notice, self_.process_id, action), 1);
      return;
    case LiveAction::kExitStopped:
      Leave(notice, DescribeStop(notice, self_.process_id), StopExitStatus(notice));
      return;
    case LiveAction::kExitStalled:
      Leave(notice, DescribeStop(notice, self_.process_id), 1);
      return;
    case LiveAction::kExitSuccess:
      if (hooks_.flush) hooks_.flush(hooks_.flush_bound);
      Exit(0);
      return;
  }
}

std::string LivenessChannel::ReportFailure(const std::string& message) {
  const std::string line = DescribeOwnFailure(self_, message);
  Record(VerdictEvent::kFailed, self_, message, -1, 1, line);
  Status status = hub_     ? hub_->ReportFailure(message)
                  : spoke_ ? spoke_->ReportFailure(message)
                           : FailedPrecondition("the liveness channel is closed");
  (void)status;  // best effort: the process leaves either way
  return line;
}

Status LivenessChannel::RequestStop(const std::string& reason) {
  return hub_     ? hub_->RequestStop(reason)
         : spoke_ ? spoke_->RequestStop(reason)
                  : FailedPrecondition("the liveness channel is closed");
}

Status LivenessChannel::Barrier(const std::string& name, int64_t index, Nanos timeout,
                                const std::function<Status()>& interrupted) {
  return hub_     ? hub_->Barrier(name, index, timeout, interrupted)
         : spoke_ ? spoke_->Barrier(name, index, timeout, interrupted)
                  : FailedPrecondition("the liveness channel is closed");
}

Result<FinishOutcome> LivenessChannel::Finish(bool barrier, Nanos timeout,
                                              const WaitOptions& wait) {
  finishing_ = true;
  if (spoke_) {
    (void)spoke_->Finish(barrier);  // best effort: a lost hub is reported on its own
    // Under "ignore", a peer that failed never reaches JAX's barrier.
    return Reported().empty() ? FinishOutcome::kBarrier : FinishOutcome::kNoBarrier;
  }
  if (!hub_) return FinishOutcome::kBarrier;
  (void)hub_->Finish(barrier);
  Result<bool> all_barrier =
      hub_->WaitAllDone(timeout, wait.progress_interval, wait.progress, wait.interrupted);
  if (!all_barrier.ok()) {
    if (all_barrier.status().code() == StatusCode::kDeadlineExceeded || !hub_->JobEnded()) {
      return all_barrier.status();
    }
    // A failure ended the job meanwhile: the failed process never reaches JAX's
    // barrier ("ignore"), or the channel's thread is ending this one ("exit").
    return policy_ == PeerFailurePolicy::kIgnore ? FinishOutcome::kNoBarrier
                                                 : FinishOutcome::kEnding;
  }
  if (*all_barrier) return FinishOutcome::kBarrier;
  for (int i = 0; i < kLastOutPolls && !hub_->Watched().empty(); ++i) {
    std::this_thread::sleep_for(kLastOutPoll);
  }
  return FinishOutcome::kNoBarrier;
}

std::vector<std::string> LivenessChannel::Reported() {
  std::lock_guard<std::mutex> lock(mutex_);
  return reported_;
}

bool LivenessChannel::JobEnded() { return ended_.load() || (hub_ && hub_->JobEnded()); }

std::vector<int64_t> LivenessChannel::Watched() {
  return hub_ ? hub_->Watched() : std::vector<int64_t>();
}

void LivenessChannel::Stop() {
  if (hub_) hub_->Stop();
  if (spoke_) spoke_->Stop();
}

void LivenessChannel::Record(VerdictEvent event, const LiveMember& about,
                             const std::string& message, int64_t step, int exit_status,
                             const std::string& line) {
  const VerdictRecord record{event, about.process_id, about.host,       about.pid, message,
                             step,  exit_status,      self_.process_id, line};
  (void)AppendVerdictRecord(verdict_file_, record);  // best effort: the process is leaving
}

void LivenessChannel::Say(const LiveNotice& notice, const std::string& line, int exit_status) {
  const bool stop = notice.kind == LiveKind::kStopAt || notice.kind == LiveKind::kStopNow;
  if (const std::optional<VerdictEvent> event = VerdictEventOf(notice.kind)) {
    Record(*event, LiveMember{notice.process_id, notice.host, notice.pid, notice.address},
           stop ? DescribeStopCause(notice) : notice.message,
           notice.kind == LiveKind::kStopAt ? notice.step : -1, exit_status, line);
  }
  if (hooks_.say) {
    hooks_.say(line);
  } else {
    WriteLineToStderr(line);
  }
}

// The job's end is said once per process: the first caller prints its line and
// leaves; one that comes meanwhile (another thread with another notice of the same
// end) prints nothing and waits for that exit, bounded.
void LivenessChannel::Leave(const LiveNotice& notice, const std::string& line, int status) {
  if (leaving_.exchange(true)) {
    if (!hooks_.exit) {
      std::this_thread::sleep_for(hooks_.flush_bound + std::chrono::seconds(5));
      Exit(status);
    }
    return;
  }
  if (hooks_.flush) hooks_.flush(hooks_.flush_bound);
  Say(notice, line, status);
  Exit(status);
}

void LivenessChannel::Exit(int status) {
  if (hooks_.exit) {
    hooks_.exit(status);
    return;
  }
  _exit(status);
}

}  // namespace kdist
