// Status and Result<T>: how every fallible function of the core reports failure.
//
// The core never throws and never aborts. A failure is a code from a short set
// plus a message written for the person who configured the job.
#ifndef KDIST_BASE_STATUS_H_
#define KDIST_BASE_STATUS_H_

#include <string>
#include <utility>
#include <variant>

namespace kdist {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // a setting is malformed or out of range
  kNotFound,            // something looked up is absent
  kAlreadyExists,       // the coordinator port is taken by a live listener
  kUnavailable,         // the coordinator cannot be reached (yet)
  kDeadlineExceeded,    // a wait ran out of time
  kFailedPrecondition,  // the processes of a job disagree, or an order was broken
  kInternal,            // a bug or an unexpected system failure
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Itself, so code (and the test macros) can treat a Status like a Result.
  const Status& status() const { return *this; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  // A failure. An OK status carries no value: that is a bug in the caller, so it
  // becomes kInternal, which says so, instead of a Result that is neither.
  Result(Status status)  // NOLINT: implicit by design
      : state_(status.ok() ? Internal("a Result was made from an OK status, without a value")
                           : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace kdist

// Returns early from the enclosing function when `expr` (a Status) is not ok.
#define KDIST_RETURN_IF_ERROR(expr)           \
  do {                                        \
    ::kdist::Status kdist_status_ = (expr);   \
    if (!kdist_status_.ok()) return kdist_status_; \
  } while (0)

// Declares or assigns `lhs` from `expr` (a Result<T>), or returns its Status from the
// enclosing function when it failed:
//   KDIST_ASSIGN_OR_RETURN(const Address address, ParseAddress(text));
#define KDIST_ASSIGN_OR_RETURN(lhs, expr) \
  KDIST_ASSIGN_OR_RETURN_IMPL(KDIST_STATUS_CONCAT(kdist_result_, __LINE__), lhs, expr)
#define KDIST_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                                \
  if (!result.ok()) return result.status();            \
  lhs = std::move(result).value()
#define KDIST_STATUS_CONCAT(a, b) KDIST_STATUS_CONCAT_INNER(a, b)
#define KDIST_STATUS_CONCAT_INNER(a, b) a##b

#endif  // KDIST_BASE_STATUS_H_
