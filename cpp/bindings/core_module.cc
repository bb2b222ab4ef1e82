// kdist._core: the core as the package sees it. Every result crosses as a
// bound class with read-only fields (its stub is generated from the built
// module), every failed Status as a kdist exception (errors.h).
//
// One binding function per area, each in its own file; they register in this
// order, which is the order of the generated stub.
#include <nanobind/nanobind.h>

#include "config_bindings.h"
#include "job_bindings.h"
#include "liveness_bindings.h"
#include "network_bindings.h"
#include "rendezvous_bindings.h"
#include "roll_call_bindings.h"
#include "stop_bindings.h"

NB_MODULE(_core, m) {
  m.doc() = "kdist's compiled core: configuration resolution, scheduler detection, the "
            "pre-flight roll call and the liveness channel.";
  kdist::bindings::BindConfig(m);
  kdist::bindings::BindRollCall(m);
  kdist::bindings::BindNetwork(m);
  kdist::bindings::BindStop(m);
  kdist::bindings::BindLiveness(m);
  kdist::bindings::BindJob(m);
  kdist::bindings::BindRendezvous(m);
}
