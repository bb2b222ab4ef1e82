#include "python_hooks.h"

#include <utility>

#include "errors.h"

namespace nb = nanobind;

namespace kdist::bindings {

void PythonHooks::Install(WaitOptions& options) {
  if (progress_) {
    options.progress = [this](const std::string& line) {
      if (error_) return;
      nb::gil_scoped_acquire gil;
      try {
        (*progress_)(line);
      } catch (nb::python_error& e) {
        error_.emplace(std::move(e));
      }
    };
  }
  options.interrupted = [this]() -> Status {
    if (error_) return Internal("stopped by a Python exception");
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      error_.emplace();  // takes the pending exception (KeyboardInterrupt)
      return Internal("interrupted by a signal");
    }
    return Status::Ok();
  };
}

void PythonHooks::Finish(const Status& status, const char* exception_name) {
  if (error_) {
    nb::python_error error = std::move(*error_);
    error_.reset();
    throw error;
  }
  RaiseIfError(status, exception_name);
}

}  // namespace kdist::bindings
