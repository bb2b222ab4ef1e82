#include "liveness/liveness_book.h"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <utility>

#include "base/deadline.h"
#include "base/hmac_sha256.h"
#include "base/text.h"
#include "stop/stop_signals.h"

namespace kdist {
namespace {

std::string WithHost(const std::string& host, int64_t pid) {
  std::string out = "host " + (host.empty() ? std::string("unknown") : RelayText(host));
  if (pid > 0) out += ", pid " + std::to_string(pid);
  return out;
}

// "20:01:07", this machine's local time of `unix_millis`.
// "process 2 (host node-2, pid 977, address 10.0.0.3) is unreachable since
// 20:01:07 (no answer from its host for 20 s; KDIST_UNREACHABLE_TIMEOUT)".
std::string DescribeUnreachable(const LiveNotice& notice) {
  std::string out = "process " + std::to_string(notice.process_id) + " (" +
                    WithHost(notice.host, notice.pid);
  if (!notice.address.empty()) out += ", address " + RelayText(notice.address);
  return out + ") is unreachable since " + WallClockTime(notice.since_unix_millis) +
         " (no answer from its host for " +
         FormatTimeout(std::chrono::milliseconds(notice.millis)) +
         "; KDIST_UNREACHABLE_TIMEOUT)";
}

}  // namespace

ConnectionLoss ClassifyConnectionEnd(int error) {
  switch (error) {
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
      return ConnectionLoss::kUnreachable;
    default:
      return ConnectionLoss::kClosed;  // EOF (0), ECONNRESET, EPIPE, ...
  }
}

LiveNotice LostConnectionNotice(const LiveMember& peer, const ConnectionEnd& end,
                                std::string closed_message) {
  LiveNotice notice;
  notice.kind = LiveKind::kDied;
  notice.process_id = peer.process_id;
  notice.host = peer.host;
  notice.pid = peer.pid;
  notice.message = std::move(closed_message);
  if (ClassifyConnectionEnd(end.error) == ConnectionLoss::kUnreachable) {
    const int64_t window =
        std::chrono::duration_cast<std::chrono::milliseconds>(end.unreachable_timeout).count();
    notice.kind = LiveKind::kUnreachable;
    notice.millis = window;
    notice.message = "no answer from its host for " +
                     FormatTimeout(std::chrono::milliseconds(window)) +
                     " (its connection timed out)";
    // Since the host went silent: its last word as the kernel saw it, else (unknown, or
    // further back than the window plus a probe's worth, which a gap cannot be) the window.
    const bool heard = end.last_heard_unix_millis > 0 &&
                       end.last_heard_unix_millis <= end.at_unix_millis &&
                       end.at_unix_millis - end.last_heard_unix_millis <= 2 * window;
    notice.since_unix_millis = heard ? end.last_heard_unix_millis : end.at_unix_millis - window;
    notice.address = peer.address;
  }
  return notice;
}

LivenessBook::LivenessBook(int64_t num_processes, LiveMember self)
    : num_processes_(num_processes) {
  states_[self.process_id] = State::kRunning;
  running_ = 1;
  members_[self.process_id] = std::move(self);
}

Status LivenessBook::Admit(const LiveJoin& join, std::string_view nonce, std::string address) {
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
  ++running_;
  members_[join.process_id] = LiveMember{join.process_id, join.host, join.pid, std::move(address)};
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
      SetState(state->second, State::kFailed);
      if (first_failure_ || all_done_) return std::nullopt;
      first_failure_ = notice;
      return notice;
    case LiveKind::kFinished:
    case LiveKind::kLeft:
      if (state->second != State::kRunning) return std::nullopt;
      SetState(state->second,
               notice.kind == LiveKind::kFinished ? State::kFinished : State::kLeft);
      return CheckAllDone();
    default:
      return std::nullopt;  // not something a process says about itself
  }
}

std::optional<LiveNotice> LivenessBook::OnClosed(int64_t id, const ConnectionEnd& end) {
  auto state = states_.find(id);
  if (state == states_.end()) return std::nullopt;
  const bool ended = state->second == State::kRunning ||
                     (state->second == State::kFinished && !all_done_);
  if (!ended) return std::nullopt;
  const bool had_finished = state->second == State::kFinished;
  SetState(state->second, State::kDied);
  if (first_failure_ || all_done_) return std::nullopt;
  const LiveNotice notice = LostConnectionNotice(
      members_[id], end,
      had_finished ? "it said it finished, then its connection closed before the others "
                     "finished (it did not wait in JAX's shutdown barrier)"
                   : "its connection closed without a finish message");
  first_failure_ = notice;
  return notice;
}

const char* LivenessBook::HowEnded(int64_t id) const {
  auto state = states_.find(id);
  if (state == states_.end()) return "ended";
  switch (state->second) {
    case State::kFinished: return "finished";
    case State::kLeft: return "left";
    case State::kFailed: return "failed";
    case State::kDied: return "died";
    case State::kRunning: break;
  }
  return "ended";
}

void LivenessBook::SetState(State& state, State to) {
  if (state == State::kRunning) --running_;
  if (to == State::kRunning) ++running_;
  state = to;
}

int64_t LivenessBook::RunningCount(bool with_unjoined) const {
  if (first_failure_ || all_done_) return 0;
  int64_t out = running_;
  if (with_unjoined && !joins_closed_) {
    // states_ holds process 0 and every process that joined.
    out += num_processes_ - static_cast<int64_t>(states_.size());
  }
  return out;
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
  if (running_ > 0) return std::nullopt;  // without walking every process at each finish
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

const LiveMember* LivenessBook::member(int64_t id) const {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : &it->second;
}

bool LivenessBook::EndJob(const LiveNotice& notice) {
  if (first_failure_ || all_done_) return false;
  first_failure_ = notice;
  return true;
}

std::set<int64_t> LivenessBook::Running(bool with_unjoined) const {
  std::set<int64_t> out;
  if (first_failure_ || all_done_) return out;
  for (const auto& [id, state] : states_) {
    if (state == State::kRunning) out.insert(id);
  }
  if (with_unjoined) {
    for (int64_t id : NotJoined()) out.insert(id);
  }
  return out;
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
    case LiveKind::kUnreachable:
      return policy == PeerFailurePolicy::kExit ? LiveAction::kExitFailure : LiveAction::kReport;
    case LiveKind::kAllDone:
      return !notice.barrier && finishing ? LiveAction::kExitSuccess : LiveAction::kNone;
    case LiveKind::kStopAt:
      return LiveAction::kSayStop;
    case LiveKind::kStopNow:
      return LiveAction::kExitStopped;  // a stop is the whole job's, whatever the policy
    case LiveKind::kJobStalled:
      return LiveAction::kExitStalled;
    default:
      return LiveAction::kNone;
  }
}

bool EndsTheJob(LiveKind kind) {
  return kind == LiveKind::kFailed || kind == LiveKind::kDied || kind == LiveKind::kUnreachable ||
         kind == LiveKind::kStopNow || kind == LiveKind::kJobStalled;
}

std::string DescribeOwnFailure(const LiveMember& self, const std::string& message) {
  return "kdist: process " + std::to_string(self.process_id) + " (" +
         WithHost(self.host, self.pid) + ") failed: " + RelayText(message) +
         "; told the other processes; stopping process " + std::to_string(self.process_id);
}

std::string DescribeStopCause(const LiveNotice& notice) {
  if (notice.signal_number != 0) return SignalName(static_cast<int>(notice.signal_number));
  return "request_stop(" + Quote(notice.message) + ")";
}

int StopExitStatus(const LiveNotice& notice) {
  return 128 + (notice.signal_number != 0 ? static_cast<int>(notice.signal_number) : SIGTERM);
}

std::string DescribeStop(const LiveNotice& notice, int64_t self) {
  if (notice.kind == LiveKind::kJobStalled) {
    return "kdist: the job stalled: " + RelayText(notice.message) + "; stopping process " +
           std::to_string(self);
  }
  std::string out = "kdist: process " + std::to_string(notice.process_id) + " (" +
                    WithHost(notice.host, notice.pid) + ") asked to stop (" +
                    DescribeStopCause(notice) + ")";
  if (notice.kind == LiveKind::kStopAt) {
    return out + "; every process stops at step " + std::to_string(notice.step);
  }
  out += notice.code == 1 ? " a second time, so the job stops now"
                          : " and no process calls kdist.should_stop(step), so the job stops now";
  return out + "; stopping process " + std::to_string(self) + " (status " +
         std::to_string(StopExitStatus(notice)) + ")";
}

std::string DescribeFailure(const LiveNotice& notice, int64_t self, LiveAction action) {
  std::string out = "kdist: ";
  if (notice.kind == LiveKind::kUnreachable && notice.process_id == 0 && self != 0) {
    out += "process " + std::to_string(self) + " lost the coordinator: " +
           DescribeUnreachable(notice) +
           ": this host or the coordinator's lost power or its network, or a firewall drops "
           "the traffic between them; process 0 was not seen to die";
  } else if (notice.kind == LiveKind::kUnreachable) {
    out += DescribeUnreachable(notice) +
           ": its host lost power or its network, or a firewall drops its traffic; the "
           "process was not seen to die (unreachable, not dead) and may still be running "
           "there";
  } else {
    out += "process " + std::to_string(notice.process_id) + " (" +
           WithHost(notice.host, notice.pid) + ") ";
    if (notice.kind == LiveKind::kFailed) {
      out += "failed first: " + RelayText(notice.message);
    } else {
      out += "died (" + RelayText(notice.message) + ") while the job was running";
    }
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

}  // namespace kdist
