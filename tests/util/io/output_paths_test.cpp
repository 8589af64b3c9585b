// io::absolute_normal, path_within, folder_holds and folder_inside: where an export folder that
// --force replaces as a whole would land, against what a run reads and writes.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "util/io/output_file.h"

namespace ftbench::io {
namespace {

namespace fs = std::filesystem;

TEST(OutputPaths, AbsoluteNormalDropsDotsAndTheTrailingSeparator) {
  const std::string cwd = fs::current_path().string();
  EXPECT_EQ(absolute_normal(".").string(), cwd);
  EXPECT_EQ(absolute_normal("./a/../b/").string(), cwd + "/b");
  EXPECT_EQ(absolute_normal("/x/y/..").string(), "/x");
  EXPECT_EQ(absolute_normal("/").string(), "/");
}

TEST(OutputPaths, PathWithinIsByWholeNames) {
  EXPECT_TRUE(path_within("/a/b/c", "/a/b"));
  EXPECT_TRUE(path_within("/a/b", "/a/b"));
  EXPECT_TRUE(path_within("/a/b", "/"));
  EXPECT_FALSE(path_within("/a/bc", "/a/b"));
  EXPECT_FALSE(path_within("/a", "/a/b"));
}

// Links: a folder reached through a link lands where the link leads (a review's $PWD through a
// linked folder lost the whole folder); a link at the export's own name is replaced, not
// followed, so it holds nothing.
TEST(OutputPaths, FoldersAreComparedWhereLinksLead) {
  const fs::path root = fs::temp_directory_path() / ("ftbench-paths-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "real" / "w" / "data");
  std::ofstream(root / "real" / "w" / "spec.yaml") << "model: {}\n";
  fs::create_directory_symlink(root / "real", root / "lnk");
  fs::create_directory_symlink(root / "real" / "w" / "data", root / "dl");
  const fs::path spec = root / "real" / "w" / "spec.yaml";

  EXPECT_TRUE(folder_holds(root / "lnk" / "w", spec));
  EXPECT_TRUE(folder_holds(root / "lnk" / "w", root / "real" / "w"));  // the folder it runs in
  EXPECT_FALSE(folder_holds(root / "lnk", spec));  // the link is replaced, not followed
  EXPECT_FALSE(folder_holds(root / "dl", root / "real" / "w" / "data"));
  EXPECT_FALSE(folder_holds(root / "lnk" / "x", spec));
  // The other way: an export inside a folder the run uses.
  EXPECT_TRUE(folder_inside(root / "lnk" / "w" / "data" / "out", root / "real" / "w" / "data"));
  EXPECT_FALSE(folder_inside(root / "lnk" / "x", root / "real" / "w"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace ftbench::io
