#include "liveness/liveness_connection.h"

#include <netinet/tcp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "net/socket.h"

namespace kdist {

LivenessOptions LivenessOptionsFor(Nanos unreachable_timeout) {
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  const auto whole = [](Nanos d) { return std::max<Nanos>(seconds(1), duration_cast<seconds>(d)); };
  LivenessOptions options;
  options.unreachable_timeout = unreachable_timeout;
  options.keepalive_idle = whole(unreachable_timeout / 4);
  options.keepalive_interval = whole(unreachable_timeout / 10);
  options.user_timeout =
      std::max<Nanos>(seconds(1), unreachable_timeout - options.keepalive_interval);
  const Nanos probing = options.user_timeout - options.keepalive_idle;
  options.keepalive_count =
      static_cast<int>(std::max<int64_t>(3, probing / options.keepalive_interval));
  return options;
}

void SetKeepalive(int fd, const LivenessOptions& options) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const int one = 1;
  const int idle = static_cast<int>(std::max<int64_t>(1, duration_cast<seconds>(options.keepalive_idle).count()));
  const int interval =
      static_cast<int>(std::max<int64_t>(1, duration_cast<seconds>(options.keepalive_interval).count()));
  const int count = std::max(1, options.keepalive_count);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // With it, Linux ends the connection once nothing was heard for this long
  // (keepalive's probes and unacknowledged data, such as a notice to a
  // vanished host, alike) instead of counting probes.
  const unsigned user_timeout = static_cast<unsigned>(std::clamp<int64_t>(
      duration_cast<milliseconds>(options.user_timeout).count(), 1, INT32_MAX));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Status SendAll(int fd, std::string_view bytes, Nanos bound, Clock& clock) {
  const Nanos deadline = clock.Now() + bound;
  while (!bytes.empty()) {
    Io io = WriteSome(fd, bytes);
    if (io.state == IoState::kDone) {
      bytes.remove_prefix(io.bytes);
      continue;
    }
    if (io.state != IoState::kWouldBlock) {
      return Unavailable("sending on the liveness channel failed: " + ErrorText(io.error));
    }
    const Nanos left = deadline - clock.Now();
    if (left.count() <= 0) return DeadlineExceeded("the liveness channel's peer reads nothing");
    std::vector<pollfd> fds{{fd, POLLOUT, 0}};
    if (Poll(fds, left) < 0) return Internal("poll failed on the liveness channel");
  }
  return Status::Ok();
}

bool ReadFrames(int fd, FrameAssembler& in,
                const std::function<bool(const std::string&)>& on_frame, int* error) {
  char buffer[4096];
  if (error != nullptr) *error = 0;
  for (int round = 0; round < 16; ++round) {
    Io io = ReadSome(fd, buffer, sizeof buffer);
    if (io.state == IoState::kWouldBlock) break;
    if (io.state != IoState::kDone) {
      if (error != nullptr && io.state == IoState::kError) *error = io.error;
      return false;
    }
    if (!in.Append(std::string_view(buffer, io.bytes)).ok()) return false;
    for (std::string frame = in.TakeFrame(); !frame.empty(); frame = in.TakeFrame()) {
      if (!on_frame(frame)) return false;
    }
  }
  return true;
}

}  // namespace kdist
