// kdist._core's liveness channel: this process's end of it (process 0's hub
// or another process's spoke) and what the process does on a peer's failure.
#ifndef KDIST_BINDINGS_LIVENESS_BINDINGS_H_
#define KDIST_BINDINGS_LIVENESS_BINDINGS_H_

#include <nanobind/nanobind.h>

namespace kdist::bindings {

// Binds LivenessChannel, start_liveness_hub() and join_liveness() into `m`.
void BindLiveness(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_LIVENESS_BINDINGS_H_
