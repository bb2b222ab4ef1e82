// kdist._core's side of stopping together: this process's StopBoard, the
// stop-signal relay, and should_stop(step) itself, whose common path is C++
// from the call to the answer (no Python frame of kdist's in between).
#ifndef KDIST_BINDINGS_STOP_BINDINGS_H_
#define KDIST_BINDINGS_STOP_BINDINGS_H_

#include <nanobind/nanobind.h>

#include "stop/stop_board.h"

namespace kdist::bindings {

// This process's board, as Python holds it (kdist._core.StopBoard).
struct StopBoardPy {
  StopBoard board;
};

// Binds StopBoard, the relay's functions, set_active_board() and
// should_stop() into `m`.
void BindStop(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_STOP_BINDINGS_H_
