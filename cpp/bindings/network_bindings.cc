#include "network_bindings.h"

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "casters.h"
#include "config/resolve.h"
#include "errors.h"
#include "net/address.h"
#include "net/local_address.h"
#include "net/probe.h"
#include "net/socket.h"

namespace nb = nanobind;

namespace kdist {
namespace {

using bindings::RaiseIfError;
using bindings::ValueOrRaise;

// The address parsers and the connect probe, as the command line and `kdist
// doctor` use them. A failure is kdist.ConfigError with the core's reason.

Address ParseAddressPy(const std::string& text) { return ValueOrRaise(ParseAddress(text)); }

uint16_t ParsePortPy(const std::string& text) { return ValueOrRaise(ParsePort(text)); }

double ParseTimeoutSecondsPy(const std::string& text) {
  return ValueOrRaise(ParseTimeoutSeconds(text));
}

ProbeResult ProbeTcpPy(const std::string& address_text, double timeout) {
  const Address address = ValueOrRaise(ParseAddress(address_text));
  RealClock clock;
  nb::gil_scoped_release release;
  return ProbeTcp(address, SecondsToNanos(timeout), clock);
}

// A TCP port that was free a moment ago where the coordinator binds: the IPv6
// wildcard address, dual-stack (so every IPv4 and IPv6 address, loopback
// included), or 0.0.0.0 where there is no IPv6.
uint16_t FreePortPy() {
  Result<Listener> listener = ListenOnAllInterfaces(0, 1);
  RaiseIfError(listener.status());
  return listener->port;
}

std::string LocalAddressTowardPy(const std::string& address_text, double timeout) {
  const Address address = ValueOrRaise(ParseAddress(address_text));
  RealClock clock;
  Result<std::string> local = [&] {
    nb::gil_scoped_release release;
    return LocalAddressToward(address, SecondsToNanos(timeout), clock);
  }();
  return ValueOrRaise(std::move(local));
}

std::vector<std::string> HostAddressesPy(const std::string& host, double timeout) {
  RealClock clock;
  Result<std::vector<std::string>> addresses = [&] {
    nb::gil_scoped_release release;
    return HostAddresses(host, SecondsToNanos(timeout), clock);
  }();
  return ValueOrRaise(std::move(addresses));
}

void CheckLocalAddressPy(const std::string& ip) {
  RaiseIfError(CheckLocalAddress(ip), "ConfigError");
}

std::string InterfaceAddressPy(const std::string& name) {
  Result<std::string> address = InterfaceAddress(name);
  RaiseIfError(address.status(), "ConfigError");
  return *address;
}

}  // namespace

namespace bindings {

void BindNetwork(nb::module_& m) {
  nb::enum_<HostKind>(m, "HostKind", "What an address's host part is.")
      .value("ipv4", HostKind::kIPv4)
      .value("ipv6", HostKind::kIPv6)
      .value("host_name", HostKind::kName);

  nb::class_<Address>(m, "Address", "A parsed host:port address.")
      .def_ro("host", &Address::host, "The host, without brackets even for IPv6.")
      .def_ro("port", &Address::port)
      .def_ro("kind", &Address::kind)
      .def("__str__", &Address::ToString, "host:port, with an IPv6 host in brackets.");

  m.def("parse_address", &ParseAddressPy, nb::arg("text"),
        "Parses one address: '10.0.0.1:1234', '[fe80::1]:1234', 'node-7:1234'; raises "
        "kdist.ConfigError with the reason.");
  m.def("parse_port", &ParsePortPy, nb::arg("text"),
        "Parses a port, 1..65535 in decimal digits; raises kdist.ConfigError with the reason.");
  m.def("parse_timeout_seconds", &ParseTimeoutSecondsPy, nb::arg("text"),
        "Parses a duration as the command line's options take one: positive seconds, at "
        "most the longest timeout; raises kdist.ConfigError with the expected form.");

  nb::enum_<ProbeState>(m, "ProbeState", "What a connect probe found.")
      .value("listening", ProbeState::kListening, "A program accepts connections there.")
      .value("refused", ProbeState::kRefused, "Nothing listens there.")
      .value("timeout", ProbeState::kTimeout, "No answer before the timeout.")
      .value("unresolved", ProbeState::kUnresolved, "The host name does not resolve.")
      .value("unreachable", ProbeState::kUnreachable, "The network cannot reach the host.");

  nb::class_<ProbeResult>(m, "ProbeResult", "One TCP connect probe.")
      .def_ro("state", &ProbeResult::state)
      .def_ro("detail", &ProbeResult::detail,
              "unresolved: the resolver's message; unreachable: the error; else ''.")
      .def_prop_ro(
          "seconds", [](const ProbeResult& r) { return NanosToSeconds(r.elapsed); },
          "How long the probe took.");

  m.def("probe_tcp", &ProbeTcpPy, nb::arg("address"), nb::arg("timeout"),
        "Connects once to `address` (host:port; a host name is resolved) within `timeout` "
        "seconds, GIL released, and closes at once; raises kdist.ConfigError for a malformed "
        "address.");
  m.def("local_address_toward", &LocalAddressTowardPy, nb::arg("address"), nb::arg("timeout"),
        "The local IP address this host's traffic to `address` (host:port; a host name is "
        "resolved within `timeout` seconds, GIL released) leaves from: the address the other "
        "hosts reach this one at. Nothing is sent. Raises kdist.CoordinatorUnreachableError "
        "when the name does not resolve or there is no route.");
  m.def("host_addresses", &HostAddressesPy, nb::arg("host"), nb::arg("timeout"),
        "The IP addresses a host name resolves to (within `timeout` seconds, GIL released), "
        "in the resolver's order; an IP literal gives itself.");
  m.def("is_loopback_address", &IsLoopbackAddress, nb::arg("ip"),
        "Whether an IP literal is a loopback address (127.0.0.0/8, ::1).");
  m.def("check_local_address", &CheckLocalAddressPy, nb::arg("ip"),
        "Raises kdist.ConfigError unless `ip` is an address of this host.");
  m.def("interface_address", &InterfaceAddressPy, nb::arg("name"),
        "The first IPv4 (else IPv6) address of the network interface `name`; raises "
        "kdist.ConfigError when there is no such interface or it has no address.");
  m.def("free_port", &FreePortPy,
        "A TCP port that was free a moment ago on every interface (IPv4 and IPv6, loopback "
        "included), checked as the coordinator binds it.");
}

}  // namespace bindings
}  // namespace kdist
