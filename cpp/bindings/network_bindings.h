// kdist._core's network helpers, as the command line and `kdist doctor` use
// them: address, port and duration parsing, the connect probe, a free port.
#ifndef KDIST_BINDINGS_NETWORK_BINDINGS_H_
#define KDIST_BINDINGS_NETWORK_BINDINGS_H_

#include <nanobind/nanobind.h>

namespace kdist::bindings {

// Binds Address, parse_address(), parse_port(), parse_timeout_seconds(),
// probe_tcp() and free_port() into `m`.
void BindNetwork(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_NETWORK_BINDINGS_H_
