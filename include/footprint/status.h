// Status and Result<T>: how every library boundary reports failure.
//
// A Status is either OK or carries a code and one human-readable line that says what is wrong
// and, where possible, what to do. The line stays one line whatever it quotes: control
// characters in the message (a newline or an escape sequence in a name, a plan, an argument)
// are kept as visible escapes ("\n", "\e"). Result<T> holds either a value or a non-OK Status.
// Exceptions never cross a library boundary; code that calls throwing APIs (the standard
// library, nlohmann::json) converts at its edge.
//
// Thread-safety: plain values; safe to copy and move between threads.
#ifndef FOOTPRINT_STATUS_H_
#define FOOTPRINT_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace footprint {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller (or the user) passed something malformed
  kNotFound,         // a named thing (run, file, metric) does not exist
  kUnsupported,      // this machine or kernel cannot do it; the message says why
  kDatabase,         // the store cannot be opened, read or written
  kIo,               // a system call on a file or process failed
  kInternal,         // a bug or an impossible state
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status Unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }
inline Status DatabaseError(std::string m) { return Status(StatusCode::kDatabase, std::move(m)); }
inline Status IoError(std::string m) { return Status(StatusCode::kIo, std::move(m)); }
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// Either a T or a non-OK Status. Accessing value() of a failed Result is a precondition
// violation (asserted in debug builds).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok());
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace footprint

#define FP_STATUS_CONCAT_INNER(a, b) a##b
#define FP_STATUS_CONCAT(a, b) FP_STATUS_CONCAT_INNER(a, b)
// Returns early from the enclosing function when `expr` (a Status) is not OK. The variable is
// named after the line so that a lambda inside `expr` may use the macro too.
#define FP_RETURN_IF_ERROR(expr)                                         \
  do {                                                                   \
    ::footprint::Status FP_STATUS_CONCAT(fp_status_, __LINE__) = (expr); \
    if (!FP_STATUS_CONCAT(fp_status_, __LINE__).ok())                    \
      return FP_STATUS_CONCAT(fp_status_, __LINE__);                     \
  } while (0)

// Declares `lhs` (e.g. `auto x` or `Foo x`) from the value of `rexpr` (a Result<T>), or
// returns its Status from the enclosing function when it failed.
#define FP_ASSIGN_OR_RETURN(lhs, rexpr) \
  FP_ASSIGN_OR_RETURN_IMPL(FP_STATUS_CONCAT(fp_result_, __LINE__), lhs, rexpr)
#define FP_ASSIGN_OR_RETURN_IMPL(result, lhs, rexpr) \
  auto result = (rexpr);                             \
  if (!result.ok()) return result.status();          \
  lhs = std::move(result).value()

#endif  // FOOTPRINT_STATUS_H_
