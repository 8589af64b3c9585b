// What an output may replace (util/io/output_rules.h): never an input of the same invocation, never
// an ftbench file of another kind, whatever --force says (issue 39, item 3).
#include "util/io/output_rules.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace ftbench::io {
namespace {

namespace fs = std::filesystem;

class OutputRules : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string put(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::string refusal(const std::string& what, const std::string& path, const std::string& kind,
                      const std::vector<NamedPath>& inputs) const {
    try {
      check_output_rules(what, path, kind, inputs);
    } catch (const OutputRefused& e) {
      EXPECT_EQ(e.exit_code(), ExitCode::kBadInput);
      return e.what();
    }
    return "";
  }

  const fs::path dir_ =
      fs::temp_directory_path() / ("ftbench-output-rules-" + std::to_string(::getpid()));
};

TEST_F(OutputRules, KindsAreReadFromTheFirstBytes) {
  EXPECT_EQ(ftbench_file_kind(put("r.json", "{\n  \"schema\": \"ftbench.report/1.16\",\n}")),
            "report");
  EXPECT_EQ(ftbench_file_kind(put("g.json", "{\"schema\":\"ftbench.gemm/1\"}")), "gemm result");
  EXPECT_EQ(ftbench_file_kind(put("s.json", "{\"schema\": \"ftbench.segments/1\"}")),
            "segment journal");
  EXPECT_EQ(ftbench_file_kind(put("m.log", ":::MLLOG {\"namespace\": \"\"}\n")), "event log");
  EXPECT_EQ(ftbench_file_kind(put("spec.yaml", "model: {preset: tiny}\n")), "");
  EXPECT_EQ(ftbench_file_kind(put("other.json", "{\"schema\": \"other/1\"}")), "");
  EXPECT_EQ(ftbench_file_kind((dir_ / "missing").string()), "");
  EXPECT_EQ(ftbench_file_kind(dir_.string()), "");
  // A FIFO is not opened for reading (that would wait for a writer): not ftbench's.
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ftbench_file_kind(fifo), "");
}

TEST_F(OutputRules, AnInputIsNeverAnOutput) {
  const std::string spec = put("spec.yaml", "model: {preset: tiny}\n");
  const std::vector<NamedPath> inputs = {{"the spec file", spec}, {"data.path", ""}};
  EXPECT_EQ(refusal("-o", spec, "report", inputs),
            "-o \"" + spec + "\" is the spec file (\"" + spec +
                "\"), which this command reads: an output is never one of its inputs, even with "
                "--force; give the output another path");
  // The same file by another name: a relative path, a link to it, a hard link.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_NE(refusal("-o", "./x/../spec.yaml", "report", inputs), "");
  fs::current_path(cwd);
  fs::create_symlink(spec, dir_ / "link.yaml");
  EXPECT_NE(refusal("--mllog", (dir_ / "link.yaml").string(), "event log", inputs), "");
  fs::create_hard_link(spec, dir_ / "hard.yaml");
  EXPECT_NE(refusal("-o", (dir_ / "hard.yaml").string(), "report", inputs), "");
  EXPECT_EQ(refusal("-o", (dir_ / "new.json").string(), "report", inputs), "");
  EXPECT_EQ(refusal("-o", "", "report", inputs), "");
}

TEST_F(OutputRules, AnFtbenchFileOfAnotherKindIsNeverReplaced) {
  const std::string report = put("r.json", "{\"schema\": \"ftbench.report/1.16\"}");
  EXPECT_EQ(refusal("gemm -o", report, "gemm result", {}),
            "gemm -o \"" + report +
                "\" is an ftbench report, not a gemm result: an output replaces only a file of "
                "its own kind, even with --force; give it another path");
  EXPECT_NE(refusal("--mllog", report, "event log", {}), "");
  EXPECT_EQ(refusal("-o", report, "report", {}), "");  // its own kind: --force decides
  const std::string log = put("m.log", ":::MLLOG {}\n");
  EXPECT_EQ(refusal("--mllog", log, "event log", {}), "");
  EXPECT_NE(refusal("-o", log, "report", {}), "");
  // A file that is none of ftbench's: --force decides (io::check_writable).
  EXPECT_EQ(refusal("-o", put("notes.txt", "hello"), "report", {}), "");
}

}  // namespace
}  // namespace ftbench::io
