#include "net/local_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "base/waiter.h"
#include "net/dns.h"

namespace kdist {

bool IsLoopbackAddress(std::string_view ip) {
  Result<Endpoint> endpoint = EndpointFromLiteral(ip, 0);
  if (!endpoint.ok()) return false;
  if (endpoint->family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&endpoint->storage);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&endpoint->storage);
  if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) return true;
  return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
}

Result<std::string> SourceAddressToward(const Endpoint& destination) {
  Endpoint target = destination;
  // connect() on a UDP socket only picks the route; a port is needed, never used.
  if (target.port() == 0) {
    if (target.family() == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&target.storage)->sin6_port = htons(9);
    } else {
      reinterpret_cast<sockaddr_in*>(&target.storage)->sin_port = htons(9);
    }
  }
  Fd fd(socket(target.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable("cannot open a socket: " + ErrorText(errno));
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&target.storage), target.size) != 0) {
    return Unavailable("no route to " + target.Host() + ": " + ErrorText(errno));
  }
  Endpoint local;
  local.size = sizeof local.storage;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local.storage), &local.size) != 0) {
    return Unavailable("cannot read the route's local address: " + ErrorText(errno));
  }
  return local.Host();
}

namespace {

Result<std::vector<Endpoint>> Lookup(const Address& address, Nanos timeout, Clock& clock) {
  WaitOptions options;
  options.deadline = Deadline::StartingNow(clock, timeout);
  Waiter waiter(clock, options);
  return ResolveEndpoints(address, waiter, [] { return std::string(); });
}

}  // namespace

Result<std::string> LocalAddressToward(const Address& address, Nanos timeout, Clock& clock) {
  KDIST_ASSIGN_OR_RETURN(const std::vector<Endpoint> endpoints, Lookup(address, timeout, clock));
  Status last = Unavailable(address.host + " resolved to no address");
  for (const Endpoint& endpoint : endpoints) {
    Result<std::string> local = SourceAddressToward(endpoint);
    if (local.ok()) return local;
    last = local.status();
  }
  return last;
}

Result<std::vector<std::string>> HostAddresses(const std::string& host, Nanos timeout,
                                               Clock& clock) {
  Result<HostKind> kind = ParseHost(host);
  if (!kind.ok()) return kind.status();
  KDIST_ASSIGN_OR_RETURN(const std::vector<Endpoint> endpoints,
                         Lookup(Address{host, 0, *kind}, timeout, clock));
  std::vector<std::string> out;
  for (const Endpoint& endpoint : endpoints) {
    std::string ip = endpoint.Host();
    bool seen = false;
    for (const std::string& known : out) seen = seen || known == ip;
    if (!seen) out.push_back(std::move(ip));
  }
  return out;
}

Status CheckLocalAddress(std::string_view ip) {
  Result<Endpoint> endpoint = EndpointFromLiteral(ip, 0);
  if (!endpoint.ok()) {
    return InvalidArgument("\"" + std::string(ip) + "\" is not an IP address");
  }
  Fd fd(socket(endpoint->family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable("cannot open a socket: " + ErrorText(errno));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&endpoint->storage), endpoint->size) != 0) {
    const int error = errno;
    if (error == EADDRNOTAVAIL) {
      return InvalidArgument(std::string(ip) + " is not an address of this host");
    }
    return InvalidArgument("cannot bind " + std::string(ip) + ": " + ErrorText(error));
  }
  return Status::Ok();
}

Result<std::string> InterfaceAddress(std::string_view name) {
  const std::string wanted(name);
  if (wanted.empty() || wanted.size() >= IF_NAMESIZE || if_nametoindex(wanted.c_str()) == 0) {
    return NotFound("this host has no network interface \"" + wanted + "\"");
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Unavailable("cannot list the network interfaces: " + ErrorText(errno));
  }
  std::optional<std::string> v4, v6;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || wanted != entry->ifa_name) continue;
    Endpoint endpoint;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    endpoint.size = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&endpoint.storage, entry->ifa_addr, endpoint.size);
    if (family == AF_INET && !v4) v4 = endpoint.Host();
    if (family == AF_INET6 && !v6) v6 = endpoint.Host();
  }
  freeifaddrs(list);
  if (v4) return *v4;
  if (v6) return *v6;
  return NotFound("the network interface \"" + wanted + "\" has no IP address");
}

}  // namespace kdist
