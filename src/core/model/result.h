#ifndef GANGWAY_CORE_MODEL_RESULT_H_
#define GANGWAY_CORE_MODEL_RESULT_H_

// The project's one result type: a value, or the error that kept it from being made.
//
// Each layer names its own error payload, because each layer's callers need different things
// from a failure, and the template is the same for all of them:
//
//   core::Result<T>         = Result<T, Status>                    a plugin's or profile's error
//   formats::Expected<T>    = Result<T, std::string>              one value's reason, no position
//   formats::ParseResult<T> = Result<T, std::vector<Diagnostic>>  every problem in a file, with
//                                                                 file:line:col and field path
//   client::ApiResult<T>    = Result<T, client::ApiError>         what the controller answered
//   controller::Outcome<T>  = Result<T, controller::ApiError>     what the controller will answer
//
// A failure is made with Fail(error) (always) or, where the error type cannot be mistaken for
// the value type, by returning the error itself. ErrorText() renders the error for a person
// through a Describe(const E&) found by argument-dependent lookup next to E.
//
// It lives in the core, the innermost layer, so that every layer can use it (the core may
// include nothing outside itself). Value semantics; not synchronised.

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/model/status.h"

namespace gangway::core {

// A failure on its way into a Result; distinct from E so that Result<std::string, std::string>
// knows which alternative it holds.
template <typename E>
struct Failure {
  E error;
};

template <typename E>
Failure<std::decay_t<E>> Fail(E&& error) {
  return Failure<std::decay_t<E>>{std::forward<E>(error)};
}

inline const std::string& Describe(const std::string& reason) { return reason; }

template <typename T, typename E = Status>
class [[nodiscard]] Result {
 public:
  using value_type = T;
  using error_type = E;

  Result(T value)
      : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Failure<E> failure)                             // NOLINT(google-explicit-constructor)
      : v_(std::in_place_index<1>, std::move(failure.error)) {}
  Result(E error)  // NOLINT(google-explicit-constructor)
      requires(!std::is_convertible_v<const E&, T> && !std::is_convertible_v<const T&, E>)
      : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const E& error() const& { return std::get<1>(v_); }
  E&& error() && { return std::get<1>(std::move(v_)); }

  // The error for a person; needs Describe(const E&) beside E.
  std::string ErrorText() const {
    using core::Describe;
    return std::string(Describe(error()));
  }

 private:
  std::variant<T, E> v_;
};

}  // namespace gangway::core

#endif  // GANGWAY_CORE_MODEL_RESULT_H_
