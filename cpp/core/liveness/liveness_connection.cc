#include "liveness/liveness_connection.h"

#include <netinet/tcp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "net/socket.h"

namespace kdist {

LivenessOptions LivenessOptionsFor(Nanos unreachable_timeout) {
  LivenessOptions options;
  options.keepalive = KeepaliveFor(unreachable_timeout);
  return options;
}

ConnectionEnd EndOf(int fd, int error, const LivenessOptions& options) {
  ConnectionEnd end{error, WallClockMillis(), options.keepalive.unreachable_timeout};
  if (const std::optional<Nanos> since = SinceLastHeard(fd)) {
    end.last_heard_unix_millis =
        end.at_unix_millis - std::chrono::duration_cast<std::chrono::milliseconds>(*since).count();
  }
  return end;
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
