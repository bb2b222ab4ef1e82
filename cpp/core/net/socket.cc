#include "net/socket.h"

#include <algorithm>

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kdist {
namespace {

Status BindError(int error, uint16_t port, const std::string& what) {
  if (error == EADDRINUSE) {
    return AlreadyExists("port " + std::to_string(port) + " is already in use (binding " + what +
                         ": " + ErrorText(error) + ")");
  }
  if (error == EACCES) {
    return InvalidArgument("port " + std::to_string(port) +
                           " needs privileges this process lacks (binding " + what + ": " +
                           ErrorText(error) + "); choose a port above 1023");
  }
  return Unavailable("cannot listen on port " + std::to_string(port) + " (binding " + what + ": " +
                     ErrorText(error) + ")");
}

// One listener on `endpoint` (an IPv6 one also accepts IPv4); errno in `error`.
Fd TryListenAt(const Endpoint& endpoint, int backlog, int& error) {
  Fd fd(socket(endpoint.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = errno;
    return Fd();
  }
  const int one = 1, zero = 0;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (endpoint.family() == AF_INET6) {
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&endpoint.storage), endpoint.size) != 0 ||
      listen(fd.get(), backlog) != 0) {
    error = errno;
    return Fd();
  }
  error = 0;
  return fd;
}

// One listener of `family` on the wildcard address; errno in `error`.
Fd TryListen(int family, uint16_t port, int backlog, int& error) {
  Result<Endpoint> wildcard = EndpointFromLiteral(family == AF_INET6 ? "::" : "0.0.0.0", port);
  return TryListenAt(*wildcard, backlog, error);
}

// The port a bound listener got (port 0 picks one).
Result<uint16_t> BoundPort(const Fd& fd) {
  sockaddr_storage storage{};
  socklen_t size = sizeof storage;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&storage), &size) != 0) {
    return Internal("getsockname on the listener failed: " + ErrorText(errno));
  }
  Endpoint endpoint;
  endpoint.storage = storage;
  endpoint.size = size;
  return endpoint.port();
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.Release();
  }
  return *this;
}

int Fd::Release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void Fd::Close() {
  if (fd_ >= 0) ::close(fd_);  // close() is not retried on EINTR on Linux
  fd_ = -1;
}

void Fd::CloseWithReset() {
  if (fd_ < 0) return;
  linger option{1, 0};
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &option, sizeof option);
  Close();
}

uint16_t Endpoint::port() const {
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  return 0;
}

std::string Endpoint::Host() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof text);
  } else if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof text);
  }
  return text;
}

std::string Endpoint::ToString() const {
  if (family() == AF_INET6) return "[" + Host() + "]:" + std::to_string(port());
  if (family() == AF_INET) return Host() + ":" + std::to_string(port());
  return "(address family " + std::to_string(family()) + ")";
}

Result<Endpoint> EndpointFromLiteral(std::string_view ip, uint16_t port) {
  Endpoint endpoint;
  const std::string text(ip);
  auto* a4 = reinterpret_cast<sockaddr_in*>(&endpoint.storage);
  if (inet_pton(AF_INET, text.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    endpoint.size = sizeof *a4;
    return endpoint;
  }
  endpoint.storage = {};
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&endpoint.storage);
  if (inet_pton(AF_INET6, text.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    endpoint.size = sizeof *a6;
    return endpoint;
  }
  return InvalidArgument("address " + std::string(text) + " is not an IPv4 or IPv6 literal");
}

Result<Listener> ListenOnAllInterfaces(uint16_t port, int backlog) {
  int error = 0;
  Fd fd = TryListen(AF_INET6, port, backlog, error);
  std::string bound = "[::]";
  if (!fd.valid()) {
    // Only a missing IPv6 stack sends us to IPv4; a taken port is reported.
    if (error != EAFNOSUPPORT && error != EADDRNOTAVAIL && error != EPROTONOSUPPORT) {
      return BindError(error, port, "[::]:" + std::to_string(port));
    }
    fd = TryListen(AF_INET, port, backlog, error);
    bound = "0.0.0.0";
    if (!fd.valid()) return BindError(error, port, "0.0.0.0:" + std::to_string(port));
  }
  KDIST_ASSIGN_OR_RETURN(const uint16_t bound_port, BoundPort(fd));
  Listener listener;
  listener.port = bound_port;
  listener.bound = bound + ":" + std::to_string(listener.port);
  listener.fd = std::move(fd);
  return listener;
}

Result<Listener> ListenOn(const Endpoint& endpoint, int backlog) {
  int error = 0;
  Fd fd = TryListenAt(endpoint, backlog, error);
  if (!fd.valid()) return BindError(error, endpoint.port(), endpoint.ToString());
  KDIST_ASSIGN_OR_RETURN(const uint16_t bound_port, BoundPort(fd));
  Listener listener;
  listener.port = bound_port;
  Endpoint shown = endpoint;
  if (shown.family() == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&shown.storage)->sin6_port = htons(listener.port);
  } else {
    reinterpret_cast<sockaddr_in*>(&shown.storage)->sin_port = htons(listener.port);
  }
  listener.bound = shown.ToString();
  listener.fd = std::move(fd);
  return listener;
}

Io ReadSome(int fd, char* buffer, size_t size) {
  while (true) {
    const ssize_t n = recv(fd, buffer, size, MSG_DONTWAIT);
    if (n > 0) return {IoState::kDone, static_cast<size_t>(n), 0};
    if (n == 0) return {size == 0 ? IoState::kDone : IoState::kEof, 0, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoState::kWouldBlock, 0, 0};
    return {IoState::kError, 0, errno};
  }
}

Io WriteSome(int fd, std::string_view bytes) {
  while (true) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return {IoState::kDone, static_cast<size_t>(n), 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoState::kWouldBlock, 0, 0};
    return {IoState::kError, 0, errno};
  }
}

namespace {

// The IP literal of `storage` (an IPv4-mapped IPv6 address as IPv4); "" when not IP.
std::string IpText(const sockaddr_storage& storage) {
  char text[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], text, sizeof text);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    }
    return text;
  }
  if (storage.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof text);
    return text;
  }
  return "";
}

}  // namespace

std::string PeerAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t size = sizeof storage;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &size) != 0) return "";
  return IpText(storage);
}

std::string LocalAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t size = sizeof storage;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &size) != 0) return "";
  return IpText(storage);
}

Accepted AcceptOne(int listener) {
  while (true) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return {{IoState::kDone, 0, 0}, Fd(fd)};
    }
    if (errno == EINTR) continue;
    // A connection reset while queued is not the listener's failure.
    if (errno == ECONNABORTED || errno == EPROTO) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {{IoState::kWouldBlock, 0, 0}, Fd()};
    return {{IoState::kError, 0, errno}, Fd()};
  }
}

Connecting StartConnect(const Endpoint& endpoint) {
  Fd fd(socket(endpoint.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return {{IoState::kError, 0, errno}, Fd()};
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&endpoint.storage), endpoint.size) ==
      0) {
    return {{IoState::kDone, 0, 0}, std::move(fd)};
  }
  if (errno == EINPROGRESS || errno == EINTR) return {{IoState::kWouldBlock, 0, 0}, std::move(fd)};
  return {{IoState::kError, 0, errno}, Fd()};
}

int ConnectResult(int fd) {
  int error = 0;
  socklen_t size = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
  return error;
}

int Poll(std::vector<pollfd>& fds, Nanos timeout) {
  int64_t ms = 0;
  if (timeout.count() > 0) ms = (timeout.count() + 999999) / 1000000;
  if (ms > 60000) ms = 60000;
  const int n = poll(fds.data(), fds.size(), static_cast<int>(ms));
  if (n >= 0) return n;
  if (errno == EINTR) return 0;
  return -errno;
}

int ListenBacklog(int64_t num_processes) {
  return static_cast<int>(std::clamp<int64_t>(num_processes + 64, 128, 65535));
}

}  // namespace kdist
