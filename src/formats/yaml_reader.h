#ifndef GANGWAY_FORMATS_YAML_READER_H_
#define GANGWAY_FORMATS_YAML_READER_H_

// Checked reading of YAML documents, shared by the cluster, job and policy file parsers.
//
// Every value travels as a Field (node, position, path such as "jobs[2].tasks[0].gpu"). The
// Read* functions check a field's type and syntax; on failure they record a diagnostic in the
// Context and return nullopt, so a parser keeps going and reports every problem of a file.
// MapReader remembers which keys a parser asked for: Finish() reports the keys nobody asked
// for as unknown, with the closest known key as a suggestion ("did you mean timeLimit?").
//
// yaml-cpp throws on malformed documents and on bad conversions; LoadDocument turns syntax
// errors into diagnostics, and nothing here calls a throwing conversion. YAML merge keys
// ("<<: *defaults") are resolved by MapReader, since yaml-cpp 0.7 leaves them as plain keys.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/quantity.h"
#include "core/model/resource_list.h"
#include "formats/diagnostic.h"
#include "formats/expected.h"

namespace gangway::formats {

struct Field {
  YAML::Node node;
  YAML::Mark mark;  // the value's position, or its key's when the value has none
  std::string path;
};

std::string ChildPath(std::string_view path, std::string_view key);
std::string IndexPath(std::string_view path, size_t index);

// Collects the diagnostics of one file. Not thread-safe; one per parse.
class Context {
 public:
  explicit Context(std::string file) : file_(std::move(file)) {}

  void Error(const YAML::Mark& mark, std::string_view path, std::string reason);
  void Error(const Field& field, std::string reason) {
    Error(field.mark, field.path, std::move(reason));
  }
  bool failed() const { return count_ > 0 || invalid_utf8_.has_value(); }
  // Errors reported so far, including any beyond kMaxDiagnostics that were not kept.
  size_t count() const { return count_; }
  // The diagnostics sorted by position.
  std::vector<Diagnostic> TakeErrors();
  const std::string& file() const { return file_; }
  // Text that is not UTF-8: LoadDocument notes where the first such byte is, and a reader that
  // finds one in a value reports it under that value's field. TakeErrors reports the noted
  // byte (in a comment, say, or a key) unless a field already did.
  void NoteInvalidUtf8(const YAML::Mark& mark, unsigned char byte);
  void ReportedInvalidUtf8() { utf8_reported_ = true; }

 private:
  std::string file_;
  std::optional<std::pair<YAML::Mark, unsigned char>> invalid_utf8_;
  bool utf8_reported_ = false;
  std::vector<Diagnostic> errors_;
  bool truncated_ = false;
  size_t count_ = 0;
};

// Parses `text`; a syntax error becomes a diagnostic and nullopt. An empty document is a
// null node. Text holding several documents ("---" between them) is an error, not its first
// document; bytes that are not UTF-8 are noted (see Context::NoteInvalidUtf8).
std::optional<Field> LoadDocument(Context& ctx, std::string_view text);

// "a mapping", "a list", "a value", "nothing": what a node is, for type errors.
std::string_view DescribeKind(const YAML::Node& node);

// The closest of `known` to `word` (same letters ignoring case, '-' and '_', or a few edits
// away), for "did you mean" hints.
std::optional<std::string> Suggest(std::string_view word, const std::vector<std::string>& known);
// " (did you mean X?)" or "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& known);

class MapReader {
 public:
  // Reports an error unless `field` is a mapping; a reader over anything else is empty.
  MapReader(Context& ctx, const Field& field);

  // The value under `key`, or nullopt if absent. Either way `key` becomes a known key.
  std::optional<Field> Take(std::string_view key);
  // Whether `key` is present; `key` becomes a known key.
  bool Has(std::string_view key);
  // The position of `key` if present, else of the mapping.
  YAML::Mark KeyMark(std::string_view key) const;
  const Field& field() const { return field_; }
  bool is_map() const { return is_map_; }

  // Reports every key that was never asked for. Call once, after all Take/Has calls.
  void Finish();

 private:
  struct Entry {
    std::string key;
    YAML::Mark key_mark;
    YAML::Node value;
    bool own = true;  // false when it came from a merge key
    bool used = false;
  };
  void Collect(const YAML::Node& node, bool own, int depth);
  Entry* Find(std::string_view key);

  Context& ctx_;
  Field field_;
  bool is_map_ = false;
  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

// Elements of a sequence with their paths; reports an error and returns none otherwise.
std::vector<Field> ReadList(Context& ctx, const Field& field);

// The scalar text; reports an error for lists, mappings, nulls and text that is not UTF-8.
std::optional<std::string> ReadScalar(Context& ctx, const Field& field);
// A name of a job, node, queue or pool: letters, digits, '.', '_', '-', starting with a letter
// or digit, at most 128 characters.
std::optional<std::string> ReadName(Context& ctx, const Field& field);
std::optional<int64_t> ReadInt(Context& ctx, const Field& field, int64_t min, int64_t max);
std::optional<bool> ReadBool(Context& ctx, const Field& field);
// A decimal number > 0 (weights and other scores, never accounting).
std::optional<double> ReadPositiveNumber(Context& ctx, const Field& field);
std::optional<int64_t> ReadBytes(Context& ctx, const Field& field);
std::optional<int64_t> ReadCpuMilli(Context& ctx, const Field& field);
std::optional<core::Duration> ReadDuration(Context& ctx, const Field& field);
std::optional<core::Instant> ReadTime(Context& ctx, const Field& field, core::Instant now);
// A single string or a list of strings.
std::optional<std::vector<std::string>> ReadStringList(Context& ctx, const Field& field);
// A mapping of scalars, e.g. node labels.
std::optional<std::map<std::string, std::string>> ReadStringMap(Context& ctx, const Field& field);
// A mapping of named extra resources to non-negative integers, e.g. {rdma: 1}.
std::optional<core::ResourceList> ReadExtras(Context& ctx, const Field& field);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_YAML_READER_H_
