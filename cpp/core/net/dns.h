// Turns a coordinator address into socket endpoints of every address family,
// within a deadline.
//
// IP literals are converted without any lookup (AI_NUMERICHOST). A host name
// goes to the system resolver (getaddrinfo, which can block for as long as
// /etc/resolv.conf allows) on a helper thread that blocks every signal; the
// caller waits for it in bounded slices and joins it as soon as it answers, so
// no thread outlives a lookup that finishes before the deadline. A lookup
// still blocked at the deadline is abandoned: its detached thread owns all it
// touches and ends when the resolver gives up; the caller gets
// kDeadlineExceeded at once.
#ifndef KDIST_NET_DNS_H_
#define KDIST_NET_DNS_H_

#include <netdb.h>

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"
#include "net/address.h"
#include "net/socket.h"

namespace kdist {

// Endpoints in the resolver's preference order. kUnavailable when the name
// does not resolve, kDeadlineExceeded when the waiter's deadline passes
// first, or the interrupt hook's status. `line` feeds the waiter's progress.
Result<std::vector<Endpoint>> ResolveEndpoints(const Address& address, Waiter& waiter,
                                               const std::function<std::string()>& line);

// getaddrinfo's signature; tests pass a slow one to exercise the deadline.
using LookupFunction = int (*)(const char* host, const char* service, const addrinfo* hints,
                               addrinfo** result);
Result<std::vector<Endpoint>> ResolveEndpointsWith(const Address& address, Waiter& waiter,
                                                   const std::function<std::string()>& line,
                                                   LookupFunction lookup);

}  // namespace kdist

#endif  // KDIST_NET_DNS_H_
