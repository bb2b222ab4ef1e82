#include "net/address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "base/text.h"

namespace kdist {
namespace {

constexpr std::string_view kExpectedForm =
    "expected host:port, e.g. 10.0.0.1:1234, [fe80::1]:1234 or node-1:1234";

// The callers reject NUL bytes first: inet_pton reads a C string and would
// stop at one ("::1<NUL>junk" would pass as ::1).
bool IsValidIpv4(std::string_view host) {
  in_addr out{};
  return inet_pton(AF_INET, std::string(host).c_str(), &out) == 1;
}

bool IsValidIpv6(std::string_view host) {
  // A zone ("fe80::1%eth0") is allowed after the address.
  const size_t percent = host.find('%');
  if (percent != std::string_view::npos) {
    const std::string_view zone = host.substr(percent + 1);
    if (zone.empty()) return false;
    for (char c : zone) {
      if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
    }
    host = host.substr(0, percent);
  }
  in6_addr out{};
  return inet_pton(AF_INET6, std::string(host).c_str(), &out) == 1;
}

bool LooksLikeIpv4(std::string_view host) {
  for (char c : host) {
    if (!IsDigit(c) && c != '.') return false;
  }
  return true;
}

// "has a NUL byte (\x00) at byte 3", or "" when `text` has none.
std::string NulByte(std::string_view text) {
  const size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return "";
  return "has a NUL byte (\\x00) at byte " + std::to_string(nul);
}

}  // namespace

std::string Address::ToString() const {
  if (kind == HostKind::kIPv6) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

bool IsValidHostName(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);  // FQDN root
  if (host.empty() || host.size() > 253) return false;
  for (std::string_view label : Split(host, '.')) {
    if (label.empty() || label.size() > 63) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!IsAlnum(c) && c != '-') return false;
    }
  }
  return true;
}

Result<uint16_t> ParsePort(std::string_view text) {
  constexpr std::string_view kExpectedPort = "; expected a port in 1..65535";
  if (text.empty()) return InvalidArgument("is empty" + std::string(kExpectedPort));
  for (char c : text) {
    if (!IsDigit(c)) return InvalidArgument("is not a number" + std::string(kExpectedPort));
  }
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value > 65535) {
    return InvalidArgument("is out of range" + std::string(kExpectedPort));
  }
  if (value == 0) {
    return InvalidArgument("would let the system pick a different port on each process" +
                           std::string(kExpectedPort));
  }
  return static_cast<uint16_t>(value);
}

Result<HostKind> ParseHost(std::string_view host) {
  if (host.empty()) return InvalidArgument("is empty; expected an IP address or a host name");
  if (const std::string nul = NulByte(host); !nul.empty()) {
    return InvalidArgument(nul + "; expected an IP address or a host name");
  }
  if (host.find(':') != std::string_view::npos) {
    if (!IsValidIpv6(host)) {
      return InvalidArgument(
          "is not a valid IPv6 address, the only kind of host with ':'; expected an IP address "
          "or a host name, without a port");
    }
    return HostKind::kIPv6;
  }
  if (LooksLikeIpv4(host)) {
    if (!IsValidIpv4(host)) {
      return InvalidArgument("is not a valid IPv4 address (four numbers 0..255)");
    }
    return HostKind::kIPv4;
  }
  if (!IsValidHostName(host)) {
    return InvalidArgument(
        "is not a valid host name (dot-separated labels of letters, digits and '-', each at "
        "most 63 characters, not starting or ending with '-')");
  }
  return HostKind::kName;
}

Result<Address> ParseAddress(std::string_view text) {
  // Before anything else: inet_pton and the messages below would cut the text there.
  if (const std::string nul = NulByte(text); !nul.empty()) {
    return InvalidArgument(nul + "; " + std::string(kExpectedForm));
  }
  text = Trim(text);
  if (text.empty()) return InvalidArgument("is empty; " + std::string(kExpectedForm));

  Address address;
  std::string_view port_text;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgument("has '[' without a closing ']'; " + std::string(kExpectedForm));
    }
    const std::string_view host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty()) {
      return InvalidArgument("has no port; " + std::string(kExpectedForm));
    }
    if (rest.front() != ':') {
      return InvalidArgument("has " + Quote(rest) + " after ']' where \":port\" belongs; " +
                             std::string(kExpectedForm));
    }
    if (!IsValidIpv6(host)) {
      return InvalidArgument("has host " + Quote(host) +
                             ", which is not a valid IPv6 address; " + std::string(kExpectedForm));
    }
    address.host = std::string(host);
    address.kind = HostKind::kIPv6;
    port_text = rest.substr(1);
  } else {
    const size_t first_colon = text.find(':');
    if (first_colon == std::string_view::npos) {
      return InvalidArgument("has no port; " + std::string(kExpectedForm));
    }
    if (text.find(':', first_colon + 1) != std::string_view::npos) {
      return InvalidArgument(
          "looks like an IPv6 address without brackets; write it as "
          "[address]:port, e.g. [fe80::1]:1234");
    }
    const std::string_view host = text.substr(0, first_colon);
    port_text = text.substr(first_colon + 1);
    if (host.empty()) {
      return InvalidArgument("has no host before ':'; " + std::string(kExpectedForm));
    }
    Result<HostKind> kind = ParseHost(host);  // host has no ':', so not IPv6
    if (!kind.ok()) {
      return InvalidArgument("has host " + Quote(host) + ", which " + kind.status().message());
    }
    address.host = std::string(host);
    address.kind = *kind;
  }
  if (port_text.empty()) {
    return InvalidArgument("has an empty port; " + std::string(kExpectedForm));
  }
  Result<uint16_t> port = ParsePort(port_text);
  if (!port.ok()) {
    const bool digits = std::all_of(port_text.begin(), port_text.end(), IsDigit);
    return InvalidArgument("has port " + (digits ? std::string(port_text) : Quote(port_text)) +
                           ", which " + port.status().message());
  }
  address.port = *port;
  return address;
}

Result<std::vector<Address>> ParseAddressList(std::string_view text) {
  if (Trim(text).empty()) return InvalidArgument("is empty; " + std::string(kExpectedForm));
  const std::vector<std::string_view> entries = Split(text, ',');
  std::vector<Address> addresses;
  addresses.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    Result<Address> address = ParseAddress(entries[i]);
    if (!address.ok()) {
      if (entries.size() == 1) return address.status();
      std::string where = "entry " + std::to_string(i + 1) + " of " + std::to_string(entries.size());
      if (!Trim(entries[i]).empty()) where += " (" + Quote(Trim(entries[i])) + ")";
      return InvalidArgument(where + " " + address.status().message());
    }
    addresses.push_back(std::move(address).value());
  }
  return addresses;
}

}  // namespace kdist
