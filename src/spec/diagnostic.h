#ifndef GANGWAY_SPEC_DIAGNOSTIC_H_
#define GANGWAY_SPEC_DIAGNOSTIC_H_

// Errors in an input file, with enough position for a person (and an editor) to find them:
//
//   examples/jobs.yaml:14:12: jobs[2].tasks[0].gpu: '1.5' GPUs is neither whole nor ...
//
// A parser reports every problem it finds (up to kMaxDiagnostics), not only the first, so
// that one edit-run cycle fixes a whole file.

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gangway::spec {

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

// A parsed file, or the problems that kept it from parsing.
template <typename T>
class [[nodiscard]] ParseResult {
 public:
  ParseResult(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  ParseResult(std::vector<Diagnostic> errors)     // NOLINT(google-explicit-constructor)
      : v_(std::move(errors)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T* operator->() const { return &value(); }
  const std::vector<Diagnostic>& errors() const { return std::get<std::vector<Diagnostic>>(v_); }
  std::string ErrorText() const { return FormatDiagnostics(errors()); }

 private:
  std::variant<T, std::vector<Diagnostic>> v_;
};

}  // namespace gangway::spec

#endif  // GANGWAY_SPEC_DIAGNOSTIC_H_
