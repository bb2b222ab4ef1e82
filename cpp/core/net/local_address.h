// The address this host is reached at by the other hosts of a job, for what
// advertises an address of its own: JAX's CPU collectives (Gloo), which by
// default advertise the address the host's *name* resolves to (127.0.1.1 on a
// stock Debian or Ubuntu host, 127.0.0.1 on some others), so that no other host
// can connect. The route toward the coordinator gives the address the other
// hosts reach (the one this host's connections to the coordinator leave from).
#ifndef KDIST_NET_LOCAL_ADDRESS_H_
#define KDIST_NET_LOCAL_ADDRESS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "net/address.h"
#include "net/socket.h"

namespace kdist {

// Whether an IP literal is a loopback address (127.0.0.0/8, ::1, or an
// IPv4-mapped 127.x); false for anything that is not an IP literal.
bool IsLoopbackAddress(std::string_view ip);

// The local address the kernel picks for traffic to `destination` (a UDP
// socket connected to it: nothing is sent). kUnavailable with the error when
// there is no route.
Result<std::string> SourceAddressToward(const Endpoint& destination);

// Resolves `address` (an IP literal without any lookup; a host name within
// `timeout`) and returns the local address toward its first endpoint that has
// a route. kUnavailable when the name does not resolve or nothing is routed,
// kDeadlineExceeded when the lookup outlasts `timeout`.
Result<std::string> LocalAddressToward(const Address& address, Nanos timeout, Clock& clock);

// The IP literals a host name resolves to, in the resolver's order, within
// `timeout` (an IP literal gives itself). For messages: "vm resolves to
// 127.0.0.1".
Result<std::vector<std::string>> HostAddresses(const std::string& host, Nanos timeout,
                                               Clock& clock);

// kOk when `ip` is an address of this host (a socket can bind it);
// kInvalidArgument, saying so, when it is not or is not an IP literal.
Status CheckLocalAddress(std::string_view ip);

// The first IPv4 address of the network interface `name`, else its first
// IPv6 one. kNotFound when there is no such interface or it has no address.
Result<std::string> InterfaceAddress(std::string_view name);

}  // namespace kdist

#endif  // KDIST_NET_LOCAL_ADDRESS_H_
