#ifndef GANGWAY_CORE_SCHED_STATUS_H_
#define GANGWAY_CORE_SCHED_STATUS_H_

// Errors as values. A Status carries a code, a message a person can act on, and the plugin
// that produced it; Result<T> is a value or a Status.

#include <string>
#include <utility>
#include <variant>

namespace gangway::core {

enum class StatusCode : uint8_t {
  kOk,
  kInvalidArgument,  // the caller's input is wrong (bad profile, unknown policy name)
  kNotFound,
  kInternal,  // a broken invariant
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::string plugin = {})
      : code_(code), message_(std::move(message)), plugin_(std::move(plugin)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& plugin() const { return plugin_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string plugin_;
};

inline Status InvalidArgument(std::string message, std::string plugin = {}) {
  return {StatusCode::kInvalidArgument, std::move(message), std::move(plugin)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const { return std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_STATUS_H_
