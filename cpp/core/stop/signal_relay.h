// kdist's handler for the stop signals: it tells this process's StopBoard and
// then calls the handlers that were there before, so that nothing is silently
// replaced.
//
// Two earlier handlers can matter, and both are called (each once):
//   - the handler in place when kdist installs its own, after JAX's initialize:
//     XLA's preemption notifier (a plain std::signal handler that sets the flag
//     behind multihost_utils.reached_preemption_sync_point and Orbax's
//     preemption save);
//   - the handler the program had before JAX replaced it (JAX installs XLA's
//     with std::signal, which drops whatever was there): Python's own C-level
//     handler when the program set a Python handler with signal.signal().
//     RememberProgramHandlers() records it before JAX starts.
// SIG_DFL and SIG_IGN are never "called": the default action of a stop signal
// is what kdist replaces (the job then stops together instead).
//
// Signal handlers are process-wide, so this file keeps the one piece of
// process-wide state in the core: which board the handler tells and what it
// chains to. Everything it touches from the handler is async-signal-safe.
#ifndef KDIST_STOP_SIGNAL_RELAY_H_
#define KDIST_STOP_SIGNAL_RELAY_H_

#include <vector>

#include "base/status.h"
#include "stop/stop_board.h"

namespace kdist {

// Records, for each signal, the handler in place now (call it before JAX's
// initialize) as the program's own; only those in `program_handlers` (a
// subset) are chained (the caller knows which are the program's, e.g. a Python
// handler rather than Python's default SIGINT handler).
void RememberProgramHandlers(const std::vector<int>& program_handlers);

// Installs kdist's handler for each of `signals`, telling `board` (which must
// outlive the installation) and chaining as above. kInternal when sigaction
// fails (the message names the signal); kFailedPrecondition when installed
// already.
Status InstallSignalRelay(const std::vector<int>& signals, StopBoard* board);

// Puts back the handlers InstallSignalRelay found (does nothing when none is
// installed). The board is no longer told after it returns.
void UninstallSignalRelay();

}  // namespace kdist

#endif  // KDIST_STOP_SIGNAL_RELAY_H_
