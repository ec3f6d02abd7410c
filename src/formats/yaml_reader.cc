#include "formats/yaml_reader.h"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <charconv>

#include "formats/text.h"
#include "formats/units.h"

namespace gangway::formats {
namespace {

// Positions in yaml-cpp are 0-based and -1 when unknown.
bool Known(const YAML::Mark& m) { return m.line >= 0; }

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Reads a scalar and hands it to a units parser.
template <typename T, typename Parse>
std::optional<T> ReadWith(Context& ctx, const Field& field, Parse parse) {
  auto text = ReadScalar(ctx, field);
  if (!text) return std::nullopt;
  Expected<T> value = parse(*text);
  if (!value.ok()) {
    ctx.Error(field, value.error());
    return std::nullopt;
  }
  return std::move(value).value();
}

}  // namespace

std::string ChildPath(std::string_view path, std::string_view key) {
  // Keys come from the input: a 10 KB key or one with control characters must not make every
  // message that names the field unreadable (or rewrite a terminal).
  const std::string shown = Quote(key);
  if (path.empty()) return shown;
  std::string out(path);
  out += '.';
  out += shown;
  return out;
}

std::string IndexPath(std::string_view path, size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

void Context::Error(const YAML::Mark& mark, std::string_view path, std::string reason) {
  ++count_;
  if (errors_.size() >= kMaxDiagnostics) {
    truncated_ = true;
    return;
  }
  Diagnostic d;
  d.file = file_;
  if (Known(mark)) {
    d.line = mark.line + 1;
    d.column = mark.column + 1;
  }
  d.field = std::string(path);
  d.reason = std::move(reason);
  errors_.push_back(std::move(d));
}

void Context::NoteInvalidUtf8(const YAML::Mark& mark, unsigned char byte) {
  if (!invalid_utf8_) invalid_utf8_.emplace(mark, byte);
}

std::vector<Diagnostic> Context::TakeErrors() {
  if (invalid_utf8_ && !utf8_reported_) {
    static constexpr char kHex[] = "0123456789abcdef";
    const unsigned b = invalid_utf8_->second;
    Error(invalid_utf8_->first, "",
          std::string("byte 0x") + kHex[b >> 4U] + kHex[b & 0xfU] +
              " is not UTF-8; the text must be UTF-8");
    utf8_reported_ = true;
  }
  std::stable_sort(errors_.begin(), errors_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  if (truncated_) {
    errors_.push_back(
        {.file = file_,
         .reason = "too many errors; stopped after " + std::to_string(kMaxDiagnostics)});
  }
  return std::move(errors_);
}

namespace {

// Whether `node`, with every alias written out, has at most `budget` values (spending it) and
// is at most kMaxDepth deep. Aliases let a few KB denote a tree of billions of values ("billion
// laughs"), and an alias may even name its own ancestor: every reader walks the tree written
// out, so it must be small enough to walk.
bool Walkable(const YAML::Node& node, size_t& budget, int depth) {
  constexpr int kMaxDepth = 256;
  if (budget == 0 || depth > kMaxDepth) return false;
  --budget;
  if (node.IsMap()) {
    for (const auto& kv : node) {
      if (!Walkable(kv.first, budget, depth + 1) || !Walkable(kv.second, budget, depth + 1)) {
        return false;
      }
    }
  } else if (node.IsSequence()) {
    for (const auto& element : node) {
      if (!Walkable(element, budget, depth + 1)) return false;
    }
  }
  return true;
}

// How many documents `text` holds: a line that starts with "---" (a document marker, only ever
// at column 0) after one with content begins another. YAML::LoadAll, which would say, loops
// without end on some malformed input (found by the fuzzers).
int CountDocuments(std::string_view text) {
  int docs = 0;            // documents with content so far
  bool separated = false;  // a marker (--- or ...) came after the last one's content
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const bool marker = (line.starts_with("---") || line.starts_with("...")) &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    if (marker) {
      separated = docs > 0;
      if (line.starts_with("...")) continue;
      line.remove_prefix(3);  // "--- {a: 1}" has content of its own
    }
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#' || (!marker && line[0] == '%')) {
      continue;
    }
    if (docs == 0 || separated) ++docs;
    separated = false;
  }
  return docs;
}

}  // namespace

std::optional<Field> LoadDocument(Context& ctx, std::string_view text) {
  if (auto bad = FirstInvalidUtf8(text)) {
    const TextPosition at = PositionOf(text, *bad);
    YAML::Mark mark;
    mark.pos = static_cast<int>(*bad);
    mark.line = at.line - 1;
    mark.column = at.column - 1;
    ctx.NoteInvalidUtf8(mark, static_cast<unsigned char>(text[*bad]));
  }
  try {
    if (const int docs = CountDocuments(text); docs > 1) {
      ctx.Error(YAML::Mark::null_mark(), "",
                "the text holds " + std::to_string(docs) +
                    " YAML documents (separated by ---); give one");
      return std::nullopt;
    }
    YAML::Node doc = YAML::Load(std::string(text));
    // Room for anchors reused as defaults (<<: *defaults in every job), not for a bomb.
    const size_t limit = 10000 + 4 * text.size();
    size_t budget = limit;
    if (!Walkable(doc, budget, 0)) {
      ctx.Error(YAML::Mark::null_mark(), "",
                "the document is nested too deep, or its aliases (*name) expand to more than " +
                    std::to_string(limit) + " values; write the repeated parts out");
      return std::nullopt;
    }
    return Field{.node = doc, .mark = YAML::Mark(), .path = ""};
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for this is "bad file".
    ctx.Error(e.mark, "",
              "invalid YAML: nested more than " + std::to_string(e.depth()) + " levels deep");
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    std::string hint;
    if (Known(e.mark)) {
      // Tabs in indentation are the most common cause of a puzzling syntax error.
      size_t line_start = 0;
      for (int line = 0; line < e.mark.line && line_start != std::string_view::npos; ++line) {
        line_start = text.find('\n', line_start);
        if (line_start != std::string_view::npos) ++line_start;
      }
      if (line_start != std::string_view::npos) {
        std::string_view line = text.substr(line_start);
        line = line.substr(0, line.find_first_not_of(" \t"));
        if (line.find('\t') != std::string_view::npos) {
          hint = " (the line is indented with a tab; YAML allows only spaces)";
        }
      }
    }
    ctx.Error(e.mark, "", "invalid YAML: " + e.msg + hint);
    return std::nullopt;
  }
}

std::string_view DescribeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a value";
    default:
      return "nothing";
  }
}

std::optional<std::string> Suggest(std::string_view word, const std::vector<std::string>& known) {
  const std::string lowered = Lower(word);
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& k : known) {
    if (Lower(k) == lowered) return k;
  }
  for (const std::string& k : known) {
    // A truncated name ("H100" for "H100-80GB") is as likely as a typo.
    if (lowered.size() >= 3 && Lower(k).starts_with(lowered)) return k;
    size_t d = EditDistance(lowered, Lower(k));
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& known) {
  auto s = Suggest(word, known);
  return s ? " (did you mean " + *s + "?)" : "";
}

MapReader::MapReader(Context& ctx, const Field& field) : ctx_(ctx), field_(field) {
  if (!field.node.IsMap()) {
    ctx_.Error(field_,
               "expected a mapping of fields, found " + std::string(DescribeKind(field.node)));
    return;
  }
  is_map_ = true;
  Collect(field.node, true, 0);
}

void MapReader::Collect(const YAML::Node& node, bool own, int depth) {
  std::vector<YAML::Node> merges;
  // Copies, not references: yaml-cpp's iterators hand out temporaries.
  for (const auto& kv : node) {
    const YAML::Node key = kv.first;
    if (!key.IsScalar()) {
      if (own) ctx_.Error(key.Mark(), field_.path, "a key must be a plain name");
      continue;
    }
    if (key.Scalar() == "<<" && key.Tag() != "!") {
      const YAML::Node value = kv.second;
      if (value.IsMap()) {
        merges.push_back(value);
      } else if (value.IsSequence()) {
        for (const YAML::Node& m : value) merges.push_back(m);
      } else if (own) {
        ctx_.Error(key.Mark(), field_.path, "a merge key (<<) takes a mapping or a list of them");
      }
      continue;
    }
    if (Entry* existing = Find(key.Scalar())) {
      if (own && existing->own) {
        ctx_.Error(key.Mark(), ChildPath(field_.path, key.Scalar()),
                   "duplicate key; it is already set on line " +
                       std::to_string(existing->key_mark.line + 1));
      }
      continue;  // explicit keys win over merged ones; the first merge wins over later ones
    }
    entries_.push_back(
        {.key = key.Scalar(), .key_mark = key.Mark(), .value = kv.second, .own = own});
  }
  for (const YAML::Node& m : merges) {
    if (!m.IsMap()) {
      if (own) ctx_.Error(m.Mark(), field_.path, "a merge key (<<) takes a mapping or a list");
      continue;
    }
    if (depth < 8) Collect(m, false, depth + 1);
  }
}

MapReader::Entry* MapReader::Find(std::string_view key) {
  for (Entry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::optional<Field> MapReader::Take(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  Entry* e = Find(key);
  if (e == nullptr) return std::nullopt;
  e->used = true;
  YAML::Mark mark = e->value.Mark();
  if (!Known(mark) || e->value.IsNull()) mark = e->key_mark;
  return Field{.node = e->value, .mark = mark, .path = ChildPath(field_.path, key)};
}

bool MapReader::Has(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  return Find(key) != nullptr;
}

YAML::Mark MapReader::KeyMark(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return e.key_mark;
  }
  return field_.mark;
}

void MapReader::Finish() {
  for (const Entry& e : entries_) {
    if (e.used || !e.own) continue;
    if (std::find(known_.begin(), known_.end(), e.key) != known_.end()) continue;
    ctx_.Error(e.key_mark, ChildPath(field_.path, e.key),
               "unknown field" + DidYouMean(e.key, known_));
  }
}

std::vector<Field> ReadList(Context& ctx, const Field& field) {
  std::vector<Field> out;
  if (!field.node.IsSequence()) {
    ctx.Error(field, "expected a list, found " + std::string(DescribeKind(field.node)));
    return out;
  }
  size_t i = 0;
  for (const YAML::Node& element : field.node) {
    YAML::Mark mark = element.Mark();
    if (!Known(mark)) mark = field.mark;
    out.push_back({.node = element, .mark = mark, .path = IndexPath(field.path, i++)});
  }
  return out;
}

std::optional<std::string> ReadScalar(Context& ctx, const Field& field) {
  if (!field.node.IsScalar()) {
    if (field.node.IsNull()) {
      ctx.Error(field, "missing value");
    } else {
      ctx.Error(field, "expected a value, found " + std::string(DescribeKind(field.node)));
    }
    return std::nullopt;
  }
  if (auto bad = FirstInvalidUtf8(field.node.Scalar())) {
    ctx.Error(field, "the value is not UTF-8 (byte " + std::to_string(*bad + 1) + " of '" +
                         Quote(field.node.Scalar()) + "')");
    ctx.ReportedInvalidUtf8();
    return std::nullopt;
  }
  return field.node.Scalar();
}

std::optional<std::string> ReadName(Context& ctx, const Field& field) {
  auto text = ReadScalar(ctx, field);
  if (!text) return std::nullopt;
  auto ok_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  };
  bool ok = !text->empty() && text->size() <= 128 && ok_char(text->front()) &&
            text->front() != '.' && text->front() != '_' && text->front() != '-' &&
            std::all_of(text->begin(), text->end(), ok_char);
  if (!ok) {
    ctx.Error(field, "'" + Quote(*text) +
                         "' is not a valid name (letters, digits, '.', '_' and '-', starting "
                         "with a letter or digit, at most 128 characters)");
    return std::nullopt;
  }
  return text;
}

std::optional<int64_t> ReadInt(Context& ctx, const Field& field, int64_t min, int64_t max) {
  auto text = ReadScalar(ctx, field);
  if (!text) return std::nullopt;
  int64_t v = 0;
  const char* begin = text->data();
  const char* end = begin + text->size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || begin == end) {
    ctx.Error(field, "'" + Quote(*text) + "' is not a whole number");
    return std::nullopt;
  }
  if (v < min || v > max) {
    std::string range =
        v < min ? "at least " + std::to_string(min) : "at most " + std::to_string(max);
    ctx.Error(field, std::to_string(v) + " is out of range; it must be " + range);
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ReadBool(Context& ctx, const Field& field) {
  auto text = ReadScalar(ctx, field);
  if (!text) return std::nullopt;
  static constexpr std::string_view kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "on"};
  static constexpr std::string_view kFalse[] = {"false", "False", "FALSE", "no", "No", "off"};
  for (std::string_view t : kTrue) {
    if (*text == t) return true;
  }
  for (std::string_view f : kFalse) {
    if (*text == f) return false;
  }
  ctx.Error(field, "'" + Quote(*text) + "' is not true or false");
  return std::nullopt;
}

std::optional<double> ReadPositiveNumber(Context& ctx, const Field& field) {
  auto text = ReadScalar(ctx, field);
  if (!text) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || ptr != text->data() + text->size()) {
    ctx.Error(field, "'" + Quote(*text) + "' is not a number");
    return std::nullopt;
  }
  if (!(v > 0) || v > 1e9) {
    ctx.Error(field, "'" + Quote(*text) + "' must be greater than 0 (and at most 1e9)");
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> ReadBytes(Context& ctx, const Field& field) {
  return ReadWith<int64_t>(ctx, field, [](std::string_view t) { return ParseBytes(t); });
}

std::optional<int64_t> ReadCpuMilli(Context& ctx, const Field& field) {
  return ReadWith<int64_t>(ctx, field, [](std::string_view t) { return ParseCpuMilli(t); });
}

std::optional<core::Duration> ReadDuration(Context& ctx, const Field& field) {
  return ReadWith<core::Duration>(ctx, field, [](std::string_view t) { return ParseDuration(t); });
}

std::optional<core::Instant> ReadTime(Context& ctx, const Field& field, core::Instant now) {
  return ReadWith<core::Instant>(ctx, field,
                                 [now](std::string_view t) { return ParseTime(t, now); });
}

std::optional<std::vector<std::string>> ReadStringList(Context& ctx, const Field& field) {
  if (field.node.IsScalar()) return std::vector<std::string>{field.node.Scalar()};
  if (!field.node.IsSequence()) {
    ctx.Error(field,
              "expected a name or a list of names, found " + std::string(DescribeKind(field.node)));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (const Field& element : ReadList(ctx, field)) {
    auto s = ReadScalar(ctx, element);
    if (s) {
      out.push_back(*s);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, std::string>> ReadStringMap(Context& ctx, const Field& field) {
  if (!field.node.IsMap()) {
    ctx.Error(field, "expected a mapping such as {zone: a}, found " +
                         std::string(DescribeKind(field.node)));
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (const auto& kv : field.node) {
    const YAML::Node key_node = kv.first;
    if (!key_node.IsScalar()) {
      ctx.Error(key_node.Mark(), field.path, "a key must be a plain name");
      ok = false;
      continue;
    }
    const std::string key = key_node.Scalar();
    Field value{.node = kv.second, .mark = kv.second.Mark(), .path = ChildPath(field.path, key)};
    if (!Known(value.mark) || value.node.IsNull()) value.mark = key_node.Mark();
    auto s = ReadScalar(ctx, value);
    if (!s) {
      ok = false;
      continue;
    }
    if (!out.emplace(key, *s).second) {
      ctx.Error(key_node.Mark(), value.path, "duplicate key");
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<core::ResourceList> ReadExtras(Context& ctx, const Field& field) {
  auto raw = ReadStringMap(ctx, field);
  if (!raw) return std::nullopt;
  core::ResourceList out;
  bool ok = true;
  for (const auto& [name, value] : *raw) {
    Field f{.node = field.node[name],
            .mark = field.node[name].Mark(),
            .path = ChildPath(field.path, name)};
    if (name == "gpu" || name == "cpu" || name == "memory" || name.starts_with("gpu/")) {
      ctx.Error(f, "'" + name + "' is not an extra resource; it has a field of its own");
      ok = false;
      continue;
    }
    auto amount = ReadInt(ctx, f, 0, int64_t{1} << 40);
    if (!amount) {
      ok = false;
      continue;
    }
    out.Set(name, *amount);
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace gangway::formats
