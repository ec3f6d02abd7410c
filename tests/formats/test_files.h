#ifndef GANGWAY_TESTS_SPEC_TEST_FILES_H_
#define GANGWAY_TESTS_SPEC_TEST_FILES_H_

// Helpers for the file-format tests: reading the bundled examples, and matching diagnostics.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/diagnostic.h"

namespace gangway::formats::testing {

// The text of a file in the source tree, e.g. "examples/jobs.yaml".
inline std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(GANGWAY_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << "cannot open " << relative;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What one malformed input must report: "file:line:col: field: ..." containing `reason`.
struct ExpectedError {
  std::string position;  // "jobs.yaml:3:10"
  std::string field;     // "jobs[0].gpu"
  std::string reason;    // a fragment of the reason
};

inline ::testing::AssertionResult HasError(const std::vector<Diagnostic>& errors,
                                           const ExpectedError& want) {
  std::string all;
  for (const Diagnostic& d : errors) {
    std::string text = d.ToString();
    all += "\n  " + text;
    if (text.rfind(want.position + ": ", 0) == 0 && d.field == want.field &&
        d.reason.find(want.reason) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no diagnostic at " << want.position << " for field '" << want.field << "' containing '"
         << want.reason << "'; got:" << all;
}

}  // namespace gangway::formats::testing

#endif  // GANGWAY_TESTS_SPEC_TEST_FILES_H_
