#include "sim/csv.h"

#include <charconv>
#include <cmath>

namespace gangway::sim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Quote(std::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() > kMax) return std::string("'") + std::string(s.substr(0, kMax)) + "...'";
  return std::string("'") + std::string(s) + "'";
}

}  // namespace

formats::Expected<int64_t> ParseInteger(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty()) return formats::Fail("empty, expected an integer");
  if (t.front() == '+') t.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec == std::errc::result_out_of_range) return formats::Fail(Quote(text) + " is out of range");
  if (ec == std::errc() && end == t.data() + t.size()) return value;
  // Integral values written as decimals, e.g. "8.0".
  formats::Expected<double> number = ParseNumber(text);
  if (number.ok() && *number == std::trunc(*number) && std::fabs(*number) < 9.0e15) {
    return static_cast<int64_t>(*number);
  }
  return formats::Fail(Quote(text) + " is not an integer");
}

formats::Expected<double> ParseNumber(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty()) return formats::Fail("empty, expected a number");
  if (t.front() == '+') t.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value)) {
    return formats::Fail(Quote(text) + " is not a number");
  }
  return value;
}

formats::Diagnostic CsvRow::Error(size_t column, std::string reason) const {
  formats::Diagnostic d{.file = reader_->path(), .line = static_cast<int>(line_), .reason = reason};
  if (column < columns_.size()) d.column = columns_[column];
  if (column < reader_->header_.size()) d.field = reader_->header_[column];
  return d;
}

formats::ParseResult<CsvReader> CsvReader::Open(const std::string& path) {
  formats::Expected<LineReader> lines = LineReader::Open(path);
  if (!lines.ok()) return std::vector<formats::Diagnostic>{{.file = path, .reason = lines.error()}};
  CsvReader reader(std::move(lines).value());
  std::optional<std::string_view> first;
  while ((first = reader.lines_.Next()) && Trim(*first).empty()) {
  }
  if (!first) {
    std::string why = reader.lines_.error().value_or("the file is empty (no header line)");
    return std::vector<formats::Diagnostic>{{.file = path, .reason = why}};
  }
  if (auto bad = reader.Split(*first)) {
    return std::vector<formats::Diagnostic>{{.file = path,
                                             .line = static_cast<int>(reader.lines_.line_number()),
                                             .column = bad->column,
                                             .reason = "header: " + bad->reason}};
  }
  for (std::string_view f : reader.row_.fields_) reader.header_.emplace_back(Trim(f));
  return reader;
}

std::optional<size_t> CsvReader::Column(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return i;
  }
  return std::nullopt;
}

formats::Expected<size_t> CsvReader::RequireColumn(std::string_view name) const {
  if (auto c = Column(name)) return *c;
  std::string have;
  for (const std::string& h : header_) have += (have.empty() ? "" : ", ") + h;
  return formats::Fail(std::string("the header has no column '") + std::string(name) +
                       "' (it has: " + have + ")");
}

std::optional<CsvReader::SplitError> CsvReader::Split(std::string_view line) {
  row_.fields_.clear();
  row_.columns_.clear();
  unquoted_.clear();
  unquoted_.reserve(line.size());  // views into it must not move
  size_t i = 0;
  while (true) {
    const size_t start = i;
    row_.columns_.push_back(static_cast<int>(start + 1));
    // Leading spaces before a quote are allowed.
    size_t q = start;
    while (q < line.size() && line[q] == ' ') ++q;
    if (q < line.size() && line[q] == '"') {
      const size_t begin = unquoted_.size();
      size_t k = q + 1;
      bool closed = false;
      while (k < line.size()) {
        if (line[k] == '"') {
          if (k + 1 < line.size() && line[k + 1] == '"') {
            unquoted_.push_back('"');
            k += 2;
            continue;
          }
          closed = true;
          ++k;
          break;
        }
        unquoted_.push_back(line[k]);
        ++k;
      }
      if (!closed) return SplitError{static_cast<int>(q + 1), "unterminated quoted field"};
      while (k < line.size() && line[k] == ' ') ++k;
      if (k < line.size() && line[k] != ',') {
        return SplitError{static_cast<int>(k + 1), "unexpected text after a quoted field"};
      }
      row_.fields_.emplace_back(unquoted_.data() + begin, unquoted_.size() - begin);
      if (k >= line.size()) break;
      i = k + 1;
      continue;
    }
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      row_.fields_.push_back(line.substr(start));
      break;
    }
    row_.fields_.push_back(line.substr(start, comma - start));
    i = comma + 1;
  }
  return std::nullopt;
}

const CsvRow* CsvReader::NextRow() {
  if (error_) return nullptr;
  row_.reader_ = this;  // the reader may have moved since the last row
  while (std::optional<std::string_view> line = lines_.Next()) {
    if (Trim(*line).empty()) continue;
    row_.line_ = lines_.line_number();
    const int line_no = static_cast<int>(row_.line_);
    if (auto bad = Split(*line)) {
      error_ = formats::Diagnostic{
          .file = path(), .line = line_no, .column = bad->column, .reason = bad->reason};
      skippable_ = true;
      return nullptr;
    }
    if (row_.fields_.size() != header_.size()) {
      const size_t n = row_.fields_.size();
      error_ = formats::Diagnostic{
          .file = path(),
          .line = line_no,
          .column = n > header_.size() ? row_.columns_[header_.size()]
                                       : static_cast<int>(line->size() + 1),
          .reason = std::string("has ") + std::to_string(n) + " fields, the header has " +
                    std::to_string(header_.size())};
      skippable_ = true;
      return nullptr;
    }
    return &row_;
  }
  if (lines_.error()) {
    error_ = formats::Diagnostic{.file = path(),
                                 .line = static_cast<int>(lines_.line_number() + 1),
                                 .reason = *lines_.error()};
    skippable_ = false;
  }
  return nullptr;
}

}  // namespace gangway::sim
