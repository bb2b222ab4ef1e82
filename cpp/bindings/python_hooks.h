// What the bindings hand the core so that a wait can talk to Python: a
// progress callback, and a check for a pending signal (Ctrl-C), each run with
// the GIL taken for the moment it needs Python.
#ifndef KDIST_BINDINGS_PYTHON_HOOKS_H_
#define KDIST_BINDINGS_PYTHON_HOOKS_H_

#include <optional>
#include <string>
#include <utility>

#include "base/status.h"
#include "base/waiter.h"
#include "casters.h"

namespace kdist::bindings {

// A progress callback: called with one line at a time.
using ProgressCallback = nanobind::typed<nanobind::callable, void(std::string)>;

// The Python side of a wait's hooks (the roll call's, the liveness channel's
// end of the job). The core calls them with the GIL released; each takes the
// GIL for the moment it runs Python. A Python exception raised inside
// (KeyboardInterrupt from a signal handler, an error from a logging handler)
// stops the wait and is re-raised by Finish().
class PythonHooks {
 public:
  explicit PythonHooks(std::optional<ProgressCallback> progress)
      : progress_(std::move(progress)) {}

  // Sets options.progress (when there is a callback) and options.interrupted.
  // The hooks must outlive every call of them.
  void Install(WaitOptions& options);

  // With the GIL held: re-raises a Python exception caught in a hook, else
  // raises the kdist exception for `status` (see RaiseIfError).
  void Finish(const Status& status, const char* exception_name = nullptr);

 private:
  std::optional<ProgressCallback> progress_;
  std::optional<nanobind::python_error> error_;
};

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_PYTHON_HOOKS_H_
