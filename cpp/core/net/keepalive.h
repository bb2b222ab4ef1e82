// TCP keepalive sized from the unreachable window: how long a peer's host may
// answer nothing (no FIN, no RST: it lost power or its network) before the
// kernel ends the connection with ETIMEDOUT. The liveness channel, the nodes'
// rendezvous and its agents all size their connections this way, from one
// window (KDIST_UNREACHABLE_TIMEOUT, resolved in config/job_settings).
#ifndef KDIST_NET_KEEPALIVE_H_
#define KDIST_NET_KEEPALIVE_H_

#include <chrono>
#include <optional>

#include "base/clock.h"

namespace kdist {

// The unreachable window when nothing sets it: the one place this default is written.
inline constexpr std::chrono::seconds kDefaultUnreachableTimeout{20};

struct Keepalive {
  // The window, and the TCP settings sized from it (KeepaliveFor): a probe after
  // `idle` of silence, then one every `interval`; the kernel gives up once nothing
  // was heard for `user_timeout` (TCP_USER_TIMEOUT, which also bounds
  // unacknowledged data), or after `count` lost probes where that is unsupported.
  Nanos unreachable_timeout = kDefaultUnreachableTimeout;
  Nanos idle = std::chrono::seconds(5);
  Nanos interval = std::chrono::seconds(2);
  int count = 6;
  Nanos user_timeout = std::chrono::seconds(18);
};

// Settings that notice a vanished host within `unreachable_timeout` of its last
// answer and never end the connection over a blackout much shorter than that:
// the first probe after a quarter of the window, then one every tenth (whole
// seconds, at least 1 s each: the kernel counts seconds); the kernel gives up
// one interval before the window ends, so that its check, which runs once per
// interval, still falls inside it. With the 20 s default: idle 5 s, a probe
// every 2 s, given up after 18 s of silence (6 probes lost in a row); a
// blackout survives when idle + blackout + interval stays below that (up to
// about 11 s).
Keepalive KeepaliveFor(Nanos unreachable_timeout);

// Keepalive and TCP_USER_TIMEOUT on a connected socket (best effort), and
// TCP_NODELAY: a message leaves at once.
void SetKeepalive(int fd, const Keepalive& keepalive);

// How long ago the peer of a TCP connection was last heard from (its last data or ACK,
// keepalive's answers included), from the kernel's TCP_INFO; nullopt when it cannot tell.
// Read when the kernel gave the peer's host up, it says when the host went silent.
std::optional<Nanos> SinceLastHeard(int fd);

}  // namespace kdist

#endif  // KDIST_NET_KEEPALIVE_H_
