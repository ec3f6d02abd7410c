// formats::Table, the one text table of every command (client commands, plan, sim).

#include "formats/table.h"

#include <gtest/gtest.h>

namespace gangway::formats {
namespace {

TEST(TableTest, AlignsColumnsWithThreeSpacesAndNoTrailingBlanks) {
  Table t({"ID", "NAME", "STATE"});
  t.AddRow({"7", "llama-ft", "running"});
  t.AddRow({"12", "x", ""});
  EXPECT_EQ(t.ToString(),
            "ID   NAME       STATE\n"
            "7    llama-ft   running\n"
            "12   x\n");
}

TEST(TableTest, PadsShortRowsAndIndents) {
  Table t({"A", "B", "C"}, {.indent = 2});
  t.AddRow({"1"});
  EXPECT_EQ(t.ToString(), "  A   B   C\n  1\n");
}

TEST(TableTest, MeasuresUtf8ByCodePoint) {
  Table t({"NAME", "X"});
  t.AddRow({"\xc3\xa9t\xc3\xa9", "1"});  // "été": 3 columns, 5 bytes
  EXPECT_EQ(t.ToString(), "NAME   X\n\xc3\xa9t\xc3\xa9    1\n");
}

// A job's command or a task's exit message must not rewrite the terminal of whoever runs
// `gangway describe`: escapes are shown, not sent.
TEST(TableTest, ShowsControlCharactersAsEscapes) {
  Table t({"NAME", "MESSAGE"});
  t.AddRow({"x", "a\x1b[2Jb\nc\xff"});
  t.AddRow({"\xc3\xa9t\xc3\xa9", "ok"});
  EXPECT_EQ(t.ToString(), "NAME   MESSAGE\nx      a\\x1b[2Jb\\nc\\xff\n\xc3\xa9t\xc3\xa9    ok\n");
}

// `plan` and `sim` put two spaces between columns and right-align their numbers; a
// right-aligned last column leaves no trailing blanks either.
TEST(TableTest, RightAlignsChosenColumnsWithTheGapAsked) {
  Table t({"POLICY", "JOBS", "JCT"}, {.gap = 2, .right_aligned = {false, true, true}});
  t.AddRow({"fifo", "12", "1.5h"});
  t.AddRow({"las", "7", "30s"});
  EXPECT_EQ(t.ToString(),
            "POLICY  JOBS   JCT\n"
            "fifo      12  1.5h\n"
            "las        7   30s\n");
}

TEST(TableTest, DropsCellsPastTheHeaderAndKnowsWhenEmpty) {
  Table t({"A", "B"});
  EXPECT_TRUE(t.empty());
  t.AddRow({"1", "2", "3"});
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.ToString(), "A   B\n1   2\n");
}

}  // namespace
}  // namespace gangway::formats
