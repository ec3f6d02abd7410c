#ifndef GANGWAY_FORMATS_TABLE_H_
#define GANGWAY_FORMATS_TABLE_H_

// The project's one text table, for every command that prints columns (`gangway jobs`,
// `nodes`, `top`, `events`, `plan`, `sim`), in the style of kubectl: columns aligned, no
// borders, no trailing spaces. The client commands use an upper-case header and three spaces
// between columns; `plan` and `sim` set two spaces and right-align their numbers.
//
//   ID  NAME      STATE    GPUS  AGE
//   7   llama-ft  running  16    3m
//
// An empty cell prints as nothing; callers write "-" or "<none>" where a reader expects a
// value. Value type; not synchronised.

#include <ostream>
#include <string>
#include <vector>

namespace gangway::formats {

struct TableLayout {
  int indent = 0;                   // spaces before every line
  int gap = 3;                      // spaces between columns
  std::vector<bool> right_aligned;  // per column; columns past its end are left-aligned
};

class Table {
 public:
  explicit Table(std::vector<std::string> header, TableLayout layout = {})
      : header_(std::move(header)), layout_(std::move(layout)) {}

  // A row with fewer cells than the header is padded with empty cells; cells past the header
  // are dropped. Control characters and bytes that are not UTF-8 in a cell print as escapes
  // (\x1b), so that what a user or a task wrote (a command, an exit message) cannot rewrite
  // the terminal of whoever reads it.
  void AddRow(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }

  void Print(std::ostream& out) const;
  std::string ToString() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  TableLayout layout_;
};

// Width of `text` in terminal columns (UTF-8 code points; every one counts as one column).
size_t DisplayWidth(const std::string& text);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_TABLE_H_
