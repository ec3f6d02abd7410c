#include "formats/table.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "formats/text.h"

namespace gangway::formats {

size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;  // count lead bytes, not continuation bytes
  }
  return width;
}

void Table::AddRow(std::vector<std::string> row) {
  for (std::string& cell : row) {
    if (std::any_of(cell.begin(), cell.end(), [](char c) {
          const auto b = static_cast<unsigned char>(c);
          return b < 0x20 || b >= 0x7f;
        })) {
      cell = Quote(cell, SIZE_MAX);
    }
  }
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out) const {
  const size_t columns = header_.size();
  std::vector<size_t> width(columns, 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < columns && i < row.size(); ++i) {
      width[i] = std::max(width[i], DisplayWidth(row[i]));
    }
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);

  const auto gap = static_cast<size_t>(layout_.gap);
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line(static_cast<size_t>(layout_.indent), ' ');
    for (size_t i = 0; i < columns; ++i) {
      const std::string cell = i < row.size() ? row[i] : std::string();
      const size_t pad = width[i] - DisplayWidth(cell);
      const bool right = i < layout_.right_aligned.size() && layout_.right_aligned[i];
      if (right) line.append(pad, ' ');
      line += cell;
      if (i + 1 < columns) line.append((right ? 0 : pad) + gap, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  print_row(header_);
  for (const auto& row : rows_) print_row(row);
}

std::string Table::ToString() const {
  std::ostringstream s;
  Print(s);
  return s.str();
}

}  // namespace gangway::formats
