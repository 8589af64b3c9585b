#include "util/io/remove_tree.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace {

namespace fs = std::filesystem;
using ftbench::io::remove_tree;

class RemoveTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ftbench-remove-tree-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    remove_tree(dir_, ec);
  }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path dir_;
};

TEST_F(RemoveTree, RemovesAFolderWithEverythingUnderItAndCountsTheEntries) {
  const fs::path root = dir_ / "ck" / "step-00000002";
  write(root / "state.safetensors", "x");
  write(root / "checkpoint.json", "{}");
  write(root / "sub" / "deeper" / "file", "y");
  fs::create_directories(root / "empty");
  // root, 2 files, sub, deeper, file, empty: 7 entries.
  std::error_code ec;
  EXPECT_EQ(remove_tree(root, ec), 7u);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::is_directory(dir_ / "ck"));  // the parent stays
}

TEST_F(RemoveTree, RemovesLinksButNeverWhatTheyPointTo) {
  write(dir_ / "outside" / "keep", "precious");
  const fs::path root = dir_ / "tree";
  fs::create_directories(root);
  fs::create_directory_symlink(dir_ / "outside", root / "to-folder");
  fs::create_symlink(dir_ / "outside" / "keep", root / "to-file");
  fs::create_symlink(dir_ / "nowhere", root / "dangling");
  EXPECT_EQ(remove_tree(root), 4u);
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(dir_ / "outside" / "keep"));
  // A link given as the path is removed itself.
  fs::create_directory_symlink(dir_ / "outside", dir_ / "link");
  EXPECT_EQ(remove_tree(dir_ / "link"), 1u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_ / "link")));
  EXPECT_TRUE(fs::exists(dir_ / "outside" / "keep"));
}

TEST_F(RemoveTree, AFileIsOneEntryAndNothingIsZeroWithoutAnError) {
  write(dir_ / "f", "z");
  std::error_code ec;
  EXPECT_EQ(remove_tree(dir_ / "f", ec), 1u);
  EXPECT_FALSE(fs::exists(dir_ / "f"));
  EXPECT_EQ(remove_tree(dir_ / "f", ec), 0u);
  EXPECT_FALSE(ec);
  EXPECT_EQ(remove_tree(dir_ / "never" / "there"), 0u);
}

TEST_F(RemoveTree, WhatCannotBeRemovedIsAnErrorNamingThePath) {
  write(dir_ / "file", "z");
  // A path through a file: lstat answers ENOTDIR.
  std::error_code ec;
  EXPECT_EQ(remove_tree(dir_ / "file" / "below", ec), static_cast<std::uintmax_t>(-1));
  EXPECT_EQ(ec, std::error_code(ENOTDIR, std::generic_category()));
  try {
    remove_tree(dir_ / "file" / "below");
    FAIL() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::error_code(ENOTDIR, std::generic_category()));
    EXPECT_NE(std::string(e.what()).find((dir_ / "file" / "below").string()), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(dir_ / "file"));
}

}  // namespace
