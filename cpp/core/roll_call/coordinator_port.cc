#include "roll_call/coordinator_port.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <utility>

#include "base/text.h"
#include "net/port_owner.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;

constexpr size_t kReadChunk = 4096;
constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0";

}  // namespace

std::string WhyNotKdist(std::string_view why, std::string_view received) {
  std::string out(why);
  if (received.substr(0, kHttp2Preface.size()) == kHttp2Preface) {
    out += " (a gRPC client: a process that starts JAX without the roll call, e.g. with "
           "preflight=False or KDIST_ROLL_CALL=0; use the same setting in every process)";
  }
  return out;
}

bool PeerGone(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n > 0) return false;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

std::string NoFilesMessage(size_t open_connections) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  return "process 0 ran out of file descriptors with " + std::to_string(open_connections) +
         " connections open (RLIMIT_NOFILE soft limit " + std::to_string(limit.rlim_cur) +
         "); raise it (ulimit -n) above num_processes plus a margin, in every process";
}


void CloseInBackground(EventPoller poller, std::unordered_map<uint64_t, Closing> open,
                       Nanos grace) {
  std::thread([poller = std::move(poller), open = std::move(open), grace]() mutable {
    RealClock clock;
    const Nanos until = clock.Now() + grace;
    // Bounded by the grace period: every round waits at most until `until`.
    while (!open.empty() && clock.Now() < until) {
      Result<std::vector<EventPoller::Event>> events =
          poller.Wait(std::min<Nanos>(until - clock.Now(), std::chrono::milliseconds(100)));
      if (!events.ok()) break;
      for (const EventPoller::Event& event : *events) {
        auto it = open.find(event.key);
        if (it == open.end()) continue;
        Closing& c = it->second;
        while (event.writable && c.sent < c.out.size()) {
          const Io io = WriteSome(c.fd.get(), std::string_view(c.out).substr(c.sent));
          if (io.state != IoState::kDone) break;
          c.sent += io.bytes;
        }
        if (c.sent == c.out.size()) (void)poller.WatchWrite(c.fd.get(), event.key, false);
        if (!event.readable) continue;
        char buffer[kReadChunk];
        const Io io = ReadSome(c.fd.get(), buffer, sizeof buffer);
        if (io.state != IoState::kEof && io.state != IoState::kError) continue;
        poller.Remove(c.fd.get());
        if (io.state == IoState::kError) c.fd.CloseWithReset();
        open.erase(it);  // closes the others' ends normally: they closed first
      }
    }
    for (auto& [key, c] : open) c.fd.CloseWithReset();
  }).detach();
}

Result<Listener> BindCoordinatorPort(uint16_t port, const RollCallOptions& options,
                                     Clock& clock, const std::optional<Endpoint>& bind_at) {
  if (bind_at) port = bind_at->port();
  Result<Listener> listener = bind_at ? ListenOn(*bind_at, options.listen_backlog)
                                      : ListenOnAllInterfaces(port, options.listen_backlog);
  if (listener.ok() || listener.status().code() != StatusCode::kAlreadyExists) return listener;
  const std::string owner = DescribePortOwner(FindPortOwner(port, clock, milliseconds(300)));
  return AlreadyExists(
      "process 0 cannot use coordinator port " + std::to_string(port) + ": " +
      listener.status().message() + (owner.empty() ? "" : ", " + owner) +
      ". Another job (or a leftover process of this one) is using it; stop that process or "
      "choose another port in the coordinator address");
}

}  // namespace kdist
