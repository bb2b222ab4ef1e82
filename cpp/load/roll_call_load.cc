#include "roll_call_load.h"

#include <cerrno>
#include <cstdio>
#include <deque>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "base/backoff.h"
#include "base/file_limit.h"
#include "loopback_connect.h"
#include "net/event_poller.h"
#include "roll_call/roll_call_options.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

constexpr Nanos kRound = milliseconds(10);
constexpr size_t kReadChunk = 4096;

enum class Stage { kQueued, kConnecting, kSending, kAwaiting, kDone };

struct Simulated {
  std::string hello;  // encoded once, up front
  Stage stage = Stage::kQueued;
  Fd fd;
  size_t sent = 0;
  FrameAssembler in;
  Backoff backoff{BackoffPolicy{}, 0};  // a refused connect waits as kdist's worker does
};

std::string HostName(const RollCallLoad& load, int64_t process_id) {
  char index[32];
  std::snprintf(index, sizeof index, "%04lld",
                static_cast<long long>(process_id / std::max<int64_t>(load.processes_per_host, 1)));
  return load.host_prefix + index;
}

class Generator {
 public:
  Generator(const RollCallLoad& load, Clock& clock, EventPoller poller)
      : load_(load), clock_(clock), poller_(std::move(poller)) {}

  Result<RollCallLoadReport> Run();

 private:
  void Start(size_t index);
  void OnConnected(size_t index);
  void OnWritable(size_t index);
  void OnReadable(size_t index);
  void Finish(size_t index);
  void Fail(size_t index, const std::string& why);
  // A refused connect is retried until the first verdict (process 0 not yet
  // listening); after it, the port is closed for good.
  void Retry(size_t index);
  void Refused(size_t index);
  int64_t Verdicts() const { return report_.went + report_.rejected; }

  const RollCallLoad& load_;
  Clock& clock_;
  EventPoller poller_;
  Nanos start_{0};
  std::vector<Simulated> sims_;
  std::deque<size_t> queued_;
  // Refused connects waiting for their backoff delay, earliest first.
  std::priority_queue<std::pair<Nanos, size_t>, std::vector<std::pair<Nanos, size_t>>,
                      std::greater<>>
      retries_;
  size_t in_flight_ = 0;  // connecting or sending
  int64_t finished_ = 0;
  int64_t hellos_sent_ = 0;
  RollCallLoadReport report_;
};

void Generator::Finish(size_t index) {
  Simulated& s = sims_[index];
  if (s.stage == Stage::kConnecting || s.stage == Stage::kSending) --in_flight_;
  if (s.fd.valid()) {
    poller_.Remove(s.fd.get());
    s.fd.Close();  // this side closes first, as kdist's worker does
  }
  s.stage = Stage::kDone;
  s.in = FrameAssembler();
  ++finished_;
  report_.last_verdict = clock_.Now() - start_;
}

void Generator::Fail(size_t index, const std::string& why) {
  if (report_.failed++ == 0) {
    report_.first_failure = "process " + std::to_string(load_.first_id + static_cast<int64_t>(index)) + ": " + why;
  }
  Finish(index);
}

void Generator::Retry(size_t index) {
  Simulated& s = sims_[index];
  if (Verdicts() > 0) {
    // Process 0 listened and has closed its port since: it will not come back.
    return Fail(index, "connection refused after process 0 gave its verdict");
  }
  poller_.Remove(s.fd.get());
  s.fd.Close();
  --in_flight_;
  s.stage = Stage::kQueued;
  Refused(index);
}

void Generator::Refused(size_t index) {
  const Nanos now = clock_.Now();
  if (report_.refused_connects++ == 0) report_.first_refused = now - start_;
  report_.last_refused = now - start_;
  retries_.emplace(now + sims_[index].backoff.Next(), index);
}

void Generator::Start(size_t index) {
  Simulated& s = sims_[index];
  Connecting c = ConnectFrom(load_.coordinator, index);
  if (c.io.state == IoState::kError) {
    if (c.io.error == ECONNREFUSED && Verdicts() == 0) return Refused(index);
    ++in_flight_;
    s.stage = Stage::kConnecting;
    Fail(index, "connect failed: " + ErrorText(c.io.error));
    return;
  }
  s.fd = std::move(c.fd);
  s.sent = 0;
  ++in_flight_;
  s.stage = Stage::kConnecting;
  if (!poller_.Add(s.fd.get(), index + 1, /*want_write=*/true).ok()) {
    Fail(index, "epoll_ctl failed (out of file descriptors?)");
    return;
  }
  if (c.io.state == IoState::kDone) OnConnected(index);
}

void Generator::OnConnected(size_t index) {
  sims_[index].stage = Stage::kSending;
  OnWritable(index);
}

void Generator::OnWritable(size_t index) {
  Simulated& s = sims_[index];
  if (s.stage == Stage::kConnecting) {
    const int error = ConnectResult(s.fd.get());
    if (error == ECONNREFUSED) return Retry(index);
    if (error != 0) return Fail(index, "connect failed: " + ErrorText(error));
    s.stage = Stage::kSending;
  }
  if (s.stage != Stage::kSending) return;
  while (s.sent < s.hello.size()) {
    const Io io = WriteSome(s.fd.get(), std::string_view(s.hello).substr(s.sent));
    if (io.state == IoState::kWouldBlock) return;
    if (io.state != IoState::kDone) return Fail(index, "writing the hello failed: " + ErrorText(io.error));
    s.sent += io.bytes;
  }
  s.stage = Stage::kAwaiting;
  --in_flight_;
  std::string().swap(s.hello);
  if (++hellos_sent_ == load_.count) report_.all_hellos_sent = clock_.Now() - start_;
  (void)poller_.WatchWrite(s.fd.get(), index + 1, /*want_write=*/false);
}

void Generator::OnReadable(size_t index) {
  Simulated& s = sims_[index];
  if (s.stage == Stage::kConnecting) return OnWritable(index);  // a failed connect reads as ready
  char buffer[kReadChunk];
  for (;;) {
    const Io io = ReadSome(s.fd.get(), buffer, sizeof buffer);
    if (io.state == IoState::kWouldBlock) return;
    if (io.state != IoState::kDone) {
      return Fail(index, io.state == IoState::kEof ? "process 0 closed without a verdict"
                                                   : "reading failed: " + ErrorText(io.error));
    }
    if (Status appended = s.in.Append(std::string_view(buffer, io.bytes)); !appended.ok()) {
      return Fail(index, "process 0 sent bytes that are not a frame: " + appended.message());
    }
    for (std::string frame = s.in.TakeFrame(); !frame.empty(); frame = s.in.TakeFrame()) {
      // Simulated processes have no token: their hello, sent at once, needs no nonce.
      if (DecodeChallenge(frame, "roll call").ok()) continue;
      Result<Reply> reply = DecodeReply(frame);
      if (!reply.ok()) return Fail(index, "unreadable reply: " + reply.status().message());
      if (reply->type == FrameType::kStatus) continue;
      if (reply->type == FrameType::kGo) {
        ++report_.went;
      } else if (report_.rejected++ == 0) {
        report_.first_rejection = reply->message;
      }
      return Finish(index);
    }
  }
}

Result<RollCallLoadReport> Generator::Run() {
  start_ = clock_.Now();
  sims_.resize(static_cast<size_t>(load_.count));
  for (size_t i = 0; i < sims_.size(); ++i) {
    Hello hello = load_.hello;
    hello.process_id = load_.first_id + static_cast<int64_t>(i);
    hello.host = HostName(load_, hello.process_id);
    hello.pid = 100000 + hello.process_id;
    sims_[i].hello = EncodeHello(hello);
    sims_[i].backoff = Backoff(WorkerBackoff(hello.num_processes), load_.seed + i);
    queued_.push_back(i);
  }
  const Nanos deadline = start_ + load_.timeout;
  while (finished_ < load_.count) {
    const Nanos now = clock_.Now();
    if (now >= deadline) {
      return DeadlineExceeded("the load generator timed out after " +
                              std::to_string(load_.timeout.count() / 1000000) + " ms with " +
                              std::to_string(load_.count - finished_) + " of " +
                              std::to_string(load_.count) + " simulated processes without a verdict");
    }
    while (!retries_.empty() && retries_.top().first <= now) {
      queued_.push_back(retries_.top().second);
      retries_.pop();
    }
    while (in_flight_ < load_.max_connecting && !queued_.empty()) {
      const size_t index = queued_.front();
      queued_.pop_front();
      Start(index);
    }
    Result<std::vector<EventPoller::Event>> events = poller_.Wait(std::min(kRound, deadline - now));
    if (!events.ok()) return events.status();
    for (const EventPoller::Event& event : *events) {
      const size_t index = static_cast<size_t>(event.key - 1);
      if (sims_[index].stage == Stage::kDone || sims_[index].stage == Stage::kQueued) continue;
      if (event.writable) OnWritable(index);
      if (event.readable && sims_[index].stage != Stage::kDone &&
          sims_[index].stage != Stage::kQueued) {
        OnReadable(index);
      }
    }
  }
  return report_;
}

}  // namespace

Result<RollCallLoadReport> RunRollCallLoad(const RollCallLoad& load, Clock& clock) {
  if (load.count < 0 || load.first_id < 0) return InvalidArgument("negative process count or id");
  if (Result<FileLimits> limits = EnsureFileLimit(load.count); !limits.ok()) {
    return limits.status();
  }
  Result<EventPoller> poller = EventPoller::Create();
  if (!poller.ok()) return poller.status();
  Generator generator(load, clock, std::move(poller).value());
  return generator.Run();
}

}  // namespace kdist
