// How both extensions turn the core's Status into kdist's exceptions.
#ifndef KDIST_BINDINGS_ERRORS_H_
#define KDIST_BINDINGS_ERRORS_H_

#include <nanobind/nanobind.h>

#include <utility>

#include "base/status.h"

namespace kdist::bindings {

// The kdist exception class for a Status code (defined in kdist/_errors.py,
// imported only when a failure has to be raised).
inline const char* ExceptionName(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return "ConfigError";
    case StatusCode::kAlreadyExists: return "PortInUseError";
    case StatusCode::kUnavailable: return "CoordinatorUnreachableError";
    case StatusCode::kDeadlineExceeded: return "RendezvousTimeoutError";
    case StatusCode::kFailedPrecondition: return "RendezvousError";
    case StatusCode::kNotFound:
    case StatusCode::kInternal:
    case StatusCode::kOk: break;
  }
  return "KdistError";
}

// Raises the kdist exception for a failed `status` (of the class named
// `exception_name` in kdist/_errors.py when given, else the one for its
// code); does nothing when ok.
inline void RaiseIfError(const Status& status, const char* exception_name = nullptr) {
  if (status.ok()) return;
  nanobind::object errors = nanobind::module_::import_("kdist._errors");
  nanobind::object type =
      errors.attr(exception_name != nullptr ? exception_name : ExceptionName(status.code()));
  PyErr_SetString(type.ptr(), status.message().c_str());
  throw nanobind::python_error();
}

template <typename T>
T ValueOrRaise(Result<T> result) {
  RaiseIfError(result.status());
  return std::move(result).value();
}

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_ERRORS_H_
