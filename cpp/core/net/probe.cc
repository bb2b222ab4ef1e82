#include "net/probe.h"

#include <poll.h>

#include <cerrno>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"
#include "net/dns.h"
#include "net/socket.h"

namespace kdist {

const char* ProbeStateName(ProbeState state) {
  switch (state) {
    case ProbeState::kListening: return "listening";
    case ProbeState::kRefused: return "refused";
    case ProbeState::kTimeout: return "timeout";
    case ProbeState::kUnresolved: return "unresolved";
    case ProbeState::kUnreachable: return "unreachable";
  }
  return "unreachable";
}

namespace {

// One connect attempt to `endpoint` until `waiter`'s deadline.
ProbeResult ConnectOnce(const Endpoint& endpoint, Waiter& waiter) {
  ProbeResult out;
  Connecting c = StartConnect(endpoint);
  int error = 0;
  if (c.io.state == IoState::kError) {
    error = c.io.error;
  } else if (c.io.state == IoState::kWouldBlock) {
    int ready = 0;
    while (ready == 0 && !waiter.Expired()) {  // 0 is also EINTR: wait out the rest
      std::vector<pollfd> fds{{c.fd.get(), POLLOUT, 0}};
      ready = Poll(fds, waiter.Remaining());
    }
    if (ready == 0) {
      c.fd.CloseWithReset();
      out.state = ProbeState::kTimeout;
      return out;
    }
    error = ready < 0 ? -ready : ConnectResult(c.fd.get());
  }
  if (error == 0) {
    out.state = ProbeState::kListening;
  } else if (error == ECONNREFUSED) {
    out.state = ProbeState::kRefused;
  } else if (error == ETIMEDOUT) {
    out.state = ProbeState::kTimeout;
  } else {
    out.state = ProbeState::kUnreachable;
    out.detail = ErrorText(error);
  }
  return out;
}

}  // namespace

ProbeResult ProbeTcp(const Address& address, Nanos timeout, Clock& clock) {
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, timeout);
  Waiter waiter(clock, options);
  ProbeResult out;
  Result<std::vector<Endpoint>> endpoints =
      ResolveEndpoints(address, waiter, [] { return std::string(); });
  if (!endpoints.ok()) {
    out.state = endpoints.status().code() == StatusCode::kDeadlineExceeded
                    ? ProbeState::kTimeout
                    : ProbeState::kUnresolved;
    out.detail = out.state == ProbeState::kUnresolved ? endpoints.status().message() : "";
  } else if (endpoints->empty()) {
    out.state = ProbeState::kUnresolved;
    out.detail = "the name resolved to no address";
  } else {
    for (const Endpoint& endpoint : *endpoints) {
      out = ConnectOnce(endpoint, waiter);
      if (out.state == ProbeState::kListening || waiter.Expired()) break;
    }
  }
  out.elapsed = options.deadline.Elapsed(clock);
  return out;
}

}  // namespace kdist
