#ifndef GANGWAY_CLIENT_TABLE_H_
#define GANGWAY_CLIENT_TABLE_H_

// Plain text tables in the style of kubectl: an upper-case header, left-aligned columns
// separated by at least three spaces, no borders, no trailing spaces.
//
//   ID  NAME      STATE    GPUS  AGE
//   7   llama-ft  running  16    3m
//
// An empty cell prints as nothing; callers write "-" or "<none>" where a reader expects a
// value.

#include <ostream>
#include <string>
#include <vector>

namespace gangway::client {

class Table {
 public:
  explicit Table(std::vector<std::string> header, int indent = 0)
      : header_(std::move(header)), indent_(indent) {}

  // A row with fewer cells than the header is padded with empty cells. Control characters
  // and bytes that are not UTF-8 in a cell print as escapes (\x1b), so that what a user or a
  // task wrote (a command, an exit message) cannot rewrite the terminal of whoever reads it.
  void AddRow(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }

  void Print(std::ostream& out) const;
  std::string ToString() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  int indent_ = 0;
};

// Width of `text` in terminal columns (UTF-8 code points; every one counts as one column).
size_t DisplayWidth(const std::string& text);

}  // namespace gangway::client

#endif  // GANGWAY_CLIENT_TABLE_H_
