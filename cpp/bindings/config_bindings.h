// kdist._core's configuration: ClusterSpec, Request, resolve() and the scheduler
// detectors.
#ifndef KDIST_BINDINGS_CONFIG_BINDINGS_H_
#define KDIST_BINDINGS_CONFIG_BINDINGS_H_

#include <nanobind/nanobind.h>

namespace kdist::bindings {

// Binds ClusterSpec, Request, resolve(), cluster_detection_modes(), the detector
// table and what detectors report into `m`.
void BindConfig(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_CONFIG_BINDINGS_H_
