// How a load generator's simulated processes connect to process 0 on one
// machine: spread over many loopback source addresses, as a real job's
// processes come from many hosts (roll_call_load.h, channel_load.h).
//
// Connections from one source address to one destination make the kernel's
// search for a free ephemeral port at connect() grow with the connections
// already open (measured: 2.2 s of system time for 16,384 from 127.0.0.1).
//
// Not part of the kdist library (cpp/load/).
#ifndef KDIST_LOAD_LOOPBACK_CONNECT_H_
#define KDIST_LOAD_LOOPBACK_CONNECT_H_

#include <cstddef>

#include "net/socket.h"

namespace kdist {

// A non-blocking connect to `to` with TCP_NODELAY, from
// 127.0.0.<2 + index % 250> when `to` is IPv4 loopback; the kernel picks the
// port at connect time. Anything else connects as StartConnect does.
Connecting ConnectFrom(const Endpoint& to, size_t index);

}  // namespace kdist

#endif  // KDIST_LOAD_LOOPBACK_CONNECT_H_
