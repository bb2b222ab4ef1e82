#include "stop/stop_book.h"

#include <algorithm>

namespace kdist {

StopBook::Action StopBook::OnRequest(const StopRequest& request,
                                     const std::set<int64_t>& running) {
  if (request.armed) armed_.insert(request.process_id);
  if (ended_now_) return Action::kNone;
  if (request_) {
    // Already stopping: a second stop signal in a process ("now") ends the job
    // at once, agreed step or not; anything else changes nothing.
    if (!request.urgent) return Action::kNone;
    ended_now_ = ended_urgently_ = true;
    return Action::kStopNow;
  }
  request_ = request;
  if (armed_.empty() || request.urgent) {
    ended_now_ = true;
    ended_urgently_ = request.urgent;
    return Action::kStopNow;
  }
  awaited_ = running;
  return awaited_.empty() ? MaybeDecide() : Action::kQuery;
}

StopBook::Action StopBook::OnStep(int64_t process_id, int64_t step) {
  if (!request_ || decided_ || ended_now_ || awaited_.erase(process_id) == 0) {
    return Action::kNone;
  }
  largest_ = std::max(largest_, step);
  return MaybeDecide();
}

StopBook::Action StopBook::OnGone(int64_t process_id) {
  if (!request_ || decided_ || ended_now_ || awaited_.erase(process_id) == 0) {
    return Action::kNone;
  }
  return MaybeDecide();
}

StopBook::Action StopBook::MaybeDecide() {
  if (!awaited_.empty()) return Action::kNone;
  decided_ = true;
  stop_step_ = largest_ + 1;  // 0 when no process had reported a step
  return Action::kDecided;
}

}  // namespace kdist
