// Helpers shared by the liveness channel's tests: members and joins of a
// test job, notices a process says about itself, and a whole job on loopback
// (a hub and its spokes, each with an inbox that collects its notices).
#ifndef KDIST_TESTING_LIVENESS_HELPERS_H_
#define KDIST_TESTING_LIVENESS_HELPERS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "liveness/liveness_book.h"
#include "liveness/liveness_connection.h"
#include "liveness/liveness_hub.h"
#include "liveness/liveness_spoke.h"
#include "liveness/liveness_wire.h"
#include "net/socket.h"

namespace kdist::testing {

// Process `id` of a test job: on host node-<id>, pid 4000 + id.
inline LiveMember Member(int64_t id) { return {id, "node-" + std::to_string(id), 4000 + id}; }

inline LiveJoin JoinOf(int64_t id, std::string nonce = "nonce") {
  return {id, std::move(nonce), "node-" + std::to_string(id), 4000 + id};
}

// A notice a process says about itself (the book fills in who).
inline LiveNotice Self(LiveKind kind, std::string message = "") {
  LiveNotice n;
  n.kind = kind;
  n.message = std::move(message);
  return n;
}

// Collects notices from a channel's thread.
struct Inbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<LiveNotice> notices;
  NoticeHandler Handler() {
    return [this](const LiveNotice& n) {
      std::lock_guard<std::mutex> lock(mutex);
      notices.push_back(n);
      changed.notify_all();
    };
  }
  // Whether `count` notices arrived within `timeout` (a short one proves an absence).
  bool WaitFor(size_t count, Nanos timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return notices.size() >= count; });
  }
};

// Time that moves only by Advance(), and may be read from a channel's thread while
// the test advances it (FakeClock is for one thread). Sleep() waits for real and
// moves nothing, so a loop that sleeps does not spin.
class ManualClock final : public Clock {
 public:
  Nanos Now() override { return Nanos(now_.load()); }
  void Sleep(Nanos duration) override { std::this_thread::sleep_for(duration); }
  void Advance(Nanos duration) { now_ += duration.count(); }

 private:
  std::atomic<int64_t> now_{Nanos(std::chrono::seconds(1000)).count()};
};

struct Job {
  // The hub's clock (set before StartJob; it must outlive the job); the spokes read
  // real_clock.
  RealClock real_clock;
  Clock* clock = &real_clock;
  Inbox hub_inbox;
  std::unique_ptr<LivenessHub> hub;
  Endpoint at;  // the hub's
  LivenessOptions options;
  // With `with_boards`, every process gets a StopBoard (boards[id]) and these
  // stop options; without, none (the channel only watches failures).
  bool with_boards = false;
  StopOptions stop;
  std::vector<std::unique_ptr<StopBoard>> boards;
  std::vector<std::unique_ptr<Inbox>> inboxes;
  std::vector<std::unique_ptr<LivenessSpoke>> spokes;

  // The channels stop first: the hub and the spokes hold the boards and the inboxes
  // (a hub's Stop() still tells its board), which members destroy before them.
  ~Job() {
    spokes.clear();
    hub.reset();
  }

  StopOptions StopOf(int64_t id) {
    StopOptions out = stop;
    out.board = with_boards ? boards[static_cast<size_t>(id)].get() : nullptr;
    return out;
  }

  // Process `id` joins (spokes[id - 1] when processes join in order).
  Result<std::unique_ptr<LivenessSpoke>> Join(int64_t id, Inbox& inbox) {
    return LivenessSpoke::Join(at, JoinOf(id), Member(0), options, StopOf(id), inbox.Handler(),
                               real_clock);
  }
};

// A hub for `n` processes, of which processes 1 .. `joined` join (all by default).
inline Status StartJob(Job& job, int n, LivenessOptions options = {}, int joined = -1) {
  job.options = options;
  for (int id = 0; id < n; ++id) job.boards.push_back(std::make_unique<StopBoard>());
  Result<std::unique_ptr<LivenessHub>> hub = LivenessHub::Start(
      n, Member(0), "nonce", options, job.StopOf(0), job.hub_inbox.Handler(), *job.clock);
  if (!hub.ok()) return hub.status();
  job.hub = std::move(*hub);
  Result<Endpoint> at = EndpointFromLiteral("127.0.0.1", job.hub->port());
  if (!at.ok()) return at.status();
  job.at = *at;
  for (int id = 1; id <= (joined < 0 ? n - 1 : joined); ++id) {
    job.inboxes.push_back(std::make_unique<Inbox>());
    Result<std::unique_ptr<LivenessSpoke>> spoke = job.Join(id, *job.inboxes.back());
    if (!spoke.ok()) return spoke.status();
    job.spokes.push_back(std::move(*spoke));
  }
  return Status::Ok();
}

}  // namespace kdist::testing

#endif  // KDIST_TESTING_LIVENESS_HELPERS_H_
