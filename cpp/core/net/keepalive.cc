#include "net/keepalive.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>

namespace kdist {

Keepalive KeepaliveFor(Nanos unreachable_timeout) {
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  const auto whole = [](Nanos d) { return std::max<Nanos>(seconds(1), duration_cast<seconds>(d)); };
  Keepalive k;
  k.unreachable_timeout = unreachable_timeout;
  k.idle = whole(unreachable_timeout / 4);
  k.interval = whole(unreachable_timeout / 10);
  k.user_timeout = std::max<Nanos>(seconds(1), unreachable_timeout - k.interval);
  const Nanos probing = k.user_timeout - k.idle;
  k.count = static_cast<int>(std::max<int64_t>(3, probing / k.interval));
  return k;
}

void SetKeepalive(int fd, const Keepalive& keepalive) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const int one = 1;
  const int idle =
      static_cast<int>(std::max<int64_t>(1, duration_cast<seconds>(keepalive.idle).count()));
  const int interval =
      static_cast<int>(std::max<int64_t>(1, duration_cast<seconds>(keepalive.interval).count()));
  const int count = std::max(1, keepalive.count);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // With it, Linux ends the connection once nothing was heard for this long
  // (keepalive's probes and unacknowledged data, such as a notice to a
  // vanished host, alike) instead of counting probes.
  const unsigned user_timeout = static_cast<unsigned>(std::clamp<int64_t>(
      duration_cast<milliseconds>(keepalive.user_timeout).count(), 1, INT32_MAX));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::optional<Nanos> SinceLastHeard(int fd) {
  tcp_info info{};
  socklen_t size = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0 || size < sizeof info) {
    return std::nullopt;
  }
  const uint32_t millis = std::min(info.tcpi_last_data_recv, info.tcpi_last_ack_recv);
  return std::chrono::milliseconds(millis);
}

}  // namespace kdist
