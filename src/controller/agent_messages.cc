#include "controller/agent_messages.h"

#include <cstdint>
#include <limits>
#include <string_view>

namespace gangway::controller {
namespace {

using nlohmann::json;
using Result = std::optional<MessageError>;

enum class Kind : uint8_t { kString, kBool, kObject, kArray, kInt, kInt64, kUint64 };

// What a present field of `kind` must be, or nullopt when `v` is one.
std::optional<std::string> Mismatch(const json& v, Kind kind) {
  auto expected = [&](std::string_view what) {
    return std::string("expected ") + std::string(what) + ", got " + v.type_name();
  };
  auto whole = [&](int64_t min, uint64_t max) -> std::optional<std::string> {
    const std::string range =
        "a whole number in " + std::to_string(min) + ".." + std::to_string(max);
    if (v.is_number_unsigned() && v.get<uint64_t>() <= max) return std::nullopt;
    if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= min &&
        (v.get<int64_t>() < 0 || static_cast<uint64_t>(v.get<int64_t>()) <= max)) {
      return std::nullopt;
    }
    if (v.is_number()) return "expected " + range + ", got " + v.dump();
    return expected(range);
  };
  switch (kind) {
    case Kind::kString:
      return v.is_string() ? std::nullopt : std::optional(expected("a string"));
    case Kind::kBool:
      return v.is_boolean() ? std::nullopt : std::optional(expected("true or false"));
    case Kind::kObject:
      return v.is_object() ? std::nullopt : std::optional(expected("an object"));
    case Kind::kArray:
      return v.is_array() ? std::nullopt : std::optional(expected("an array"));
    case Kind::kInt:
      return whole(std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    case Kind::kInt64:
      return whole(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    case Kind::kUint64:
      return whole(0, std::numeric_limits<uint64_t>::max());
  }
  return std::nullopt;
}

struct FieldSpec {
  const char* key;
  Kind kind;
};

// Checks the listed fields of object `obj` (at `path`) that are present.
Result CheckFields(const json& obj, const std::string& path,
                   std::initializer_list<FieldSpec> fields) {
  for (const FieldSpec& f : fields) {
    auto it = obj.find(f.key);
    if (it == obj.end()) continue;
    if (auto why = Mismatch(*it, f.kind)) {
      return MessageError{path.empty() ? f.key : path + "." + f.key, std::move(*why)};
    }
  }
  return std::nullopt;
}

// Each element of array `obj[key]` (if present) must be an object whose fields pass.
Result CheckObjects(const json& obj, const std::string& path, const char* key,
                    std::initializer_list<FieldSpec> fields) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  const std::string at = path.empty() ? key : path + "." + key;
  if (auto why = Mismatch(*it, Kind::kArray)) return MessageError{at, std::move(*why)};
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string element = at + "[" + std::to_string(i) + "]";
    const json& e = (*it)[i];
    if (auto why = Mismatch(e, Kind::kObject)) return MessageError{element, std::move(*why)};
    if (auto bad = CheckFields(e, element, fields)) return bad;
  }
  return std::nullopt;
}

}  // namespace

std::optional<MessageError> CheckRegisterMessage(const json& body) {
  if (!body.is_object()) return MessageError{"", "expected a JSON object"};
  if (auto bad = CheckFields(body, "", {{"node", Kind::kObject}, {"agentId", Kind::kString}})) {
    return bad;
  }
  auto node = body.find("node");
  if (node == body.end()) return std::nullopt;
  if (auto bad = CheckFields(*node, "node",
                             {{"name", Kind::kString},
                              {"address", Kind::kString},
                              {"cpuMilli", Kind::kInt64},
                              {"memoryBytes", Kind::kInt64},
                              {"labels", Kind::kObject}})) {
    return bad;
  }
  if (auto labels = node->find("labels"); labels != node->end()) {
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return MessageError{"node.labels." + key,
                            std::string("expected a string, got ") + value.type_name()};
      }
    }
  }
  return CheckObjects(*node, "node", "gpus",
                      {{"model", Kind::kString},
                       {"memoryBytes", Kind::kInt64},
                       {"index", Kind::kInt},
                       {"uuid", Kind::kString},
                       {"domain", Kind::kInt},
                       {"migEnabled", Kind::kBool},
                       {"healthy", Kind::kBool}});
}

std::optional<MessageError> CheckReportMessage(const json& body) {
  if (!body.is_object()) return MessageError{"", "expected a JSON object"};
  if (auto bad = CheckFields(body, "",
                             {{"agentId", Kind::kString},
                              {"reportSeq", Kind::kUint64},
                              {"controllerEpoch", Kind::kString},
                              {"appliedSeq", Kind::kUint64},
                              {"logs", Kind::kArray}})) {
    return bad;
  }
  if (auto bad = CheckObjects(
          body, "", "gpus",
          {{"index", Kind::kInt}, {"utilization", Kind::kInt}, {"healthy", Kind::kBool}})) {
    return bad;
  }
  if (auto bad = CheckObjects(body, "", "tasks",
                              {{"taskId", Kind::kString},
                               {"state", Kind::kString},
                               {"signal", Kind::kInt},
                               {"message", Kind::kString},
                               {"logBytes", Kind::kInt64},
                               {"lostContact", Kind::kBool}})) {
    return bad;
  }
  // exitCode may be null: a task killed by a signal has none.
  const json& tasks = body.value("tasks", json::array());
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto code = tasks[i].find("exitCode");
    if (code == tasks[i].end() || code->is_null()) continue;
    if (auto why = Mismatch(*code, Kind::kInt)) {
      return MessageError{"tasks[" + std::to_string(i) + "].exitCode", std::move(*why)};
    }
  }
  return std::nullopt;
}

}  // namespace gangway::controller
