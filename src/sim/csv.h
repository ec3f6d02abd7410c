#ifndef GANGWAY_SIM_CSV_H_
#define GANGWAY_SIM_CSV_H_

// A small CSV reader for trace files: comma-separated, first line a header, fields optionally
// quoted with '"' (a doubled quote inside a quoted field is one quote; a quoted field may not
// span lines). Blank lines are skipped. Columns are found by header name.
//
// Errors carry the file, the 1-based line and column of the offending field and the column's
// name, e.g. "trace.csv:17:9: num_gpus: 'x' is not an integer".
//
//   auto csv = CsvReader::Open("jobs.csv.xz");
//   auto gpus = csv->Column("num_gpus");        // nullopt if the header lacks it
//   while (auto row = csv->NextRow()) {         // nullopt at the end or on a structural error
//     formats::Expected<int64_t> n = row->Int(*gpus);
//     if (!n.ok()) errors.push_back(row->Error(*gpus, n.error()));
//   }
//   if (csv->error()) ...                       // I/O error or a row with the wrong field count
//
// Thread safety: none.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/diagnostic.h"
#include "formats/expected.h"
#include "sim/line_reader.h"

namespace gangway::sim {

// Parses a whole decimal integer (optional sign); "12.0" is accepted as 12, "12.5" is not.
formats::Expected<int64_t> ParseInteger(std::string_view text);
// Parses a finite decimal number ("66.0", "-1.5e3").
formats::Expected<double> ParseNumber(std::string_view text);

class CsvReader;

// One data row. Valid until the next call to CsvReader::NextRow().
class CsvRow {
 public:
  size_t size() const { return fields_.size(); }
  std::string_view Field(size_t column) const { return fields_[column]; }
  int64_t line() const { return line_; }

  formats::Expected<int64_t> Int(size_t column) const { return ParseInteger(fields_[column]); }
  formats::Expected<double> Number(size_t column) const { return ParseNumber(fields_[column]); }

  // A diagnostic pointing at `column` of this row, naming the column's header.
  formats::Diagnostic Error(size_t column, std::string reason) const;

 private:
  friend class CsvReader;
  const CsvReader* reader_ = nullptr;
  int64_t line_ = 0;
  std::vector<std::string_view> fields_;
  std::vector<int> columns_;  // 1-based character column where each field starts
};

class CsvReader {
 public:
  // Opens the file and reads its header. Fails if the file cannot be read or is empty.
  static formats::ParseResult<CsvReader> Open(const std::string& path);

  const std::vector<std::string>& header() const { return header_; }
  // Index of the header column called `name` (exact match after trimming spaces).
  std::optional<size_t> Column(std::string_view name) const;
  // Like Column, but a missing column is a diagnostic for the header line.
  formats::Expected<size_t> RequireColumn(std::string_view name) const;
  const std::string& path() const { return lines_.path(); }

  // The next non-blank row, or nullopt at the end of the file or on a structural error (I/O,
  // unterminated quote, field count differing from the header); see error().
  const CsvRow* NextRow();
  const std::optional<formats::Diagnostic>& error() const { return error_; }

  // A structural error of the current row (wrong field count, bad quoting) that the caller
  // chose to skip: NextRow() continues with the following row.
  bool row_skippable() const { return skippable_; }
  void ClearError() {
    error_.reset();
    skippable_ = false;
  }

 private:
  friend class CsvRow;
  explicit CsvReader(LineReader lines) : lines_(std::move(lines)) {}
  struct SplitError {
    int column;  // 1-based character column
    std::string reason;
  };
  // Splits `line` into row_.fields_ and row_.columns_.
  std::optional<SplitError> Split(std::string_view line);

  LineReader lines_;
  std::vector<std::string> header_;
  CsvRow row_;
  std::string unquoted_;  // storage for fields that needed unquoting
  std::optional<formats::Diagnostic> error_;
  bool skippable_ = false;
};

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_CSV_H_
