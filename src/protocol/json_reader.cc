#include "protocol/json_reader.h"

namespace gangway::protocol {

using nlohmann::json;

std::string Describe(const FieldError& error) {
  return error.field.empty() ? error.reason : error.field + ": " + error.reason;
}

const char* TypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

const json* Reader::Find(const std::string& key, bool required) {
  if (!object_.is_object()) {
    Fail(path_.empty() ? whole_ : path_,
         std::string("expected an object, got ") + TypeName(object_));
    return nullptr;
  }
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) {
    if (required) Fail(Path(key), "missing");
    return nullptr;
  }
  return &*it;
}

void Reader::String(const std::string& key, std::string& out, bool required) {
  if (const json* v = Find(key, required)) {
    if (v->is_string()) {
      out = v->get<std::string>();
    } else {
      Fail(Path(key), std::string("expected a string, got ") + TypeName(*v));
    }
  }
}

void Reader::Bool(const std::string& key, bool& out) {
  if (const json* v = Find(key)) {
    if (v->is_boolean()) {
      out = v->get<bool>();
    } else {
      Fail(Path(key), std::string("expected true or false, got ") + TypeName(*v));
    }
  }
}

}  // namespace gangway::protocol
