#ifndef GANGWAY_FORMATS_DIAGNOSTIC_H_
#define GANGWAY_FORMATS_DIAGNOSTIC_H_

// Errors in an input file, with enough position for a person (and an editor) to find them:
//
//   examples/jobs.yaml:14:12: jobs[2].tasks[0].gpu: '1.5' GPUs is neither whole nor ...
//
// A parser reports every problem it finds (up to kMaxDiagnostics), not only the first, so
// that one edit-run cycle fixes a whole file.

#include <string>
#include <vector>

#include "core/model/result.h"

namespace gangway::formats {

inline constexpr size_t kMaxDiagnostics = 50;

struct Diagnostic {
  std::string file;
  int line = 0;       // 1-based; 0 when unknown
  int column = 0;     // 1-based; 0 when unknown
  std::string field;  // e.g. "jobs[2].tasks[0].gpu"; empty for the file as a whole
  std::string reason;

  // "file:line:col: field: reason", leaving out what is unknown.
  std::string ToString() const;
};

// One line per diagnostic.
std::string FormatDiagnostics(const std::vector<Diagnostic>& diagnostics);

// Describe for core::Result: FormatDiagnostics.
inline std::string Describe(const std::vector<Diagnostic>& diagnostics) {
  return FormatDiagnostics(diagnostics);
}

// A parsed file, or the problems that kept it from parsing (error(): every diagnostic;
// ErrorText(): one line each).
template <typename T>
using ParseResult = core::Result<T, std::vector<Diagnostic>>;

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_DIAGNOSTIC_H_
