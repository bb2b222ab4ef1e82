#include "roll_call/worker.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "base/backoff.h"
#include "base/deadline.h"
#include "base/text.h"
#include "net/dns.h"
#include "roll_call/roll_call.h"

namespace kdist {
namespace {

// Waits until `fd` is ready for `events` or `until` (0 on timeout), in the
// waiter's slices, with its checks between them. An error is the interrupt
// hook's status or a failed poll.
Result<short> WaitReady(Waiter& waiter, int fd, short events, Nanos until,
                        const std::function<std::string()>& line) {
  while (true) {
    const Nanos now = waiter.clock().Now();
    if (now >= until) return short{0};
    std::vector<pollfd> fds{{fd, events, 0}};
    const int ready = Poll(fds, waiter.Slice(until - now));
    if (ready < 0) return Internal("poll failed: " + ErrorText(-ready));
    if (ready > 0) return fds[0].revents;
    KDIST_RETURN_IF_ERROR(waiter.Check(line));
  }
}

// One connection attempt, bounded by `limit` and the waiter's deadline: the
// connected socket, or no socket and `error` saying why (worth a retry).
struct Connected {
  Fd fd;
  std::string error;
  // The connect was still pending when the caller's deadline (not the
  // connect's own limit) ended the wait: it says nothing about the peer.
  bool cut_by_deadline = false;
};

// An error is the interrupt hook's status or a failed poll.
Result<Connected> ConnectWithin(const Endpoint& endpoint, Nanos limit, Waiter& waiter,
                                const std::function<std::string()>& line) {
  const Nanos started = waiter.clock().Now();
  Connecting c = StartConnect(endpoint);
  Connected out;
  if (c.io.state == IoState::kError) {
    out.error = ErrorText(c.io.error);
    return out;
  }
  if (c.io.state == IoState::kWouldBlock) {
    // Which bound ends the wait is decided here, once: a wait that ran to the
    // caller's deadline can end a moment before that deadline reads as passed.
    const Nanos remaining = waiter.Remaining();
    const bool deadline_first = remaining < limit;
    const Nanos until = started + std::min(limit, remaining);
    KDIST_ASSIGN_OR_RETURN(const short ready, WaitReady(waiter, c.fd.get(), POLLOUT, until, line));
    if (ready == 0) {
      out.error = "connect timed out after " + FormatElapsed(waiter.clock().Now() - started);
      out.cut_by_deadline = deadline_first;
      c.fd.CloseWithReset();
      return out;
    }
    if (const int error = ConnectResult(c.fd.get())) {
      out.error = ErrorText(error);
      return out;
    }
  }
  out.fd = std::move(c.fd);
  return out;
}

constexpr const char* kNotTriedYet = "not tried yet";

// What one connection attempt came to.
struct Attempt {
  enum Kind { kGo, kEnded, kRetry } kind = kRetry;
  Reply reply;        // kGo
  Status status;      // kEnded: returned as is
  std::string error;  // kRetry: why, for the next message
  bool cut_by_deadline = false;  // kRetry: see Connected
};

class Worker {
 public:
  Worker(const Hello& own, const Address& coordinator, const RollCallOptions& options,
         Clock& clock)
      : own_(own),
        coordinator_(coordinator),
        options_(options),
        waiter_(clock, options) {}

  Result<WorkerResult> Run();

 private:
  Nanos Now() { return waiter_.clock().Now(); }
  std::string Line();
  Attempt TryOnce(const Endpoint& endpoint);
  // One connection's conversation: the opening and the challenge (Greet), the hello
  // (SendHello: `sent` false when the deadline came first), the verdict (AwaitVerdict).
  // Greet and SendHello return the attempt's outcome when the conversation is over.
  Attempt Converse(Fd fd, const Endpoint& endpoint);
  std::optional<Attempt> Greet(Fd& fd, const Endpoint& endpoint, FrameAssembler& in,
                               Nanos deadline, Nonce& nonce);
  std::optional<Attempt> SendHello(Fd& fd, Nanos deadline, bool& sent);
  Attempt AwaitVerdict(Fd& fd, const Endpoint& endpoint, FrameAssembler& in, Nanos deadline,
                       bool sent);
  // The stream from process 0 is not kdist's roll call.
  Attempt NotKdist(Fd& fd, const Endpoint& endpoint, const Status& why);
  // One wait (until `deadline`) and read of what process 0 sends next, into
  // `in`. `awaited` ("challenge", "verdict") names it in messages.
  struct Received {
    bool deadline = false;          // nothing came before the deadline
    std::optional<Attempt> ended;   // the conversation is over: this is its outcome
  };
  Received Receive(Fd& fd, FrameAssembler& in, Nanos deadline, const Endpoint& endpoint,
                   std::string_view awaited);
  // Waits until `fd` is ready for `events` or `until`; 0 on timeout.
  Result<short> WaitFor(int fd, short events, Nanos until);

  const Hello& own_;
  const Address& coordinator_;
  const RollCallOptions& options_;
  Waiter waiter_;
  std::string hello_;  // signed for the connection's challenge
  std::string last_error_ = kNotTriedYet;
  bool connected_ = false;
  std::string last_status_;  // process 0's last progress line, relayed
};

std::string Worker::Line() {
  const std::string where = coordinator_.ToString();
  if (!connected_) {
    return "waiting for the coordinator " + where + ": " + last_error_ + "; " + waiter_.Progress();
  }
  return "connected to coordinator " + where + " as process " + std::to_string(own_.process_id) +
         " of " + std::to_string(own_.num_processes) + ", waiting for the roll call" +
         (last_status_.empty() ? "" : ": process 0 reports " + last_status_) + "; " +
         waiter_.Progress();
}

Result<short> Worker::WaitFor(int fd, short events, Nanos until) {
  return WaitReady(waiter_, fd, events, until, [this] { return Line(); });
}

Attempt Worker::TryOnce(const Endpoint& endpoint) {
  Result<Connected> connected =
      ConnectWithin(endpoint, options_.connect_timeout, waiter_, [this] { return Line(); });
  if (!connected.ok()) return {Attempt::kEnded, {}, connected.status(), ""};
  if (!connected->fd.valid()) {
    Attempt retry;
    retry.error = std::move(connected->error);
    retry.cut_by_deadline = connected->cut_by_deadline;
    return retry;
  }
  return Converse(std::move(connected->fd), endpoint);
}

Attempt Worker::NotKdist(Fd& fd, const Endpoint& endpoint, const Status& why) {
  fd.CloseWithReset();
  return {Attempt::kEnded, {},
          FailedPrecondition(
              "the coordinator port " + endpoint.ToString() + " (" + coordinator_.ToString() +
              ") is answered by something that does not speak kdist's roll call (" +
              why.message() +
              "). Is process 0 running with the roll call off (preflight=False or "
              "KDIST_ROLL_CALL=0), or plain JAX? Use the same setting in every process."),
          ""};
}

Worker::Received Worker::Receive(Fd& fd, FrameAssembler& in, Nanos deadline,
                                 const Endpoint& endpoint, std::string_view awaited) {
  Result<short> ready = WaitFor(fd.get(), POLLIN, deadline);
  if (!ready.ok()) return {false, Attempt{Attempt::kEnded, {}, ready.status(), ""}};
  if (*ready == 0) return {true, std::nullopt};
  char buffer[4096];
  const Io io = ReadSome(fd.get(), buffer, sizeof buffer);
  if (io.state == IoState::kWouldBlock) return {};
  if (io.state != IoState::kDone) {
    connected_ = false;
    Attempt retry;
    retry.error = io.state == IoState::kEof
                      ? "process 0 closed the connection before its " + std::string(awaited)
                      : "the connection failed before process 0's " + std::string(awaited) +
                            ": " + ErrorText(io.error);
    return {false, retry};
  }
  const Status appended = in.Append(std::string_view(buffer, io.bytes));
  if (!appended.ok()) return {false, NotKdist(fd, endpoint, appended)};
  return {};
}

Attempt Worker::Converse(Fd fd, const Endpoint& endpoint) {
  connected_ = true;
  const Nanos deadline = Now() + waiter_.Remaining();
  FrameAssembler in;
  Nonce nonce{};
  if (std::optional<Attempt> over = Greet(fd, endpoint, in, deadline, nonce)) return *over;
  hello_ = EncodeSignedHello(own_, nonce);
  bool sent = false;
  if (std::optional<Attempt> over = SendHello(fd, deadline, sent)) return *over;
  return AwaitVerdict(fd, endpoint, in, deadline, sent);
}

std::optional<Attempt> Worker::Greet(Fd& fd, const Endpoint& endpoint, FrameAssembler& in,
                                     Nanos deadline, Nonce& nonce) {
  Attempt retry;
  // Open with this side's version: a process 0 of another version refuses it
  // at once. 12 bytes on a fresh connection: one write takes them all.
  const std::string opening = EncodeOpening();
  const Io opened = WriteSome(fd.get(), opening);
  if (opened.state != IoState::kDone || opened.bytes != opening.size()) {
    connected_ = false;
    retry.error = "sending the opening failed: " + (opened.state == IoState::kError
                                                        ? ErrorText(opened.error)
                                                        : std::string("the socket took part of it"));
    return retry;
  }
  // Read process 0's challenge: the hello's MAC covers its nonce.
  std::string challenge;
  while (challenge.empty()) {
    const Received received = Receive(fd, in, deadline, endpoint, "challenge");
    if (received.ended) return *received.ended;
    if (received.deadline) break;
    challenge = in.TakeFrame();
  }
  if (challenge.empty()) {
    fd.Close();
    connected_ = false;
    retry.error = "connected to " + endpoint.ToString() +
                  ", but nothing answered before the deadline (no challenge came)";
    return retry;
  }
  Result<Challenge> decoded = DecodeChallenge(challenge, "roll call");
  if (!decoded.ok()) {
    fd.CloseWithReset();
    return Attempt{Attempt::kEnded, {},
                   FailedPrecondition("process 0 at " + endpoint.ToString() +
                                      " opened with a frame this process cannot read as its "
                                      "challenge: " + decoded.status().message()),
                   ""};
  }
  nonce = decoded->nonce;
  return std::nullopt;
}

std::optional<Attempt> Worker::SendHello(Fd& fd, Nanos deadline, bool& sent) {
  size_t written = 0;
  while (written < hello_.size()) {
    const Io io = WriteSome(fd.get(), std::string_view(hello_).substr(written));
    if (io.state == IoState::kError) {
      connected_ = false;
      Attempt retry;
      retry.error = "sending the hello failed: " + ErrorText(io.error);
      return retry;
    }
    if (io.state == IoState::kDone) {
      written += io.bytes;
      continue;
    }
    Result<short> ready = WaitFor(fd.get(), POLLOUT, deadline);
    if (!ready.ok()) return Attempt{Attempt::kEnded, {}, ready.status(), ""};
    if (*ready == 0) break;
  }
  sent = written == hello_.size();
  return std::nullopt;
}

Attempt Worker::AwaitVerdict(Fd& fd, const Endpoint& endpoint, FrameAssembler& in,
                             Nanos deadline, bool sent) {
  // Wait for the verdict, relaying process 0's progress lines.
  bool answered = false;  // process 0 acknowledges a hello at once
  while (sent) {
    const Received received = Receive(fd, in, deadline, endpoint, "verdict");
    if (received.ended) return *received.ended;
    if (received.deadline) break;
    for (std::string frame = in.TakeFrame(); !frame.empty(); frame = in.TakeFrame()) {
      Result<Reply> reply = DecodeReply(frame);
      if (!reply.ok()) {
        fd.CloseWithReset();
        return {Attempt::kEnded, {},
                FailedPrecondition("process 0 at " + endpoint.ToString() +
                                   " sent a reply this process cannot read: " +
                                   reply.status().message()),
                ""};
      }
      answered = true;
      if (reply->type == FrameType::kStatus) {
        last_status_ = RelayText(reply->message);
        continue;
      }
      fd.Close();  // this side closes first, so process 0's end keeps no TIME_WAIT
      if (reply->type == FrameType::kGo) return {Attempt::kGo, std::move(reply).value(), {}, ""};
      return {Attempt::kEnded, {},
              Status(reply->code, "process 0 (host " + SafeText(reply->host) + ", pid " +
                                      std::to_string(reply->pid) + ") at " +
                                      coordinator_.ToString() + " ended the roll call for " +
                                      DescribeProcess(own_) + ": " + RelayText(reply->message)),
              ""};
    }
  }
  fd.Close();
  if (!answered) {
    // Something accepted the connection but never spoke kdist's protocol: the
    // coordinator was not reached (a proxy, a half-open path, a stalled host).
    connected_ = false;
    Attempt retry;
    retry.error = "connected to " + endpoint.ToString() + (sent ? " and sent the hello" : "") +
                  ", but nothing answered before the deadline";
    return retry;
  }
  return {Attempt::kEnded, {},
          DeadlineExceeded(
              DescribeProcess(own_) + " reached the coordinator " + coordinator_.ToString() +
              " and sent its hello, but the roll call did not complete within " +
              options_.deadline.Budget() +
              (last_status_.empty() ? "" : "; process 0 last reported " + last_status_) +
              ". Process 0's own error names the processes that did not join."),
          ""};
}

Result<WorkerResult> Worker::Run() {
  Backoff backoff(options_.backoff, options_.seed);
  // The loop bound counts rounds (one resolution or one pass over the
  // endpoints, then one backoff delay), not attempts: a name with many
  // addresses makes several attempts per round.
  const int64_t max_rounds = backoff.MaxAttemptsWithin(options_.deadline.budget()) + 1;
  const auto line = [this] { return Line(); };
  std::vector<Endpoint> endpoints;
  std::string last_endpoint = coordinator_.ToString();
  int64_t attempts = 0;
  for (int64_t round = 0; round < max_rounds; ++round) {
    if (endpoints.empty()) {
      Result<std::vector<Endpoint>> resolved = ResolveEndpoints(coordinator_, waiter_, line);
      if (resolved.ok()) {
        endpoints = std::move(resolved).value();
      } else if (resolved.status().code() == StatusCode::kUnavailable) {
        ++attempts;
        last_error_ = resolved.status().message();
      } else if (resolved.status().code() == StatusCode::kDeadlineExceeded) {
        last_error_ = resolved.status().message();
        break;
      } else {
        return resolved.status();  // interrupted
      }
    }
    for (const Endpoint& endpoint : endpoints) {
      if (waiter_.Expired()) break;
      ++attempts;
      Attempt attempt = TryOnce(endpoint);
      if (attempt.kind == Attempt::kGo) {
        WorkerResult result;
        result.go = std::move(attempt.reply);
        result.attempts = attempts;
        result.elapsed = waiter_.Elapsed();
        result.connected_to = endpoint;
        return result;
      }
      if (attempt.kind == Attempt::kEnded) return attempt.status;
      // An attempt the deadline cut short keeps the last real error in the message
      // (a firewall that drops every attempt still reads "connect timed out").
      if (!attempt.cut_by_deadline || last_error_ == kNotTriedYet) last_error_ = attempt.error;
      last_endpoint = endpoint.ToString();
    }
    if (waiter_.Expired()) break;
    KDIST_RETURN_IF_ERROR(waiter_.Sleep(backoff.Next(), line));
    if (waiter_.Expired()) break;
  }
  const std::string via =
      last_endpoint == coordinator_.ToString() ? "" : " (at " + last_endpoint + ")";
  return Unavailable(
      DescribeProcess(own_) + " could not reach the coordinator " + coordinator_.ToString() +
      " within " + options_.deadline.Budget() + ": " + std::to_string(attempts) +
      " attempt" + (attempts == 1 ? "" : "s") + ", last error: " + last_error_ + via +
      ", elapsed " + FormatElapsed(waiter_.Elapsed()) +
      ". Check that process 0 is running with the same coordinator address, that the address "
      "points at process 0's host, and that no firewall blocks the port (raise timeout= or "
      "KDIST_INIT_TIMEOUT if process 0 starts late).");
}

}  // namespace


Result<WorkerResult> RunWorker(const Hello& own, const Address& coordinator,
                               const RollCallOptions& options, Clock& clock) {
  Worker worker(own, coordinator, options, clock);
  return worker.Run();
}

Status WaitForCoordinatorService(const Endpoint& endpoint, const RollCallOptions& options,
                                 Clock& clock) {
  Waiter waiter(clock, options);
  std::string last_error = "not tried yet";
  const auto line = [&] {
    return "waiting for process 0's JAX coordination service at " + endpoint.ToString() + ": " +
           last_error + "; " + waiter.Progress();
  };
  const Nanos interval = std::max(options.probe_interval, kMinServiceProbeInterval);
  const int64_t max_probes = options.deadline.budget() / interval + 2;
  for (int64_t probe = 0; probe < max_probes && !waiter.Expired(); ++probe) {
    KDIST_ASSIGN_OR_RETURN(Connected connected,
                           ConnectWithin(endpoint, options.connect_timeout, waiter, line));
    if (connected.fd.valid()) return Status::Ok();  // closed by ~Fd: the service is up
    last_error = std::move(connected.error);
    KDIST_RETURN_IF_ERROR(waiter.Sleep(interval, line));
  }
  return DeadlineExceeded(
      "the roll call completed, but process 0's JAX coordination service did not accept "
      "connections at " + endpoint.ToString() + " within " + options.deadline.Budget() +
      " (last error: " + last_error +
      "); check process 0's output for an error while it started JAX");
}

Result<Endpoint> LivenessHubEndpoint(const WorkerResult& result) {
  const int64_t port = result.go.shared.liveness_port;
  if (port == 0) {
    return FailedPrecondition(
        "process 0 announced no liveness channel in \"go\" (it could not listen for one)");
  }
  return EndpointFromLiteral(result.connected_to.Host(), static_cast<uint16_t>(port));
}

}  // namespace kdist
