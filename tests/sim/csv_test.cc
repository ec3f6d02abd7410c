#include "sim/csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/line_reader.h"
#include "sim/trace.h"
#include "temp_files.h"

namespace gangway::sim {
namespace {

using testing::TempDir;

std::vector<std::string> AllLines(const std::string& path) {
  auto reader = LineReader::Open(path);
  EXPECT_TRUE(reader.ok()) << (reader.ok() ? "" : reader.error());
  std::vector<std::string> lines;
  if (!reader.ok()) return lines;
  LineReader r = std::move(reader).value();
  while (auto line = r.Next()) lines.emplace_back(*line);
  EXPECT_FALSE(r.error().has_value());
  return lines;
}

TEST(LineReaderTest, ReadsPlainAndXzFilesAlike) {
  TempDir dir;
  const std::string text = "a,b\r\n1,2\n\n3,4";  // CRLF, blank line, no final newline
  const std::vector<std::string> want = {"a,b", "1,2", "", "3,4"};
  EXPECT_EQ(AllLines(dir.Write("t.csv", text)), want);
  EXPECT_EQ(AllLines(dir.Write("t.csv.xz", text)), want);
}

TEST(LineReaderTest, LongXzFileStreamsAcrossChunks) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 200000; ++i) text += std::to_string(i) + "\n";
  std::vector<std::string> lines = AllLines(dir.Write("big.csv.xz", text));
  ASSERT_EQ(lines.size(), 200000U);
  EXPECT_EQ(lines.front(), "0");
  EXPECT_EQ(lines[123456], "123456");
  EXPECT_EQ(lines.back(), "199999");
}

TEST(LineReaderTest, MissingFileAndCorruptXzAreErrors) {
  TempDir dir;
  auto missing = LineReader::Open(dir.path() + "/nope.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("nope.csv: cannot open"), std::string::npos);

  auto corrupt = LineReader::Open(dir.WriteRaw("bad.csv.xz", "this is not xz\n"));
  ASSERT_TRUE(corrupt.ok());
  LineReader r = std::move(corrupt).value();
  EXPECT_FALSE(r.Next().has_value());
  ASSERT_TRUE(r.error().has_value());
  EXPECT_NE(r.error()->find("not an xz file"), std::string::npos);

  // A truncated stream is an error too, after the lines that did decode.
  std::string xz = TempDir::Xz("a,b\n1,2\n");
  auto cut = LineReader::Open(dir.WriteRaw("cut.csv.xz", xz.substr(0, xz.size() - 8)));
  ASSERT_TRUE(cut.ok());
  LineReader c = std::move(cut).value();
  while (c.Next()) {
  }
  EXPECT_TRUE(c.error().has_value());
}

TEST(CsvReaderTest, FindsColumnsByHeaderAndUnquotes) {
  TempDir dir;
  auto csv = CsvReader::Open(dir.Write(
      "q.csv", "id, name ,n\n1,\"Transformer (batch, 128)\",3\n2,\"say \"\"hi\"\"\",4\n"));
  ASSERT_TRUE(csv.ok()) << csv.ErrorText();
  CsvReader& r = csv.value();
  EXPECT_EQ(r.Column("name"), 1U);
  EXPECT_FALSE(r.Column("missing").has_value());
  const CsvRow* row = r.NextRow();
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->Field(1), "Transformer (batch, 128)");
  EXPECT_EQ(*row->Int(2), 3);
  row = r.NextRow();
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->Field(1), "say \"hi\"");
  EXPECT_EQ(r.NextRow(), nullptr);
  EXPECT_FALSE(r.error().has_value());
}

TEST(CsvReaderTest, NumbersParseStrictly) {
  EXPECT_EQ(*ParseInteger("42"), 42);
  EXPECT_EQ(*ParseInteger(" 8.0 "), 8);
  EXPECT_FALSE(ParseInteger("8.5").ok());
  EXPECT_FALSE(ParseInteger("").ok());
  EXPECT_FALSE(ParseInteger("12abc").ok());
  EXPECT_DOUBLE_EQ(*ParseNumber("66.0"), 66.0);
  EXPECT_DOUBLE_EQ(*ParseNumber("-1.5e3"), -1500.0);
  EXPECT_FALSE(ParseNumber("nan").ok());
  EXPECT_FALSE(ParseNumber("1,5").ok());
}

constexpr std::string_view kPhillyWithBadRows =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
    "2017-10-09 06:13:03,2951.0,x,2951.0,6214e9\n"  // line 3: bad num_gpus at column 28
    "2017-10-09 06:13:03,10.0,2,20.0\n"             // line 4: a field short
    "2017-13-01 00:00:00,1.0,1,1.0,6214e9\n"        // line 5: bad month
    "2017-10-10 00:00:00,5.0,4,20.0,6214e9\n";

TEST(TraceReaderTest, BadRowIsAnErrorWithFileLineColumnAndField) {
  TempDir dir;
  const std::string path = dir.Write("philly.csv", kPhillyWithBadRows);
  auto trace = ReadTrace(path, {});
  ASSERT_FALSE(trace.ok());
  const std::vector<formats::Diagnostic>& errors = trace.error();
  ASSERT_EQ(errors.size(), 3U);
  EXPECT_EQ(errors[0].file, path);
  EXPECT_EQ(errors[0].line, 3);
  EXPECT_EQ(errors[0].column, 28);
  EXPECT_EQ(errors[0].field, "num_gpus");
  EXPECT_EQ(errors[0].ToString(), path + ":3:28: num_gpus: 'x' is not an integer");
  EXPECT_EQ(errors[1].line, 4);
  EXPECT_NE(errors[1].reason.find("has 4 fields, the header has 5"), std::string::npos);
  EXPECT_EQ(errors[2].line, 5);
  EXPECT_EQ(errors[2].column, 1);
  EXPECT_EQ(errors[2].field, "timestamp");
}

TEST(TraceReaderTest, SkipBadRowsCountsThemAndKeepsTheRest) {
  TempDir dir;
  auto trace = ReadTrace(dir.Write("philly.csv.xz", kPhillyWithBadRows), {.skip_bad_rows = true});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  EXPECT_EQ(trace->format, TraceFormat::kPhilly);
  EXPECT_EQ(trace->skipped_rows, 3);
  ASSERT_EQ(trace->skipped.size(), 3U);
  EXPECT_EQ(trace->skipped[0].line, 3);
  ASSERT_EQ(trace->jobs.size(), 2U);
  EXPECT_EQ(trace->jobs[0].submit, 1507532515);  // 2017-10-09T07:01:55Z
  EXPECT_EQ(trace->jobs[0].duration, 66);
  EXPECT_EQ(trace->jobs[0].queue, "11cb48");
  EXPECT_EQ(trace->jobs[1].id, 2U);
  EXPECT_EQ(trace->jobs[1].gpus, 4);
}

TEST(TraceReaderTest, MappedColumnsWithUnitsFractionsAndEndTimes) {
  TempDir dir;
  const std::string path = dir.Write("generic.csv",
                                     "start,stop,g,share,team,who,prio\n"
                                     "0,30,1,0.25,a,ann,5\n"
                                     "10,20,4,1,b,bob,0\n");
  auto mapping = ParseColumnMapping(
      "submit=start,end=stop,gpus=g,fraction=share,queue=team,user=who,priority=prio,unit=min");
  ASSERT_TRUE(mapping.ok()) << mapping.error();
  auto trace = ReadTrace(path, {.format = TraceFormat::kMapped, .mapping = *mapping});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  ASSERT_EQ(trace->jobs.size(), 2U);
  EXPECT_EQ(trace->jobs[0].duration, 1800);
  EXPECT_EQ(trace->jobs[0].gpu_milli, 250);
  EXPECT_EQ(trace->jobs[0].priority, 5);
  EXPECT_EQ(trace->jobs[0].user, "ann");
  EXPECT_EQ(trace->jobs[1].submit, 600);
  EXPECT_EQ(trace->jobs[1].duration, 600);
  EXPECT_EQ(trace->jobs[1].TotalGpuMilli(), 4000);
}

TEST(TraceReaderTest, MappingErrorsNameTheProblem) {
  EXPECT_FALSE(ParseColumnMapping("submit=a,gpus=b").ok());  // no duration
  auto unknown = ParseColumnMapping("submit=a,gpus=b,duration=c,colour=d");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown column mapping key 'colour'"), std::string::npos);

  TempDir dir;
  const std::string path = dir.Write("generic.csv", "start,run,g\n0,1,1\n");
  auto trace =
      ReadTrace(path, {.format = TraceFormat::kMapped,
                       .mapping = *ParseColumnMapping("submit=start,duration=runtime,gpus=g")});
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.ErrorText().find("duration=runtime: the header has no column 'runtime'"),
            std::string::npos);
  // An unknown header without a mapping says how to give one.
  auto unmapped = ReadTrace(path, {});
  ASSERT_FALSE(unmapped.ok());
  EXPECT_NE(unmapped.ErrorText().find("--columns"), std::string::npos);
}

TEST(TraceReaderTest, MappedSubmitTakesDatesDatetimesAndNumbers) {
  TempDir dir;
  const std::string path = dir.Write("dates.csv",
                                     "when,secs,n\n"
                                     "2017-09-04,60,1\n"
                                     "2017-09-04 00:01:00,60,1\n"
                                     "1504483320,60,1\n");
  auto trace =
      ReadTrace(path, {.format = TraceFormat::kMapped,
                       .mapping = *ParseColumnMapping("submit=when,duration=secs,gpus=n")});
  ASSERT_TRUE(trace.ok()) << trace.ErrorText();
  ASSERT_EQ(trace->jobs.size(), 3U);
  EXPECT_EQ(trace->jobs[0].submit, 1504483200);
  EXPECT_EQ(trace->jobs[1].submit, 1504483260);
  EXPECT_EQ(trace->jobs[2].submit, 1504483320);
}

TEST(TraceReaderTest, DateTimes) {
  EXPECT_EQ(*ParseDateTime("1970-01-01 00:00:00"), 0);
  EXPECT_EQ(*ParseDateTime("2017-09-04T00:00:00Z"), 1504483200);
  EXPECT_EQ(*ParseDateTime("2000-03-01"), 951868800);
  EXPECT_FALSE(ParseDateTime("2017-02-30x").ok());
  EXPECT_FALSE(ParseDateTime("17-09-04").ok());
}

}  // namespace
}  // namespace gangway::sim
