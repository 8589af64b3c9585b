// A run re-created from its report (run/rerun.h): the spec as the report holds it, relative
// paths from the recorded working directory, and the recorded files' digests and the spec
// fingerprint held to the report's.
#include "run/rerun.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "report/records.h"
#include "report/report.h"
#include "spec/canonical.h"
#include "spec/spec_loader.h"

namespace ftbench::run {
namespace {

namespace fs = std::filesystem;

struct Folder {
  fs::path path =
      fs::temp_directory_path() /
      ("ftbench-rerun-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Folder() {
    fs::remove_all(path);
    fs::create_directories(path / "data");
  }
  ~Folder() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
  }
};

// The report of a run started in `folder` on its data/train.jsonl, as the run records it.
report::Report report_in(const Folder& folder) {
  folder.write("data/train.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"}\n");
  const spec::RunSpec s = spec::load_spec_from_string(
      "model: {preset: tiny}\ndata: {source: file, path: data/train.jsonl}\n", "spec.yaml");
  report::Report r;
  r.schema = "ftbench.report/1.11";
  r.spec = spec::to_json(s);
  r.spec_fingerprint = spec::fingerprint(s);
  r.working_directory = folder.path.string();
  r.data = report::DataInfo{};
  spec::RunSpec read = s;
  read.data.path = (folder.path / "data/train.jsonl").string();
  for (const report::FileRead& f : input_files(read)) {
    r.data->files.push_back(report::input_file_record(f));  // as the run records them
  }
  return r;
}

TEST(Rerun, RelativePathsAreTakenFromTheFolderTheRunStartedIn) {
  const Folder folder;
  const report::Report r = report_in(folder);
  const spec::RunSpec s = spec_from_report(r, "r.json");
  EXPECT_EQ(s.data.path, (folder.path / "data/train.jsonl").string());
  EXPECT_EQ(s.output.report, "reports/{name}.json");  // written where the re-run runs
  EXPECT_EQ(s.data.tokenizer, "byte");                // a choice, not a path
  EXPECT_EQ(spec::fingerprint(s), r.spec_fingerprint);
}

TEST(Rerun, AFileThatChangedIsRefusedNamingItsKeyAndDigests) {
  const Folder folder;
  const report::Report r = report_in(folder);
  folder.write("data/train.jsonl", "{\"text\": \"a\"}\n{\"text\": \"c\"}\n");  // same size
  try {
    spec_from_report(r, "r.json");
    ADD_FAILURE() << "a changed data file was accepted";
  } catch (const RerunError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("r.json: data.path " + (folder.path / "data/train.jsonl").string() +
                          ": not the file the report's run read (28 bytes, SHA-256 ",
                      0),
              0u)
        << m;
    EXPECT_NE(m.find("the run read 28 bytes, SHA-256 " + r.data->files[0].sha256.substr(0, 16)),
              std::string::npos)
        << m;
  }
  fs::remove(folder.path / "data/train.jsonl");
  EXPECT_THROW(spec_from_report(r, "r.json"), RerunError);
}

TEST(Rerun, AReportWithoutItsWorkingDirectoryOrOfAnotherJobIsRefused) {
  const Folder folder;
  report::Report r = report_in(folder);
  r.working_directory.clear();
  r.schema = "ftbench.report/1.10";
  try {
    spec_from_report(r, "old.json");
    ADD_FAILURE();
  } catch (const RerunError& e) {
    EXPECT_NE(std::string(e.what()).find("old.json: the report does not record the folder its run "
                                         "started in (schema ftbench.report/1.10;"),
              std::string::npos)
        << e.what();
  }
  r = report_in(folder);
  r.spec_fingerprint = "0123456789abcdef";
  EXPECT_THROW(spec_from_report(r, "r.json"), RerunError);
}

// What the first run wrote through absolute and "../" paths is not the re-run's to write: each
// output goes into the current folder by its last name (issue 39, item 3; it used to be written
// where the report's spec pointed, over the first run's files with --force).
TEST(Rerun, OutputsGoIntoTheCurrentFolder) {
  const Folder folder;
  report::Report r = report_in(folder);
  r.spec["output"]["report"] = (folder.path / "reports/first.json").string();
  r.spec["output"]["mllog"] = "../logs/{name}.log";
  r.spec["output"]["adapter"] = (folder.path / "adapter").string() + "/";
  r.spec["output"]["merged"] = "out/merged";
  r.spec["train"]["checkpoint"]["dir"] = "../../ck";
  const spec::RunSpec s = spec_from_report(r, "r.json");
  EXPECT_EQ(s.output.report, "first.json");
  EXPECT_EQ(s.output.mllog, "{name}.log");
  EXPECT_EQ(s.output.adapter, "adapter");
  EXPECT_EQ(s.output.merged, "out/merged");  // relative, inside the current folder: as it was
  EXPECT_EQ(s.train.checkpoint.dir, "ck");
  EXPECT_EQ(spec::fingerprint(s), r.spec_fingerprint);
}

// Run from the folder the first run ran in, an output would land on the first run's: refused,
// naming the key, while that output exists (the report too, unless -o names another).
TEST(Rerun, AnOutputWhereTheFirstRunWroteIsRefused) {
  const Folder folder;
  report::Report r = report_in(folder);
  r.spec["train"]["checkpoint"]["dir"] = "ck/{name}";
  r.spec["output"]["name"] = "job";
  r.spec["output"]["report"] = "first.json";
  nlohmann::ordered_json as_loaded = r.spec;
  as_loaded.erase("source_path");
  r.spec_fingerprint = spec::fingerprint(spec::load_spec_from_string(as_loaded.dump(), "s"));
  const fs::path cwd = fs::current_path();
  fs::current_path(folder.path);
  EXPECT_NO_THROW(spec_from_report(r, "r.json"));  // nothing of the first run's in the way
  fs::create_directories(folder.path / "ck/job/step-00000002");
  std::string message;
  try {
    spec_from_report(r, "r.json");
  } catch (const RerunError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "r.json: its train.checkpoint.dir ck/{name} is where the first run wrote (" +
                         (folder.path / "ck/job").string() +
                         "); a re-run writes relative to the current folder and never over the "
                         "first run's: run it from another folder");
  fs::remove_all(folder.path / "ck");
  folder.write("first.json", "{}");
  EXPECT_THROW(spec_from_report(r, "r.json"), RerunError);
  EXPECT_NO_THROW(spec_from_report(r, "r.json", true));  // -o names the re-run's report
  fs::current_path(cwd);
}

TEST(Rerun, ATokenizerFolderRecordsItsTokenizerJsonAndConfig) {
  const Folder folder;
  fs::create_directories(folder.path / "tok");
  folder.write("tok/tokenizer.json", "{}");
  folder.write("tok/tokenizer_config.json", "{\"a\": 1}");
  spec::RunSpec s;
  s.data.tokenizer = (folder.path / "tok").string();
  const std::vector<report::FileRead> files = input_files(s);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].key, "data.tokenizer");
  EXPECT_EQ(files[0].path, (folder.path / "tok/tokenizer.json").string());
  EXPECT_EQ(files[0].bytes, 2);
  // sha256("{}")
  EXPECT_EQ(files[0].sha256, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  EXPECT_EQ(files[1].path, (folder.path / "tok/tokenizer_config.json").string());
  EXPECT_EQ(files[1].bytes, 8);
}

TEST(Rerun, ASpecThatWouldReadOtherFilesIsRefused) {
  const Folder folder;
  report::Report r = report_in(folder);
  // A hand-edited working directory holding a data file of its own.
  const fs::path other = folder.path / "other";
  fs::create_directories(other / "data");
  folder.write("other/data/train.jsonl", "{\"text\": \"z\"}\n");
  r.working_directory = other.string();
  try {
    spec_from_report(r, "r.json");
    ADD_FAILURE() << "a spec reading another data file was accepted";
  } catch (const RerunError& e) {
    EXPECT_NE(std::string(e.what()).find("r.json: data.path reads " +
                                         (other / "data/train.jsonl").string() +
                                         " here, but the report's run read " +
                                         (folder.path / "data/train.jsonl").string()),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ftbench::run
