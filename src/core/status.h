// Status and Result<T>: the one error style of weft outside the preload library.
//
// A Status is ok or carries a code and a one-line message that says what went wrong and
// where ("trace.txt:12: unknown op 'CAL_SENT'"). Result<T> holds a T or a non-ok Status.
// Both are [[nodiscard]]: an error is handled or passed up, never dropped.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace weft {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from the user: a flag, a config key, a text line
  kNotFound,         // a file, node or key that does not exist
  kCorruption,       // a binary file that fails validation
  kIoError,          // the operating system refused a read or write
  kOutOfRange,       // a value that does not fit (a signal too large for memory, ...)
  kUnimplemented,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  template <typename... Args>
  static Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Corruption(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kCorruption, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status IoError(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kIoError, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status OutOfRange(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kOutOfRange, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Internal(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // The same error with `context` put in front: "reading x.weft: <message>".
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return Status(code_, fmt::format("{}: {}", context, message_));
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Holds a value or the error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(data_).ok() && "Result from an ok Status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace weft

#define WEFT_CONCAT_INNER_(a, b) a##b
#define WEFT_CONCAT_(a, b) WEFT_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define WEFT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::weft::Status weft_status_ = (expr);        \
    if (!weft_status_.ok()) return weft_status_; \
  } while (0)

// `WEFT_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its error.
#define WEFT_ASSIGN_OR_RETURN(lhs, expr) \
  WEFT_ASSIGN_OR_RETURN_IMPL_(WEFT_CONCAT_(weft_result_, __LINE__), lhs, expr)
#define WEFT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
