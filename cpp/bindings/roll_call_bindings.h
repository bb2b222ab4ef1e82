// kdist._core's roll call: process 0's bind check and roll call, another
// process's side of it, and the wait for JAX's coordinator service.
#ifndef KDIST_BINDINGS_ROLL_CALL_BINDINGS_H_
#define KDIST_BINDINGS_ROLL_CALL_BINDINGS_H_

#include <nanobind/nanobind.h>

namespace kdist::bindings {

// Binds the start's Deadline, the coordinator listener, the roll call's
// messages and results, run_coordinator(), run_worker(),
// wait_for_coordinator_service() and PROTOCOL_VERSION into `m`.
void BindRollCall(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_ROLL_CALL_BINDINGS_H_
