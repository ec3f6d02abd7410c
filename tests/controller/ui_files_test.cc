// The dashboard's files: those compiled in are complete (every module a page file imports is
// there), and a development folder (--ui-dir) serves nothing outside itself.

#include "controller/ui_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "testing/temp_dir.h"

namespace gangway::controller {
namespace {

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(UiFiles, EveryModuleThePageImportsIsBuiltIn) {
  const UiFiles files;
  auto index = files.Find("");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->type, "text/html; charset=utf-8");
  // index.html's scripts and styles, then every relative import of every module, transitively
  // (static imports and dynamic import('./...') calls).
  std::set<std::string> wanted, seen;
  const std::regex ref(R"re((?:src|href)="([^":]+)")re");
  for (std::sregex_iterator it(index->body.begin(), index->body.end(), ref), end; it != end; ++it) {
    wanted.insert((*it)[1]);
  }
  const std::regex import(R"re((?:from\s*|import\(\s*)'\./([^']+)')re");
  while (!wanted.empty()) {
    const std::string path = *wanted.begin();
    wanted.erase(wanted.begin());
    if (!seen.insert(path).second) continue;
    auto file = files.Find(path);
    ASSERT_TRUE(file) << path << " is asked for but not built in";
    EXPECT_FALSE(file->body.empty()) << path;
    if (path.ends_with(".js") && !path.starts_with("vendor/")) {
      for (std::sregex_iterator it(file->body.begin(), file->body.end(), import), end; it != end;
           ++it) {
        wanted.insert((*it)[1]);
      }
    }
  }
  EXPECT_TRUE(seen.contains("vendor/preact-htm.js"));
  EXPECT_TRUE(seen.contains("app.js"));
  EXPECT_TRUE(seen.contains("vendor/uPlot.js")) << "history.js's dynamic import";
  EXPECT_FALSE(files.Find("../CMakeLists.txt"));
}

TEST(UiFiles, AFolderServesItsFilesAndTheVendorListOnly) {
  ::gangway::testing::TempDir dir;
  const std::filesystem::path web = dir.path() / "web";
  Write(web / "ui" / "index.html", "<html>");
  Write(web / "ui" / "app.js", "export {};");
  Write(web / "vendor.txt", "# comment\nvendor/lib.js pkg/dist/lib.mjs\n");
  Write(web / "node_modules" / "pkg" / "dist" / "lib.mjs", "export const x = 1;");
  Write(web / "node_modules" / "pkg" / "other.js", "secret");
  Write(web / "secret.txt", "secret");
  const UiFiles files(web / "ui");
  ASSERT_TRUE(files.Find(""));
  EXPECT_EQ(files.Find("")->body, "<html>");
  EXPECT_EQ(files.Find("app.js")->body, "export {};");
  EXPECT_EQ(files.Find("app.js")->type, "text/javascript; charset=utf-8");
  ASSERT_TRUE(files.Find("vendor/lib.js"));
  EXPECT_EQ(files.Find("vendor/lib.js")->body, "export const x = 1;");
  for (const char* bad :
       {"../secret.txt", "./app.js", "a/../app.js", "/etc/passwd", "vendor/../../secret.txt",
        "vendor/other.js", "app.js%00", "ui//app.js", "../node_modules/pkg/other.js"}) {
    EXPECT_FALSE(files.Find(bad)) << bad;
  }
  // An edit shows at the next request: nothing is cached.
  Write(web / "ui" / "app.js", "export const y = 2;");
  EXPECT_EQ(files.Find("app.js")->body, "export const y = 2;");
}

TEST(UiFiles, AFolderWithoutThePageIsRefusedNamingTheFlag) {
  ::gangway::testing::TempDir dir;
  try {
    UiFiles files(dir.path());
    FAIL() << "no index.html, yet accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--ui-dir"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gangway::controller
