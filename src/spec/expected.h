#ifndef GANGWAY_SPEC_EXPECTED_H_
#define GANGWAY_SPEC_EXPECTED_H_

// A value, or the reason a single value could not be parsed ("1.5 GPUs is neither whole nor
// a fraction below 1"). The reason is a phrase without position; the YAML readers add the
// file, line, column and field path.

#include <string>
#include <utility>
#include <variant>

namespace gangway::spec {

// The failure alternative of Expected; a distinct type so that Expected<std::string> works.
struct Unexpected {
  std::string reason;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}           // NOLINT(google-explicit-constructor)
  Expected(Unexpected error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<Unexpected>(v_).reason; }

 private:
  std::variant<T, Unexpected> v_;
};

inline Unexpected Fail(std::string reason) { return Unexpected{std::move(reason)}; }

}  // namespace gangway::spec

#endif  // GANGWAY_SPEC_EXPECTED_H_
