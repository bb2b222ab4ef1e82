// A one-shot TCP connect probe of an address, for `kdist doctor`: does a
// program accept connections there, and if not, why not.
#ifndef KDIST_NET_PROBE_H_
#define KDIST_NET_PROBE_H_

#include <string>

#include "base/clock.h"
#include "net/address.h"

namespace kdist {

enum class ProbeState {
  kListening,    // a program accepted the connection
  kRefused,      // nothing listens there (the host answered with a reset)
  kTimeout,      // no answer before the deadline: a firewall drops the packets, or the host is down
  kUnresolved,   // the host name does not resolve
  kUnreachable,  // the network cannot reach the host (no route, network down, ...)
};

// "listening", "refused", "timeout", "unresolved", "unreachable".
const char* ProbeStateName(ProbeState state);

struct ProbeResult {
  ProbeState state = ProbeState::kUnreachable;
  std::string detail;  // kUnresolved: the resolver's message; kUnreachable: the error; else ""
  Nanos elapsed{0};
};

// Resolves `address` (an IP literal without any lookup) and connects to its
// endpoints in the resolver's order until one accepts, the whole within
// `timeout`; a connection that succeeds is closed at once. The state is the
// accepting endpoint's, else the last failure's.
ProbeResult ProbeTcp(const Address& address, Nanos timeout, Clock& clock);

}  // namespace kdist

#endif  // KDIST_NET_PROBE_H_
