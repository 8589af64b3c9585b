// End to end: `ftbench validate` reads a data file as the run would (torch-free `ftbench`).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"

namespace {

namespace fs = std::filesystem;

using Result = ftbench::e2e::Outcome;

class ValidateData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ftbench-validate-e2e-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream data(dir_ / "alpaca.jsonl");
    for (int i = 0; i < 9; ++i) {
      data << nlohmann::json({{"instruction", "Count to " + std::to_string(i)},
                              {"input", ""},
                              {"output", std::string(static_cast<size_t>(i + 1), 'x')}})
                  .dump()
           << "\n";
    }
    data << "{\"instruction\": 7}\n";  // line 10: a bad record
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result ftbench(const std::string& args) const { return ftbench::e2e::run_ftbench(args, dir_); }

  std::string file_args() const {
    return "validate configs/ci-tiny.yaml --set data.source=file --set data.path='" +
           (dir_ / "alpaca.jsonl").string() +
           "' --set data.seq_len=512 --set data.max_tokens=512 --set train.micro_batch_size=2 "
           "--set train.grad_accum_steps=1";
  }

  fs::path dir_;
};

TEST_F(ValidateData, ReadsTheFileForRealStepCounts) {
  const Result r = ftbench(file_args() + " --set data.on_error=skip --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["data"]["records"], 10);
  EXPECT_EQ(j["data"]["examples"], 9);
  EXPECT_EQ(j["data"]["skipped_bad"], 1);
  EXPECT_EQ(j["data"]["tokenizer"], "byte");
  // 9 examples, micro-batch 2: 4 micro-batches (the last partial one dropped), 4 steps.
  EXPECT_EQ(j["derived"]["micro_batches_per_epoch"], 4);
  EXPECT_EQ(j["derived"]["steps_per_epoch"], 4);
}

TEST_F(ValidateData, BadDataOrTokenizerIsExitCodeTwo) {
  const Result bad = ftbench(file_args());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find((dir_ / "alpaca.jsonl").string() + ":10"), std::string::npos) << bad.err;
  const Result no_tokenizer = ftbench(file_args() + " --set data.tokenizer=/nonexistent/tok.json");
  EXPECT_EQ(no_tokenizer.exit_code, 2);
  EXPECT_NE(no_tokenizer.err.find("/nonexistent/tok.json: no such file or folder"),
            std::string::npos)
      << no_tokenizer.err;
  const Result skipped = ftbench(file_args() + " --no-data");
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_NE(skipped.out.find("not read (--no-data)"), std::string::npos) << skipped.out;
}

// One meaning of "total parameters" in the text and the JSON: base + trainable, with base and
// trainable named (Llama 3.1 8B with r16 adapters on q, v and o; docs/methodology.md).
TEST_F(ValidateData, ParameterCountsAreBaseTrainableAndTheirTotal) {
  const Result text = ftbench("validate configs/llama3.1-8b-lora-synthetic.yaml");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* line : {"\nbase parameters               8,030,261,248 (frozen)\n",
                           "\ntrainable parameters          11,010,048 (0.1369% of total)\n",
                           "\ntotal parameters              8,041,271,296 (base + trainable)\n"}) {
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  }
  const Result json = ftbench("validate configs/llama3.1-8b-lora-synthetic.yaml --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json p = nlohmann::json::parse(json.out)["parameters"];
  EXPECT_EQ(p["base"], 8030261248);
  EXPECT_EQ(p["trainable"], 11010048);
  EXPECT_EQ(p["total"], 8041271296);
}

// `validate --format json` as the other commands spell it (--json stays its short form), and a
// spec that is not valid gives JSON too, every problem with its file, line and key, exit 2: a
// script reading the JSON got plain text before (found by a review).
TEST_F(ValidateData, FormatJsonAlsoForAnInvalidSpec) {
  const Result ok = ftbench("validate configs/llama3.1-8b-lora-synthetic.yaml --format json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const nlohmann::json valid = nlohmann::json::parse(ok.out);
  EXPECT_EQ(valid["valid"], true);
  EXPECT_EQ(valid["parameters"]["trainable"], 11010048);

  std::ofstream(dir_ / "bad.yaml") << "model:\n  preset: tiny\nlora:\n  rank: 0\n";
  const std::string bad = (dir_ / "bad.yaml").string();
  for (const std::string flag : {"--format json", "--json"}) {
    const Result r = ftbench("validate " + bad + " " + flag + " --set train.lr=-1");
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_EQ(r.err, "") << flag;
    const nlohmann::json out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["valid"], false);
    ASSERT_EQ(out["errors"].size(), 2u) << r.out;
    // In the order the text gives them: --set problems first, then the file's by line.
    EXPECT_EQ(out["errors"][0]["key"], "train.lr");
    EXPECT_EQ(out["errors"][0]["line"], nullptr);  // from --set: no line of the file
    EXPECT_EQ(out["errors"][1]["file"], bad);
    EXPECT_EQ(out["errors"][1]["line"], 4);
    EXPECT_EQ(out["errors"][1]["key"], "lora.rank");
    EXPECT_NE(out["errors"][1]["message"].get<std::string>().find("found 0"), std::string::npos)
        << r.out;
  }
  const Result text = ftbench("validate " + bad + " --format text");
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_NE(text.err.find("lora.rank"), std::string::npos) << text.err;
  const Result wrong = ftbench("validate " + bad + " --format yaml");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("--format: expected one of text, json, found \"yaml\""),
            std::string::npos)
      << wrong.err;
}

// A problem inside a file the spec names (the data, the validation file, the tokenizer) is placed
// at the key that names that file, in the text and in the JSON: it had no file, line or key
// (found by a review).
TEST_F(ValidateData, AProblemInANamedFileIsPlacedAtItsKey) {
  const std::string data = (dir_ / "alpaca.jsonl").string();
  std::ofstream(dir_ / "good.jsonl") << "{\"text\": \"hello there\"}\n";
  std::ofstream(dir_ / "d.yaml") << "model:\n  preset: tiny\ndata:\n  source: file\n"
                                 << "  path: " << data << "\n";
  const std::string spec = (dir_ / "d.yaml").string();
  Result r = ftbench("validate '" + spec + "' --format json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  ASSERT_EQ(out["errors"].size(), 1u) << r.out;
  EXPECT_EQ(out["errors"][0]["file"], spec);
  EXPECT_EQ(out["errors"][0]["line"], 5);
  EXPECT_EQ(out["errors"][0]["key"], "data.path");
  EXPECT_EQ(out["errors"][0]["message"].get<std::string>().rfind(data + ":10: ", 0), 0u) << r.out;
  r = ftbench("validate '" + spec + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: " + spec + ":5: data.path: " + data + ":10: ", 0), 0u) << r.err;

  // The validation file's problems are its key's, not data.path's.
  r = ftbench("validate '" + spec + "' --set data.path='" + (dir_ / "good.jsonl").string() +
              "' --set data.validation_path='" + data + "' --format json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  out = nlohmann::json::parse(r.out);
  ASSERT_EQ(out["errors"].size(), 1u) << r.out;
  EXPECT_EQ(out["errors"][0]["file"], "--set");
  EXPECT_EQ(out["errors"][0]["line"], nullptr);
  EXPECT_EQ(out["errors"][0]["key"], "data.validation_path");

  // A tokenizer that is not one.
  std::ofstream(dir_ / "tokenizer.json") << "{\"model\": ";
  r = ftbench("validate '" + spec + "' --set data.path='" + (dir_ / "good.jsonl").string() +
              "' --set data.tokenizer='" + (dir_ / "tokenizer.json").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: --set: data.tokenizer: " + (dir_ / "tokenizer.json").string() +
                            ": invalid JSON at byte ",
                        0),
            0u)
      << r.err;
}

// A shared spec's strings reach the terminal in the resolved spec validate prints: C1 and
// bidirectional controls there are shown escaped (as JSON escapes, so the text stays JSON), as
// every text printer does.
TEST_F(ValidateData, TheResolvedSpecShowsTerminalControlsEscaped) {
  std::ofstream(dir_ / "c1.yaml") << "model:\n  preset: tiny\noutput:\n"
                                     "  report: \"reports/\\u009b2J\\u202e.json\"\n";
  const Result r = ftbench("validate " + (dir_ / "c1.yaml").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\xC2\x9B"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xE2\x80\xAE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"report\": \"reports/\\u009B2J\\u202E.json\""), std::string::npos)
      << r.out;
}

}  // namespace
