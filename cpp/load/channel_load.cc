#include "channel_load.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "base/file_limit.h"
#include "base/wire.h"
#include "liveness/liveness_connection.h"
#include "liveness/liveness_wire.h"
#include "loopback_connect.h"
#include "net/event_poller.h"

namespace kdist {

struct ChannelLoad::Simulated {
  int64_t id = 0;
  Fd fd;
  FrameAssembler in;
  std::string out;      // frames not yet written
  bool connecting = false;
  bool watching_write = false;
  bool closed = false;  // by this side (the failure) or by the hub
  bool told = false;    // in the scenario being played
};

namespace {

constexpr Nanos kRound = std::chrono::milliseconds(10);

// What a scenario makes of a frame a simulated process received: not its
// business (a wrong answer), answered (the reply is queued), or the outcome.
struct Reaction {
  enum Kind { kOther, kAnswered, kTold } kind = kOther;
  int64_t value = 0;
};

}  // namespace

class ChannelLoad::Impl {
 public:
  Impl(ChannelLoadOptions options, Clock& clock, EventPoller poller)
      : options_(std::move(options)), clock_(clock), poller_(std::move(poller)) {
    sims_.resize(static_cast<size_t>(options_.count));
    for (size_t i = 0; i < sims_.size(); ++i) {
      sims_[i].id = options_.first_id + static_cast<int64_t>(i);
    }
  }

  Result<ChannelScenarioReport> Join();
  Result<ChannelScenarioReport> Stop(int64_t requester, int64_t base_step);
  Result<ChannelScenarioReport> Barrier(int64_t index, const std::string& name);
  Result<ChannelScenarioReport> Stall(int64_t stuck, int64_t base_step);
  Result<ChannelScenarioReport> Failure(int64_t victim);
  Result<ChannelScenarioReport> Finish();
  Result<int64_t> BytesWhileIdle(Nanos quiet);

 private:
  using React = std::function<Reaction(Simulated&, const LiveNotice&)>;
  // Plays until every connected simulated process was told (or the timeout):
  // `start` is when the scenario began (its time counts from there).
  Result<ChannelScenarioReport> Play(const char* scenario, Nanos start, const React& react);
  Simulated* Find(int64_t id);
  void Queue(Simulated& s, const LiveNotice& notice) { s.out += EncodeLiveNotice(notice); }
  void Flush(Simulated& s);
  void Read(Simulated& s, const React& react);
  void Lost(Simulated& s, const std::string& why);
  void Connect(size_t index);
  int64_t Connected() const;
  Status Timeout(const char* scenario) const;

  ChannelLoadOptions options_;
  Clock& clock_;
  EventPoller poller_;
  std::vector<Simulated> sims_;
  ChannelScenarioReport report_;
  int64_t bytes_ = 0;  // frame bytes read, for BytesWhileIdle
  size_t in_flight_ = 0;
};

ChannelLoad::Simulated* ChannelLoad::Impl::Find(int64_t id) {
  const int64_t index = id - options_.first_id;
  if (index < 0 || index >= options_.count) return nullptr;
  return &sims_[static_cast<size_t>(index)];
}

int64_t ChannelLoad::Impl::Connected() const {
  return std::count_if(sims_.begin(), sims_.end(), [](const Simulated& s) { return !s.closed; });
}

Status ChannelLoad::Impl::Timeout(const char* scenario) const {
  return DeadlineExceeded(std::string("the channel load generator's ") + scenario +
                          " timed out after " +
                          std::to_string(options_.timeout.count() / 1000000) + " ms: " +
                          std::to_string(report_.told) + " of " +
                          std::to_string(report_.expected) +
                          " simulated processes were told its outcome" +
                          (report_.first_other.empty() ? "" : "; first unexpected: " +
                                                                  report_.first_other));
}

void ChannelLoad::Impl::Lost(Simulated& s, const std::string& why) {
  if (s.closed) return;
  if (s.connecting) --in_flight_;
  s.connecting = false;
  poller_.Remove(s.fd.get());
  s.fd.Close();
  s.closed = true;
  if (report_.other++ == 0) {
    report_.first_other = "process " + std::to_string(s.id) + ": " + why;
  }
}

void ChannelLoad::Impl::Flush(Simulated& s) {
  if (s.closed || s.connecting) return;
  size_t sent = 0;
  while (sent < s.out.size()) {
    const Io io = WriteSome(s.fd.get(), std::string_view(s.out).substr(sent));
    if (io.state == IoState::kWouldBlock) break;
    if (io.state != IoState::kDone) return Lost(s, "writing failed: " + ErrorText(io.error));
    sent += io.bytes;
  }
  s.out.erase(0, sent);
  const bool want = !s.out.empty();
  if (want != s.watching_write) {
    s.watching_write = want;
    (void)poller_.WatchWrite(s.fd.get(), static_cast<uint64_t>(&s - sims_.data()) + 1, want);
  }
}

void ChannelLoad::Impl::Read(Simulated& s, const React& react) {
  int error = 0;
  const bool open = ReadFrames(s.fd.get(), s.in, [&](const std::string& frame) {
    bytes_ += static_cast<int64_t>(frame.size());
    Result<LiveNotice> notice = DecodeLiveNotice(frame);
    if (!notice.ok()) {
      if (report_.other++ == 0) {
        report_.first_other = "process " + std::to_string(s.id) +
                              ": an unreadable frame: " + notice.status().message();
      }
      return true;
    }
    const Reaction r = react ? react(s, *notice) : Reaction{};
    if (r.kind == Reaction::kOther) {
      if (report_.other++ == 0) {
        report_.first_other = "process " + std::to_string(s.id) + " was told " +
                              LiveKindName(notice->kind) + " about process " +
                              std::to_string(notice->process_id);
      }
    } else if (r.kind == Reaction::kTold) {
      if (s.told) {
        ++report_.told_twice;
      } else {
        s.told = true;
        if (report_.told++ == 0) {
          report_.lowest = report_.highest = r.value;
        } else {
          report_.lowest = std::min(report_.lowest, r.value);
          report_.highest = std::max(report_.highest, r.value);
        }
        if (report_.told == report_.expected) report_.seconds = NanosToSeconds(clock_.Now());
      }
    }
    return true;
  }, &error);
  Flush(s);
  if (!open) Lost(s, "the hub closed the connection (" + ErrorText(error) + ")");
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Play(const char* scenario, Nanos start,
                                                      const React& react) {
  const Nanos deadline = start + options_.timeout;
  std::deque<size_t> queued;
  while (report_.told < report_.expected) {
    const Nanos now = clock_.Now();
    if (now >= deadline) return Timeout(scenario);
    Result<std::vector<EventPoller::Event>> events =
        poller_.Wait(std::min(kRound, deadline - now));
    if (!events.ok()) return events.status();
    for (const EventPoller::Event& event : *events) {
      Simulated& s = sims_[static_cast<size_t>(event.key - 1)];
      if (s.closed) continue;
      if (event.writable) Flush(s);
      if (event.readable && !s.closed) Read(s, react);
    }
  }
  ChannelScenarioReport out = report_;
  out.seconds = report_.seconds - NanosToSeconds(start);
  return out;
}

void ChannelLoad::Impl::Connect(size_t index) {
  Simulated& s = sims_[index];
  Connecting c = ConnectFrom(options_.hub, index);
  if (c.io.state == IoState::kError) {
    s.closed = true;
    if (report_.other++ == 0) {
      report_.first_other = "process " + std::to_string(s.id) +
                            ": connect failed: " + ErrorText(c.io.error);
    }
    return;
  }
  s.fd = std::move(c.fd);
  s.connecting = c.io.state != IoState::kDone;
  if (s.connecting) ++in_flight_;
  LiveJoin join{s.id, options_.nonce, options_.host_prefix + std::to_string(s.id / 8),
                100000 + s.id};
  s.out = EncodeLiveJoin(join);
  s.watching_write = true;
  if (!poller_.Add(s.fd.get(), index + 1, /*want_write=*/true).ok()) {
    return Lost(s, "epoll_ctl failed (out of file descriptors?)");
  }
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Join() {
  report_ = ChannelScenarioReport{};
  report_.expected = options_.count;
  const Nanos start = clock_.Now();
  const Nanos deadline = start + options_.timeout;
  size_t next = 0;
  const React admitted = [this](Simulated& s, const LiveNotice& n) {
    if (n.kind != LiveKind::kAdmitted) return Reaction{};
    // Its program's first should_stop(step), as a training loop's is.
    LiveNotice armed;
    armed.kind = LiveKind::kArmed;
    armed.process_id = s.id;
    Queue(s, armed);
    return Reaction{Reaction::kTold, n.process_id};
  };
  while (report_.told < report_.expected) {
    const Nanos now = clock_.Now();
    if (now >= deadline) return Timeout("join");
    while (in_flight_ < options_.max_connecting && next < sims_.size()) Connect(next++);
    if (report_.other > 0 && report_.told + report_.other >= report_.expected) {
      return Unavailable("the channel load generator's join failed: " + report_.first_other);
    }
    Result<std::vector<EventPoller::Event>> events =
        poller_.Wait(std::min(kRound, deadline - now));
    if (!events.ok()) return events.status();
    for (const EventPoller::Event& event : *events) {
      Simulated& s = sims_[static_cast<size_t>(event.key - 1)];
      if (s.closed) continue;
      if (s.connecting && (event.writable || event.readable)) {
        const int error = ConnectResult(s.fd.get());
        --in_flight_;
        s.connecting = false;
        if (error != 0) {
          Lost(s, "connect failed: " + ErrorText(error));
          continue;
        }
      }
      if (event.writable) Flush(s);
      if (event.readable && !s.closed) Read(s, admitted);
    }
  }
  ChannelScenarioReport out = report_;
  out.seconds = report_.seconds - NanosToSeconds(start);
  return out;
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Stop(int64_t requester, int64_t base_step) {
  Simulated* asker = Find(requester);
  if (asker == nullptr) return InvalidArgument("no simulated process " + std::to_string(requester));
  report_ = ChannelScenarioReport{};
  for (Simulated& s : sims_) s.told = false;
  report_.expected = Connected();
  const Nanos start = clock_.Now();
  LiveNotice request;
  request.kind = LiveKind::kStopRequest;
  request.process_id = requester;
  request.message = "load generator";
  Queue(*asker, request);
  Flush(*asker);
  return Play("stop", start, [&](Simulated& s, const LiveNotice& n) {
    if (n.kind == LiveKind::kStopQuery) {
      LiveNotice step;
      step.kind = LiveKind::kStopStep;
      step.process_id = s.id;
      step.step = base_step + s.id % 7;
      Queue(s, step);
      return Reaction{Reaction::kAnswered};
    }
    if (n.kind == LiveKind::kStopAt) return Reaction{Reaction::kTold, n.step};
    return Reaction{};
  });
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Barrier(int64_t index, const std::string& name) {
  report_ = ChannelScenarioReport{};
  for (Simulated& s : sims_) s.told = false;
  report_.expected = Connected();
  LiveNotice arrive;
  arrive.kind = LiveKind::kBarrierArrive;
  arrive.index = index;
  arrive.name = name;
  arrive.millis = std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout).count();
  for (Simulated& s : sims_) {
    if (s.closed) continue;
    arrive.process_id = s.id;
    Queue(s, arrive);
    Flush(s);
  }
  return Play("barrier", clock_.Now(), [&](Simulated&, const LiveNotice& n) {
    if (n.kind == LiveKind::kBarrierDone && n.index == index) {
      return Reaction{Reaction::kTold, n.code};
    }
    return Reaction{};
  });
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Stall(int64_t stuck, int64_t base_step) {
  Simulated* reporter = Find(stuck);
  if (reporter == nullptr) return InvalidArgument("no simulated process " + std::to_string(stuck));
  report_ = ChannelScenarioReport{};
  for (Simulated& s : sims_) s.told = false;
  report_.expected = Connected();
  const Nanos start = clock_.Now();
  LiveNotice stalled;
  stalled.kind = LiveKind::kStalled;
  stalled.process_id = stuck;
  stalled.step = base_step - 1;
  stalled.millis = 3600 * 1000;
  Queue(*reporter, stalled);
  Flush(*reporter);
  return Play("stall round", start, [&](Simulated& s, const LiveNotice& n) {
    if (n.kind == LiveKind::kProgressQuery) {
      LiveNotice answer;
      answer.kind = LiveKind::kProgressReport;
      answer.process_id = s.id;
      answer.step = s.id == stuck ? base_step - 1 : base_step;
      answer.millis = s.id == stuck ? 3600 * 1000 : 10;
      answer.code = 1;
      Queue(s, answer);
      return Reaction{Reaction::kAnswered};
    }
    if (n.kind == LiveKind::kDumpStacks && s.id == stuck) {
      // As kdist's spoke does: the stacks are written, then process 0 is told.
      LiveNotice dumped;
      dumped.kind = LiveKind::kStacksDumped;
      dumped.process_id = s.id;
      Queue(s, dumped);
      return Reaction{Reaction::kAnswered};
    }
    if (n.kind == LiveKind::kJobStalled) return Reaction{Reaction::kTold, n.process_id};
    return Reaction{};
  });
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Failure(int64_t victim) {
  Simulated* dying = Find(victim);
  if (dying == nullptr || dying->closed) {
    return InvalidArgument("no connected simulated process " + std::to_string(victim));
  }
  report_ = ChannelScenarioReport{};
  for (Simulated& s : sims_) s.told = false;
  report_.expected = Connected() - 1;
  const Nanos start = clock_.Now();
  poller_.Remove(dying->fd.get());
  dying->fd.Close();  // a plain close, as a process that dies
  dying->closed = true;
  return Play("failure", start, [](Simulated&, const LiveNotice& n) {
    if (n.kind == LiveKind::kDied) return Reaction{Reaction::kTold, n.process_id};
    return Reaction{};
  });
}

Result<ChannelScenarioReport> ChannelLoad::Impl::Finish() {
  report_ = ChannelScenarioReport{};
  for (Simulated& s : sims_) s.told = false;
  report_.expected = Connected();
  LiveNotice finished;
  finished.kind = LiveKind::kFinished;
  for (Simulated& s : sims_) {
    if (s.closed) continue;
    finished.process_id = s.id;
    Queue(s, finished);
    Flush(s);
  }
  return Play("finish", clock_.Now(), [](Simulated&, const LiveNotice& n) {
    if (n.kind == LiveKind::kAllDone) return Reaction{Reaction::kTold, n.barrier ? 1 : 0};
    return Reaction{};
  });
}

Result<int64_t> ChannelLoad::Impl::BytesWhileIdle(Nanos quiet) {
  report_ = ChannelScenarioReport{};
  bytes_ = 0;
  const Nanos until = clock_.Now() + quiet;
  for (Nanos now = clock_.Now(); now < until; now = clock_.Now()) {
    Result<std::vector<EventPoller::Event>> events = poller_.Wait(std::min(kRound, until - now));
    if (!events.ok()) return events.status();
    for (const EventPoller::Event& event : *events) {
      Simulated& s = sims_[static_cast<size_t>(event.key - 1)];
      if (!s.closed && event.readable) Read(s, nullptr);
    }
  }
  return bytes_;
}

ChannelLoad::ChannelLoad(ChannelLoadOptions, Clock&) {}
ChannelLoad::~ChannelLoad() = default;

Result<std::unique_ptr<ChannelLoad>> ChannelLoad::Create(ChannelLoadOptions options,
                                                         Clock& clock) {
  if (options.count < 0 || options.first_id < 1) {
    return InvalidArgument("the channel load generator needs count >= 0 and first_id >= 1, got " +
                           std::to_string(options.count) + " and " +
                           std::to_string(options.first_id));
  }
  KDIST_ASSIGN_OR_RETURN(FileLimits limits, EnsureFileLimit(options.count));
  (void)limits;
  KDIST_ASSIGN_OR_RETURN(EventPoller poller, EventPoller::Create());
  std::unique_ptr<ChannelLoad> load(new ChannelLoad(options, clock));
  load->impl_ = std::make_unique<Impl>(std::move(options), clock, std::move(poller));
  return load;
}

Result<ChannelScenarioReport> ChannelLoad::Join() { return impl_->Join(); }
Result<ChannelScenarioReport> ChannelLoad::Stop(int64_t requester, int64_t base_step) {
  return impl_->Stop(requester, base_step);
}
Result<ChannelScenarioReport> ChannelLoad::Barrier(int64_t index, const std::string& name) {
  return impl_->Barrier(index, name);
}
Result<ChannelScenarioReport> ChannelLoad::Stall(int64_t stuck, int64_t base_step) {
  return impl_->Stall(stuck, base_step);
}
Result<ChannelScenarioReport> ChannelLoad::Failure(int64_t victim) {
  return impl_->Failure(victim);
}
Result<ChannelScenarioReport> ChannelLoad::Finish() { return impl_->Finish(); }
Result<int64_t> ChannelLoad::BytesWhileIdle(Nanos quiet) { return impl_->BytesWhileIdle(quiet); }

}  // namespace kdist
