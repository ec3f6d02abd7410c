#ifndef GANGWAY_PROTOCOL_JSON_READER_H_
#define GANGWAY_PROTOCOL_JSON_READER_H_

// Reading the protocol's JSON messages into typed ones: every field read has the JSON type it
// is read as, and a number read into an integer is a whole number that fits, or the read fails
// with the field's path and the reason:
//
//   tasks[0].state: expected a string, got number
//   appliedSeq: expected a whole number in 0..18446744073709551615, got -1
//
// So reading a message cannot throw half-way through a change of state, nor convert a number
// that does not fit (undefined behaviour for a double). Fields the reader is not asked about
// are ignored: a newer peer may send more. What the fields mean (a GPU index in range, a known
// task) the receiver checks.
//
// Reader is a value over one JSON object; not synchronised. It keeps the first failure only.

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/model/result.h"

namespace gangway::protocol {

// What is wrong with a message, and where: `field` is a path such as "tasks[0].state", empty
// for the message as a whole.
struct FieldError {
  std::string field;
  std::string reason;
};

// Describe for core::Result: "field: reason", or the reason alone.
std::string Describe(const FieldError& error);

// A message read, or the first field that kept it from being read.
template <typename T>
using Parsed = core::Result<T, FieldError>;

// "null", "boolean", "number", "string", "array" or "object".
const char* TypeName(const nlohmann::json& v);

class Reader {
 public:
  // `object` must outlive the reader. `whole` names the message in errors about it as a whole
  // ("the command: expected an object, got array") when `path` is empty.
  Reader(const nlohmann::json& object, std::string path, std::string whole = "")
      : object_(object), path_(std::move(path)), whole_(std::move(whole)) {}

  bool ok() const { return error_.field.empty() && error_.reason.empty(); }
  const FieldError& error() const { return error_; }
  std::string ErrorText() const { return Describe(error_); }
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // The field, or nullptr when it is absent or null (an error when `required`). Fails when the
  // object read is not an object.
  const nlohmann::json* Find(const std::string& key, bool required = false);

  void String(const std::string& key, std::string& out, bool required = false);
  void Bool(const std::string& key, bool& out);
  template <typename Int>
  void Integer(const std::string& key, Int& out, bool required = false) {
    if (const nlohmann::json* v = Find(key, required)) out = IntegerOf<Int>(*v, Path(key));
  }
  // An array field: `each(element, path)` for every element; nullptr-safe when absent.
  template <typename F>
  void Array(const std::string& key, F each) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) {
      Fail(Path(key), std::string("expected an array, got ") + TypeName(*v));
      return;
    }
    for (size_t i = 0; i < v->size() && ok(); ++i) {
      each((*v)[i], Path(key) + "[" + std::to_string(i) + "]");
    }
  }

  template <typename Int>
  Int IntegerOf(const nlohmann::json& v, const std::string& path) {
    constexpr auto kMin = std::numeric_limits<Int>::min();
    constexpr auto kMax = std::numeric_limits<Int>::max();
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(kMax)) return static_cast<Int>(u);
    } else if (v.is_number_integer()) {
      const auto i = v.get<int64_t>();
      if (i >= static_cast<int64_t>(kMin) &&
          (i < 0 || static_cast<uint64_t>(i) <= static_cast<uint64_t>(kMax))) {
        return static_cast<Int>(i);
      }
    } else if (!v.is_number()) {
      Fail(path, std::string("expected an integer, got ") + TypeName(v));
      return Int{};
    }
    Fail(path, "expected a whole number in " + std::to_string(kMin) + ".." + std::to_string(kMax) +
                   ", got " + v.dump());
    return Int{};
  }

  void Fail(const std::string& path, const std::string& reason) {
    if (ok()) error_ = {path, reason};
  }

 private:
  const nlohmann::json& object_;
  std::string path_;
  std::string whole_;
  FieldError error_;
};

}  // namespace gangway::protocol

#endif  // GANGWAY_PROTOCOL_JSON_READER_H_
