#ifndef GANGWAY_CORE_MODEL_STATUS_H_
#define GANGWAY_CORE_MODEL_STATUS_H_

// Errors as values. A Status carries a code, a message a person can act on, and the plugin
// that produced it; Result<T> (result.h) is a value or a Status.

#include <string>
#include <utility>

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

// Describe for Result: the message.
inline const std::string& Describe(const Status& status) { return status.message(); }

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_STATUS_H_
