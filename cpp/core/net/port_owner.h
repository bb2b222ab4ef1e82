// Who holds a TCP port: for the message of a taken coordinator port.
//
// Linux lists every TCP socket of the network namespace in /proc/net/tcp and
// /proc/net/tcp6 (address, state, uid, inode); each process's open sockets
// appear as /proc/PID/fd/N -> "socket:[INODE]". Matching the two names the
// pid and command of a listener, where /proc lets this user look. The
// parsing is pure and tested on text; the walk takes the /proc root and a
// time budget.
#ifndef KDIST_NET_PORT_OWNER_H_
#define KDIST_NET_PORT_OWNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"

namespace kdist {

inline constexpr int kTcpListen = 0x0A;

struct TcpSocketEntry {
  std::string local_address;  // printable: "127.0.0.1", "::"
  uint16_t local_port = 0;
  int state = 0;
  uint32_t uid = 0;
  uint64_t inode = 0;
};

// The entries of a /proc/net/tcp or /proc/net/tcp6 text; the header and
// malformed lines are skipped.
std::vector<TcpSocketEntry> ParseProcNetTcp(std::string_view text);

// The inode of a "socket:[12345]" link target; nullopt for anything else.
std::optional<uint64_t> ParseSocketLink(std::string_view link);

struct PortOwner {
  std::string listening_on;  // "127.0.0.1:5000"
  uint32_t uid = 0;
  int64_t pid = 0;       // 0: the socket's process could not be seen
  std::string command;   // /proc/PID/comm
};

// The listener on `port`, looked up under `proc_root` within `budget`.
std::optional<PortOwner> FindPortOwner(uint16_t port, Clock& clock, Nanos budget,
                                       const std::string& proc_root = "/proc");

// "held by pid 4242 (python3), listening on 127.0.0.1:5000", or a weaker
// sentence when the pid is unknown, or "" when nothing was found.
std::string DescribePortOwner(const std::optional<PortOwner>& owner);

}  // namespace kdist

#endif  // KDIST_NET_PORT_OWNER_H_
