// Thin, RAII wrappers over the POSIX socket calls the roll call needs.
//
// Every socket is non-blocking and close-on-exec; waiting is done by the
// caller with Poll(), so every wait has a bound. Sends use MSG_NOSIGNAL: a
// peer that vanished is an error code, never a SIGPIPE.
#ifndef KDIST_NET_SOCKET_H_
#define KDIST_NET_SOCKET_H_

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/text.h"

namespace kdist {

// Owns a file descriptor; closes it when destroyed.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.Release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Close();
  // Closes with SO_LINGER 0: the peer gets a reset and this side keeps no
  // TIME_WAIT, so a dropped connection leaves the port clean.
  void CloseWithReset();

 private:
  int fd_ = -1;
};


// A socket address of any family.
struct Endpoint {
  sockaddr_storage storage{};
  socklen_t size = 0;
  int family() const { return storage.ss_family; }
  uint16_t port() const;
  // The IP literal alone, without port or brackets: "127.0.0.1", "::1".
  std::string Host() const;
  // "127.0.0.1:5000", "[::1]:5000".
  std::string ToString() const;
};

// An IPv4 or IPv6 literal and port as an Endpoint (no name lookup), for tests
// and for the worker's own loopback probes.
Result<Endpoint> EndpointFromLiteral(std::string_view ip, uint16_t port);

struct Listener {
  Fd fd;
  uint16_t port = 0;
  std::string bound;  // what was bound: "[::]:5000 (IPv4 and IPv6)" or "0.0.0.0:5000"
};

// Listens on every interface the way JAX's coordinator will: "[::]" accepting
// IPv4 too, falling back to 0.0.0.0 where IPv6 is missing. SO_REUSEADDR (a
// TIME_WAIT left by an earlier run does not count as in use), never
// SO_REUSEPORT (a live listener does). A taken port is kAlreadyExists, a
// privileged one kInvalidArgument; port 0 picks a free port (tests).
Result<Listener> ListenOnAllInterfaces(uint16_t port, int backlog);

// Listens on one address only (JAX_COORDINATOR_BIND_ADDRESS): an IPv6 one
// ("::" included) also accepts IPv4. Errors as ListenOnAllInterfaces.
Result<Listener> ListenOn(const Endpoint& endpoint, int backlog);

enum class IoState { kDone, kWouldBlock, kEof, kError };
struct Io {
  IoState state = IoState::kError;
  size_t bytes = 0;  // kDone: bytes moved
  int error = 0;     // kError: errno
};

Io ReadSome(int fd, char* buffer, size_t size);
Io WriteSome(int fd, std::string_view bytes);

// One pending connection from a listener. kWouldBlock: none pending.
struct Accepted {
  Io io;
  Fd fd;
};
Accepted AcceptOne(int listener);

// The IP literal of the peer of the connected socket `fd` ("10.0.0.3", "::1";
// an IPv4-mapped IPv6 address as IPv4); "" when unknown.
std::string PeerAddress(int fd);
// The IP literal of this side of the connected socket `fd`: the address the peer
// reached (same form as PeerAddress); "" when unknown.
std::string LocalAddress(int fd);

// A non-blocking connect: kDone when connected at once, kWouldBlock while in
// progress (wait for POLLOUT, then ConnectResult), kError with errno.
struct Connecting {
  Io io;
  Fd fd;
};
Connecting StartConnect(const Endpoint& endpoint);
// After POLLOUT: 0 when connected, else the errno of the failure.
int ConnectResult(int fd);

// poll() for at most `timeout` (rounded up to whole milliseconds, negative =
// 0). Returns the number of ready descriptors, 0 on timeout or EINTR, -errno
// on failure.
int Poll(std::vector<pollfd>& fds, Nanos timeout);

// Process 0's listen backlog for a job of `num_processes`: room for every other
// process to be waiting at once (the kernel caps it at net.core.somaxconn).
int ListenBacklog(int64_t num_processes);

}  // namespace kdist

#endif  // KDIST_NET_SOCKET_H_
