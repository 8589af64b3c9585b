// model.checkpoint in the spec: the shape from config.json, conflicts with shape keys, the
// tokenizer picked up from the folder, and what the fingerprint makes of the folder.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "spec/canonical.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"

namespace ftbench::spec {
namespace {

namespace fs = std::filesystem;

// A small Llama 3-style config: GQA, llama3 rope scaling, untied.
constexpr const char* kConfig = R"({
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "hidden_size": 64,
  "intermediate_size": 96,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "vocab_size": 300,
  "max_position_embeddings": 512,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
  "tie_word_embeddings": false,
  "hidden_act": "silu",
  "torch_dtype": "bfloat16"
})";

class SpecCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ftbench-speccp-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    dir_ = (root_ / "ck").string();
    fs::create_directories(dir_);
    write(dir_ + "/config.json", kConfig);
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  RunSpec load(const std::string& yaml) { return load_spec_from_string(yaml, "t.yaml"); }
  // The message of the only issue, or "" when the spec loads.
  std::string only_issue(const std::string& yaml) {
    try {
      load(yaml);
      return "";
    } catch (const SpecError& e) {
      if (e.issues().size() != 1) return "issues: " + std::string(e.what());
      const SpecIssue& i = e.issues()[0];
      return fmt::format("{}:{} [{}] {}", i.file, i.line, i.key_path, i.message);
    }
  }

  fs::path root_;
  std::string dir_;
};

TEST_F(SpecCheckpoint, ShapeComesFromConfigJson) {
  const RunSpec s =
      load("model:\n  checkpoint: " + dir_ + "\ndata:\n  seq_len: 64\n  max_tokens: 64\n");
  const ModelSpec& m = s.model;
  EXPECT_EQ(m.checkpoint, dir_);
  EXPECT_EQ(m.preset, "custom");
  EXPECT_EQ(m.dim, 64);
  EXPECT_EQ(m.n_layers, 2);
  EXPECT_EQ(m.n_heads, 4);
  EXPECT_EQ(m.n_kv_heads, 2);
  EXPECT_EQ(m.ffn_dim, 96);
  EXPECT_EQ(m.vocab_size, 300);
  EXPECT_EQ(m.max_seq_len, 512);
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(m.rope_theta, 500000.0);
  ASSERT_TRUE(m.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->factor, 8.0);
  EXPECT_EQ(m.rope_scaling->original_max_position_embeddings, 32);
  EXPECT_FALSE(m.tie_embeddings);
  // The spec's dtype, not the checkpoint's torch_dtype.
  EXPECT_EQ(m.dtype, "fp32");
  // Synthetic data stays on bytes.
  EXPECT_EQ(s.data.tokenizer, "byte");
}

TEST_F(SpecCheckpoint, ShapeKeysMustAgreeExceptMaxSeqLen) {
  // Agreeing keys and another max_seq_len are fine.
  const RunSpec s = load(
      "model:\n  checkpoint: " + dir_ +
      "\n  dim: 64\n  n_kv_heads: 2\n  max_seq_len: 96\ndata:\n  seq_len: 64\n  max_tokens: 64\n");
  EXPECT_EQ(s.model.max_seq_len, 96);
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "\n  n_kv_heads: 4\n"),
            "t.yaml:3 [model.n_kv_heads] 4 here, 2 in " + dir_ +
                "/config.json: a checkpoint's shape comes from its config.json; remove the key");
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "\n  rope_scaling: null\n"),
            "t.yaml:3 [model.rope_scaling] null here, {factor: 8, low_freq_factor: 1, "
            "high_freq_factor: 4, original_max_position_embeddings: 32} in " +
                dir_ +
                "/config.json: a checkpoint's shape comes from its config.json; remove "
                "the key");
  // The key order does not matter: the shape key may come first.
  EXPECT_EQ(only_issue("model:\n  tie_embeddings: true\n  checkpoint: " + dir_ + "\n"),
            "t.yaml:2 [model.tie_embeddings] true here, false in " + dir_ +
                "/config.json: a checkpoint's shape comes from its config.json; remove the key");
  EXPECT_EQ(only_issue("model:\n  preset: llama3.1-8b\n  checkpoint: " + dir_ + "\n"),
            "t.yaml:2 [model.preset] llama3.1-8b is not the shape of " + dir_ +
                "/config.json (dim 4096 vs 64, n_layers 32 vs 2, n_heads 32 vs 4, n_kv_heads 8 "
                "vs 2, ffn_dim 14336 vs 96, vocab_size 128256 vs 300, "
                "rope_scaling.original_max_position_embeddings 8192 vs 32); remove model.preset "
                "(the checkpoint gives the shape)");
  // A preset that describes the checkpoint may stay; the spec then says custom either way, so
  // that the fingerprint does not depend on it.
  write(dir_ + "/config.json", R"({"model_type": "llama", "hidden_size": 64,
    "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 320, "max_position_embeddings": 512,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0})");
  const RunSpec with_preset = load("model:\n  preset: tiny\n  checkpoint: " + dir_ + "\n");
  const RunSpec without = load("model:\n  checkpoint: " + dir_ + "\n");
  EXPECT_EQ(with_preset.model.preset, "custom");
  EXPECT_EQ(fingerprint(with_preset), fingerprint(without));
  EXPECT_EQ(load("model:\n  preset: custom\n  checkpoint: " + dir_ + "\n").model.dim, 64);
}

TEST_F(SpecCheckpoint, FolderProblemsNameTheKeyAndTheFile) {
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "/nope\n"),
            "t.yaml:2 [model.checkpoint] expected a Hugging Face checkpoint folder, found \"" +
                dir_ + "/nope\" (no such folder)");
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "/config.json\n"),
            "t.yaml:2 [model.checkpoint] expected a Hugging Face checkpoint folder, found \"" +
                dir_ + "/config.json\" (not a folder)");
  fs::remove(dir_ + "/config.json");
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "\n"),
            "t.yaml:2 [model.checkpoint] " + dir_ +
                ": no config.json (a Hugging Face checkpoint folder has one)");
  write(dir_ + "/config.json", R"({"model_type": "llama", "hidden_size": 64})");
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "\n"),
            "t.yaml:2 [model.checkpoint] " + dir_ +
                "/config.json: num_hidden_layers: missing (expected an integer >= 1)");
  // Through --set, as on a command line.
  try {
    load_spec_from_string("lora:\n", "t.yaml", {"model.checkpoint=" + dir_ + "/nope"});
    FAIL() << "loaded";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.issues().size(), 1u);
    EXPECT_EQ(e.issues()[0].file, "--set");
    EXPECT_EQ(e.issues()[0].key_path, "model.checkpoint");
  }
}

TEST_F(SpecCheckpoint, TheFolderTokenizesADataFile) {
  write((root_ / "d.jsonl").string(), "{\"text\": \"hello\"}\n");
  const std::string data = "data:\n  source: file\n  path: " + (root_ / "d.jsonl").string() +
                           "\n  seq_len: 64\n  max_tokens: 64\n";
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "\n" + data),
            "t.yaml:0 [data.tokenizer] required: " + dir_ +
                " holds no tokenizer.json or tokenizer.model to tokenize data.path with");
  write(dir_ + "/tokenizer.model", "x");
  EXPECT_EQ(load("model:\n  checkpoint: " + dir_ + "\n" + data).data.tokenizer,
            dir_ + "/tokenizer.model");
  write(dir_ + "/tokenizer.json", "{}");
  EXPECT_EQ(load("model:\n  checkpoint: " + dir_ + "\n" + data).data.tokenizer, dir_);
  // A tokenizer the spec names wins.
  EXPECT_EQ(
      load("model:\n  checkpoint: " + dir_ + "\n" + data + "  tokenizer: byte\n").data.tokenizer,
      "byte");
}

TEST_F(SpecCheckpoint, FingerprintIgnoresWhereTheFolderIs) {
  const std::string other = (root_ / "elsewhere").string();
  fs::create_directories(other);
  fs::copy_file(dir_ + "/config.json", other + "/config.json");
  const std::string rest = "\ndata:\n  seq_len: 64\n  max_tokens: 64\n";
  const RunSpec a = load("model:\n  checkpoint: " + dir_ + rest);
  const RunSpec b = load("model:\n  checkpoint: " + other + rest);
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  // The same shape with random weights is another job.
  const RunSpec random = load(
      "model:\n  preset: custom\n  dim: 64\n  n_layers: 2\n  n_heads: 4\n  n_kv_heads: 2\n"
      "  ffn_dim: 96\n  vocab_size: 300\n  max_seq_len: 512\n  norm_eps: 1e-5\n"
      "  rope_theta: 500000\n  rope_scaling: {factor: 8, low_freq_factor: 1, "
      "high_freq_factor: 4, original_max_position_embeddings: 32}" +
      rest);
  EXPECT_NE(fingerprint(random), fingerprint(a));
  std::string job = canonical_job_json(a);
  const std::string loaded = "\"checkpoint_path\":\"\"";
  EXPECT_NE(job.find(loaded), std::string::npos) << job;
  EXPECT_NE(job.find("\"init\":\"checkpoint\""), std::string::npos) << job;
  EXPECT_EQ(job.find(dir_), std::string::npos) << job;
  // The report's spec keeps the folder.
  EXPECT_EQ(to_json(a)["model"]["checkpoint"], dir_);
}

TEST_F(SpecCheckpoint, AConfigThatCannotBeReadIsTheOnlyIssue) {
  // Not one issue per shape key left at zero after it.
  EXPECT_EQ(only_issue("model:\n  preset: custom\n  checkpoint: " + dir_ + "/config.json\n"),
            "t.yaml:3 [model.checkpoint] expected a Hugging Face checkpoint folder, found \"" +
                dir_ + "/config.json\" (not a folder)");
  // A misspelt preset is still one, checkpoint or not.
  EXPECT_EQ(only_issue("model:\n  preset: tinyy\n  checkpoint: " + dir_ + "\n"),
            "t.yaml:2 [model.preset] expected one of tiny, llama3.2-1b, llama3.1-8b, llama3.1-70b, "
            "llama2-7b, llama2-70b, custom, found \"tinyy\"; did you mean \"tiny\"?");
}

TEST_F(SpecCheckpoint, StringsMustBeUtf8) {
  // A raw byte 0xff (a Latin-1 file name, say), not YAML's "\xff" escape (which is U+00FF).
  EXPECT_EQ(only_issue("model:\n  checkpoint: " + dir_ + "\xff\n"),
            "t.yaml:2 [model.checkpoint] expected UTF-8 text, found \"" + dir_ + "\\xFF\" (byte " +
                std::to_string(dir_.size() + 1) +
                " is not UTF-8; the report is JSON, which holds UTF-8 only)");
}

TEST_F(SpecCheckpoint, ExportFoldersMayNotOverlapOtherFolders) {
  const std::string base =
      "model:\n  checkpoint: " + dir_ + "\ndata:\n  seq_len: 64\n  max_tokens: 64\n";
  const std::string overlap =
      ": an export folder is written (and with --force replaced) as a whole; give it a folder of "
      "its own";
  const std::string cwd = fs::current_path().string();
  EXPECT_EQ(only_issue(base + "output:\n  adapter: out/{name}\n  merged: out/run\n"),
            "t.yaml:7 [output.adapter] \"" + cwd + "/out/run\" and output.merged (\"" + cwd +
                "/out/run\") overlap" + overlap);
  EXPECT_EQ(only_issue(base + "output:\n  merged: " + dir_ + "\n"),
            "t.yaml:7 [output.merged] \"" + dir_ + "\" and model.checkpoint (\"" + dir_ +
                "\") overlap" + overlap);
  // Inside one another, either way, counts too; so does a report inside an export folder.
  EXPECT_EQ(only_issue(base + "output:\n  adapter: " + root_.string() + "\n"),
            "t.yaml:7 [output.adapter] \"" + root_.string() + "\" and model.checkpoint (\"" + dir_ +
                "\") overlap" + overlap);
  EXPECT_EQ(only_issue(base + "output:\n  adapter: reports\n"),
            "t.yaml:7 [output.adapter] \"" + cwd + "/reports\" and output.report (\"" + cwd +
                "/reports/run.json\") overlap" + overlap);
  EXPECT_EQ(only_issue(base + "output:\n  adapter: checkpoints/run/adapter\n"),
            "t.yaml:7 [output.adapter] \"" + cwd +
                "/checkpoints/run/adapter\" and train.checkpoint.dir (\"" + cwd +
                "/checkpoints/run\") overlap" + overlap);
  // Folders side by side are fine.
  EXPECT_EQ(load(base + "output:\n  adapter: out/adapter\n  merged: out/merged\n").output.merged,
            "out/merged");
}

// --force replaces an export folder with all it holds: the folder ftbench runs in, the spec
// file and the data may not be in it (a review removed a spec and the notes beside it so).
TEST_F(SpecCheckpoint, ExportFoldersMayNotHoldWhatTheRunReadsOrTheFolderItRunsIn) {
  const std::string base =
      "model:\n  checkpoint: " + dir_ + "\ndata:\n  seq_len: 64\n  max_tokens: 64\n";
  const std::string own =
      ": an export folder is written (and with --force replaced) as a whole; give it a folder of "
      "its own";
  const std::string cwd = fs::current_path().string();
  EXPECT_EQ(only_issue(base + "output:\n  adapter: .\n"),
            "t.yaml:7 [output.adapter] \"" + cwd + "\" is or holds the folder ftbench runs in (\"" +
                cwd + "\")" + own);
  EXPECT_EQ(only_issue(base + "output:\n  merged: ..\n"),
            "t.yaml:7 [output.merged] \"" + fs::current_path().parent_path().string() +
                "\" is or holds the folder ftbench runs in (\"" + cwd + "\")" + own);
  const std::string data = (root_ / "data" / "d.jsonl").string();
  const std::string with_data = "model:\n  checkpoint: " + dir_ +
                                "\ndata:\n  seq_len: 64\n  max_tokens: 64\n  source: file\n"
                                "  tokenizer: byte\n  path: " +
                                data + "\n";
  EXPECT_EQ(only_issue(with_data + "output:\n  adapter: " + (root_ / "data").string() + "\n"),
            "t.yaml:10 [output.adapter] \"" + (root_ / "data").string() + "\" and data.path (\"" +
                data + "\") overlap" + own);
  // Through a link to the data's folder: where the export would land holds the data (a review
  // lost its data so); a link at the export's own name is replaced, not followed.
  fs::create_directory_symlink(root_, root_.string() + "-link");
  const std::string linked = root_.string() + "-link/data";
  EXPECT_EQ(only_issue(with_data + "output:\n  adapter: " + linked + "\n"),
            "t.yaml:10 [output.adapter] \"" + linked + "\" and data.path (\"" + data +
                "\") overlap" + own);
  fs::create_directory_symlink(root_ / "data", root_ / "dl");
  EXPECT_EQ(only_issue(with_data + "output:\n  adapter: " + (root_ / "dl").string() + "\n"), "");
  fs::remove(root_.string() + "-link");
  // A tokenizer.json's tokenizer_config.json beside it is read too.
  fs::create_directories(root_ / "tok");
  std::ofstream(root_ / "tok" / "tokenizer.json") << "{}";
  const std::string config = (root_ / "tok" / "tokenizer_config.json").string();
  EXPECT_EQ(
      only_issue(base + "  tokenizer: " + (root_ / "tok" / "tokenizer.json").string() +
                 "\n  source: file\n  path: " + data + "\noutput:\n  adapter: " + config + "\n"),
      "t.yaml:10 [output.adapter] \"" + config +
          "\" and data.tokenizer's tokenizer_config.json (\"" + config + "\") overlap" + own);
  // The spec file itself.
  const std::string spec_file = (root_ / "w" / "t.yaml").string();
  try {
    load_spec_from_string(base + "output:\n  adapter: " + (root_ / "w").string() + "\n", spec_file);
    ADD_FAILURE() << "loaded";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.issues().size(), 1u) << e.what();
    EXPECT_EQ(e.issues()[0].message, "\"" + (root_ / "w").string() + "\" and the spec file (\"" +
                                         spec_file + "\") overlap" + own);
  }
}

}  // namespace
}  // namespace ftbench::spec
