// Parses coordinator and job addresses: "10.0.0.1:1234", "[fe80::1]:1234",
// "node-7.cluster.local:1234", and comma-separated lists of them.
#ifndef KDIST_NET_ADDRESS_H_
#define KDIST_NET_ADDRESS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kdist {

enum class HostKind { kIPv4, kIPv6, kName };

struct Address {
  std::string host;  // without brackets, even for IPv6
  uint16_t port = 0;
  HostKind kind = HostKind::kName;

  // "host:port", with the IPv6 host in brackets.
  std::string ToString() const;
  bool operator==(const Address& other) const {
    return host == other.host && port == other.port && kind == other.kind;
  }
  bool operator!=(const Address& other) const { return !(*this == other); }
};

// One address. Failure is kInvalidArgument with a reason that names the bad
// part and the expected form, to be placed after the setting's name.
Result<Address> ParseAddress(std::string_view text);

// Comma-separated addresses; surrounding whitespace of each entry is ignored,
// an empty entry is an error that says which one.
Result<std::vector<Address>> ParseAddressList(std::string_view text);

// Whether `host` is a valid RFC 1123 host name (not an IP literal).
bool IsValidHostName(std::string_view host);

// The host part of an address, as written without brackets: an IPv4 address
// ("10.0.0.1"), an IPv6 address with an optional zone ("fe80::1%eth0") or a
// host name ("node-1.cluster"); no surrounding whitespace. Failure is
// kInvalidArgument with a reason to be placed after the host ("is not a valid
// host name (...)").
Result<HostKind> ParseHost(std::string_view host);

// The port part of an address: decimal digits only, 1..65535. Failure is
// kInvalidArgument with a reason to be placed after the port's text or the
// name of the setting it came from ("is not a number; expected a port in
// 1..65535").
Result<uint16_t> ParsePort(std::string_view text);

}  // namespace kdist

#endif  // KDIST_NET_ADDRESS_H_
