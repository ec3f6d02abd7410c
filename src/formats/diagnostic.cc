#include "formats/diagnostic.h"

namespace gangway::formats {

std::string Diagnostic::ToString() const {
  std::string s = file;
  if (line > 0) {
    s += ':' + std::to_string(line);
    if (column > 0) s += ':' + std::to_string(column);
  }
  s += ": ";
  if (!field.empty()) s += field + ": ";
  s += reason;
  return s;
}

std::string FormatDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += d.ToString() + "\n";
  return out;
}

}  // namespace gangway::formats
