#include "loopback_connect.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

namespace kdist {
namespace {

constexpr uint32_t kLoopbackSources = 250;

}  // namespace

Connecting ConnectFrom(const Endpoint& to, size_t index) {
  if (to.family() != AF_INET) return StartConnect(to);
  const auto& target = reinterpret_cast<const sockaddr_in&>(to.storage);
  if ((ntohl(target.sin_addr.s_addr) >> 24) != 127) return StartConnect(to);
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return {{IoState::kError, 0, errno}, Fd()};
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr =
      htonl((127u << 24) | (2u + static_cast<uint32_t>(index % kLoopbackSources)));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0) {
    return {{IoState::kError, 0, errno}, Fd()};
  }
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.storage), to.size) == 0) {
    return {{IoState::kDone, 0, 0}, std::move(fd)};
  }
  if (errno == EINPROGRESS || errno == EINTR) return {{IoState::kWouldBlock, 0, 0}, std::move(fd)};
  return {{IoState::kError, 0, errno}, Fd()};
}

}  // namespace kdist
