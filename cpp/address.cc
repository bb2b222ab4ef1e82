#include "address.h"

#include <arpa/inet.h>

#include <charconv>
#include <string>

#include "text.h"

namespace kdist {
namespace {

constexpr std::string_view kExpectedForm =
    "expected host:port, e.g. 10.0.0.1:1234, [fe80::1]:1234 or node-1:1234";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

Result<uint16_t> ParsePort(std::string_view text) {
  if (text.empty()) {
    return InvalidArgument("has an empty port; " + std::string(kExpectedForm));
  }
  for (char c : text) {
    if (!IsDigit(c)) {
      return InvalidArgument("has port " + Quote(text) +
                             ", which is not a number; expected a port in 1..65535");
    }
  }
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value > 65535) {
    return InvalidArgument("has port " + std::string(text) +
                           ", which is out of range; expected a port in 1..65535");
  }
  if (value == 0) {
    return InvalidArgument(
        "has port 0, which would let the system pick a different port on each "
        "process; expected a port in 1..65535");
  }
  return static_cast<uint16_t>(value);
}

bool IsValidIpv4(std::string_view host) {
  if (host.find('\0') != std::string_view::npos) return false;  // inet_pton stops there
  in_addr out{};
  return inet_pton(AF_INET, std::string(host).c_str(), &out) == 1;
}

bool IsValidIpv6(std::string_view host) {
  if (host.find('\0') != std::string_view::npos) return false;  // inet_pton stops there
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

Result<Address> ParseAddress(std::string_view text) {
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
    if (LooksLikeIpv4(host)) {
      if (!IsValidIpv4(host)) {
        return InvalidArgument("has host " + Quote(host) +
                               ", which is not a valid IPv4 address (four numbers 0..255)");
      }
      address.kind = HostKind::kIPv4;
    } else if (IsValidHostName(host)) {
      address.kind = HostKind::kName;
    } else {
      return InvalidArgument(
          "has host " + Quote(host) +
          ", which is not a valid host name (dot-separated labels of letters, digits and '-', "
          "each at most 63 characters, not starting or ending with '-')");
    }
    address.host = std::string(host);
  }
  Result<uint16_t> port = ParsePort(port_text);
  if (!port.ok()) return port.status();
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
