#include "spec/spec_loader.h"
#include "spec/canonical.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spec_issues.h"

namespace ftbench::spec {
namespace {

// The one issue `yaml` must produce (fails the test when there are more or none).
std::string OnlyIssue(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  const std::vector<std::string> issues = IssuesOf(yaml, overrides);
  EXPECT_EQ(issues.size(), 1u) << ::testing::PrintToString(issues);
  return issues.empty() ? "" : issues.front();
}

RunSpec Load(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return load_spec_from_string(yaml, "t.yaml", overrides);
}

// ---- whole-file behaviour ---------------------------------------------------------------------

// An empty section is all defaults (an empty file is refused: spec_limits_test.cpp).
constexpr const char* kAllDefaults = "lora:\n";

TEST(SpecLoader, AnEmptySectionIsAllDefaultsWithTinyModel) {
  const RunSpec s = Load(kAllDefaults);
  EXPECT_EQ(s.source_path, "t.yaml");
  EXPECT_EQ(s.model.preset, "tiny");
  EXPECT_EQ(s.model.dim, 64);
  EXPECT_EQ(s.model.n_layers, 2);
  EXPECT_EQ(s.model.n_heads, 4);
  EXPECT_EQ(s.model.n_kv_heads, 2);
  EXPECT_EQ(s.model.ffn_dim, 176);
  EXPECT_EQ(s.model.vocab_size, 320);
  EXPECT_EQ(s.model.max_seq_len, 512);
  EXPECT_EQ(s.model.norm_eps, 1e-5);
  EXPECT_EQ(s.model.rope_theta, 10000.0);
  EXPECT_FALSE(s.model.rope_scaling.has_value());
  EXPECT_EQ(s.model.dtype, "fp32");
  EXPECT_EQ(s.lora.rank, 16);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"q", "v"}));
  EXPECT_EQ(s.data.num_examples, 256);
  EXPECT_EQ(s.data.seed, 1234u);
  EXPECT_EQ(s.train.lr, 3e-4);
  EXPECT_EQ(s.train.seed, 42u);
  EXPECT_EQ(s.backend.device, "auto");
  EXPECT_FALSE(s.backend.peak_tflops.has_value());
  EXPECT_EQ(s.output.report, "reports/{name}.json");
  EXPECT_TRUE(validate(s).empty());
}

TEST(SpecLoader, EmptySectionMeansDefaults) {
  const RunSpec s = Load("lora:\ntrain:\n");
  EXPECT_EQ(s.lora.rank, 16);
  EXPECT_EQ(s.train.epochs, 1);
}

TEST(SpecLoader, ReadsEveryKeyOfEverySection) {
  const RunSpec s = Load(R"(model:
  preset: custom
  dim: 128
  n_layers: 3
  n_heads: 4
  n_kv_heads: 1
  ffn_dim: 352
  vocab_size: 300
  max_seq_len: 1024
  norm_eps: 1.0e-6
  rope_theta: 20000
  rope_scaling: {factor: 2, low_freq_factor: 0.5, high_freq_factor: 3, original_max_position_embeddings: 256}
  tie_embeddings: true
  dtype: bf16
  activation_checkpointing: true
lora:
  rank: 4
  alpha: 8.5
  dropout: 0.05
  targets: [q, k, v, o, gate, up, down, output]
  dtype: base
data:
  source: synthetic
  tokenizer: byte
  num_examples: 100
  seq_len: 200
  length_distribution: lognormal
  min_tokens: 10
  max_tokens: 190
  lognormal_median_tokens: 80
  lognormal_sigma: 0.25
  prompt_fraction: 0.25
  train_on_input: true
  padding: max_length
  shuffle: false
  seed: 18446744073709551615
train:
  epochs: 2
  max_steps: 7
  micro_batch_size: 2
  grad_accum_steps: 3
  optimizer: adamw
  lr: 1e-3
  weight_decay: 0
  beta1: 0.8
  beta2: 0.95
  eps: 1e-6
  lr_schedule: linear
  lr_warmup_steps: 5
  min_lr_ratio: 0.1
  max_grad_norm: 0
  seed: 7
  timing_warmup_steps: 3
  loss_window: 5
backend:
  device: cuda
  device_index: 1
  threads: 6
  peak_tflops: 989.5
output:
  report: out/x.json
  name: my-run_1.0
  progress: off
  log_every_steps: 10
)");
  EXPECT_EQ(s.model.preset, "custom");
  EXPECT_EQ(s.model.dim, 128);
  EXPECT_EQ(s.model.n_layers, 3);
  EXPECT_EQ(s.model.n_heads, 4);
  EXPECT_EQ(s.model.n_kv_heads, 1);
  EXPECT_EQ(s.model.ffn_dim, 352);
  EXPECT_EQ(s.model.vocab_size, 300);
  EXPECT_EQ(s.model.max_seq_len, 1024);
  EXPECT_EQ(s.model.norm_eps, 1e-6);
  EXPECT_EQ(s.model.rope_theta, 20000.0);
  ASSERT_TRUE(s.model.rope_scaling.has_value());
  EXPECT_EQ(s.model.rope_scaling->factor, 2.0);
  EXPECT_EQ(s.model.rope_scaling->low_freq_factor, 0.5);
  EXPECT_EQ(s.model.rope_scaling->high_freq_factor, 3.0);
  EXPECT_EQ(s.model.rope_scaling->original_max_position_embeddings, 256);
  EXPECT_TRUE(s.model.tie_embeddings);
  EXPECT_EQ(s.model.dtype, "bf16");
  EXPECT_EQ(s.model.activation_checkpointing, "full");
  EXPECT_EQ(s.model.checkpoint, "");
  EXPECT_EQ(s.lora.rank, 4);
  EXPECT_EQ(s.lora.alpha, 8.5);
  EXPECT_EQ(s.lora.dropout, 0.05);
  EXPECT_EQ(s.lora.targets,
            (std::vector<std::string>{"q", "k", "v", "o", "gate", "up", "down", "output"}));
  EXPECT_EQ(s.lora.dtype, "base");
  EXPECT_EQ(s.data.source, "synthetic");
  EXPECT_EQ(s.data.tokenizer, "byte");
  EXPECT_EQ(s.data.num_examples, 100);
  EXPECT_EQ(s.data.seq_len, 200);
  EXPECT_EQ(s.data.length_distribution, "lognormal");
  EXPECT_EQ(s.data.min_tokens, 10);
  EXPECT_EQ(s.data.max_tokens, 190);
  EXPECT_EQ(s.data.lognormal_median_tokens, 80.0);
  EXPECT_EQ(s.data.lognormal_sigma, 0.25);
  EXPECT_EQ(s.data.prompt_fraction, 0.25);
  EXPECT_TRUE(s.data.train_on_input);
  EXPECT_EQ(s.data.padding, "max_length");
  EXPECT_FALSE(s.data.shuffle);
  EXPECT_EQ(s.data.seed, 18446744073709551615u);
  EXPECT_EQ(s.train.epochs, 2);
  EXPECT_EQ(s.train.max_steps, 7);
  EXPECT_EQ(s.train.micro_batch_size, 2);
  EXPECT_EQ(s.train.grad_accum_steps, 3);
  EXPECT_EQ(s.train.optimizer, "adamw");
  EXPECT_EQ(s.train.lr, 1e-3);
  EXPECT_EQ(s.train.weight_decay, 0.0);
  EXPECT_EQ(s.train.beta1, 0.8);
  EXPECT_EQ(s.train.beta2, 0.95);
  EXPECT_EQ(s.train.eps, 1e-6);
  EXPECT_EQ(s.train.lr_schedule, "linear");
  EXPECT_EQ(s.train.lr_warmup_steps, 5);
  EXPECT_EQ(s.train.min_lr_ratio, 0.1);
  EXPECT_EQ(s.train.max_grad_norm, 0.0);
  EXPECT_EQ(s.train.seed, 7u);
  EXPECT_EQ(s.train.timing_warmup_steps, 3);
  EXPECT_EQ(s.train.loss_window, 5);
  EXPECT_EQ(s.backend.device, "cuda");
  EXPECT_EQ(s.backend.device_index, 1);
  EXPECT_EQ(s.backend.threads, 6);
  EXPECT_EQ(s.backend.peak_tflops, 989.5);
  EXPECT_EQ(s.output.report, "out/x.json");
  EXPECT_EQ(s.output.name, "my-run_1.0");
  EXPECT_EQ(s.output.progress, "off");
  EXPECT_EQ(s.output.log_every_steps, 10);
}

TEST(SpecLoader, ReportsEveryProblemAtOnce) {
  EXPECT_EQ(IssuesOf("lora:\n  rank: 0\n  dropout: 1.5\ntrain:\n  lr: fast\n"),
            (std::vector<std::string>{
                "t.yaml:2 [lora.rank] must be an integer >= 1, found 0",
                "t.yaml:3 [lora.dropout] must be a number in [0, 1), found 1.5",
                "t.yaml:5 [train.lr] expected a number, found \"fast\"",
            }));
}

// model.activation_checkpointing is a policy; the bools of specs before the policies read as
// full and none, from the file and from --set alike.
TEST(SpecLoader, ActivationCheckpointingIsAPolicyAndTheOldBoolsStillRead) {
  EXPECT_EQ(Load("lora:\n").model.activation_checkpointing, "none");
  for (const auto& [given, read] :
       std::vector<std::pair<std::string, std::string>>{{"full", "full"},
                                                        {"selective", "selective"},
                                                        {"none", "none"},
                                                        {"auto", "auto"},
                                                        {"true", "full"},
                                                        {"false", "none"}}) {
    EXPECT_EQ(
        Load("model:\n  activation_checkpointing: " + given + "\n").model.activation_checkpointing,
        read)
        << given;
    EXPECT_EQ(
        Load("lora:\n", {"model.activation_checkpointing=" + given}).model.activation_checkpointing,
        read)
        << given;
  }
  EXPECT_EQ(IssuesOf("model:\n  activation_checkpointing: selectve\n"),
            (std::vector<std::string>{
                "t.yaml:2 [model.activation_checkpointing] expected one of full, selective, "
                "none, auto, found \"selectve\"; did you mean \"selective\"?"}));
  EXPECT_EQ(IssuesOf("model:\n  activation_checkpointing: yes\n"),
            (std::vector<std::string>{"t.yaml:2 [model.activation_checkpointing] expected one "
                                      "of full, selective, none, auto, found \"yes\""}));
  EXPECT_EQ(IssuesOf("model:\n  activation_checkpointing: [full]\n"),
            (std::vector<std::string>{"t.yaml:2 [model.activation_checkpointing] expected a "
                                      "string, found a list"}));
}

TEST(SpecLoader, ErrorWhatListsOneIssuePerLine) {
  try {
    Load("lora:\n  rank: 0\n  alpha: 0\n");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(),
                 "t.yaml:2: lora.rank: must be an integer >= 1, found 0\n"
                 "t.yaml:3: lora.alpha: must be a number > 0, found 0");
  }
}

TEST(SpecLoader, IssueToStringLeavesOutUnknownLineAndKey) {
  EXPECT_EQ((SpecIssue{"a.yaml", "lora.rank", 12, "bad"}).to_string(), "a.yaml:12: lora.rank: bad");
  EXPECT_EQ((SpecIssue{"--set", "lora.rank", 0, "bad"}).to_string(), "--set: lora.rank: bad");
  EXPECT_EQ((SpecIssue{"a.yaml", "", 3, "bad"}).to_string(), "a.yaml:3: bad");
}

TEST(SpecLoader, YamlSyntaxErrorIsOneIssueWithLine) {
  EXPECT_EQ(IssuesOf("lora:\n  targets: [q, v\n  rank: 8\n"),
            (std::vector<std::string>{"t.yaml:3 [] invalid YAML: end of sequence flow not found"}));
}

TEST(SpecLoader, MissingFileIsAnIssue) {
  try {
    load_spec("/nonexistent/ftbench/spec.yaml");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.issues().size(), 1u);
    EXPECT_EQ(Show(e.issues()[0]),
              "/nonexistent/ftbench/spec.yaml:0 [] cannot read file: No such file or directory");
  }
}

TEST(SpecLoader, DirectoryIsUnreadable) {
  try {
    load_spec(FTBENCH_SOURCE_DIR "/configs");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.issues().size(), 1u);
    EXPECT_EQ(e.issues()[0].message, "cannot read file: Is a directory");
  }
}

TEST(SpecLoader, RootMustBeAMapping) {
  EXPECT_EQ(OnlyIssue("- a\n- b\n"),
            "t.yaml:1 [] expected a mapping of sections (model, lora, data, train, backend, "
            "distributed, output), found a list");
}

// ---- unknown and duplicate keys ---------------------------------------------------------------

TEST(SpecLoader, UnknownKeySuggestsClosest) {
  EXPECT_EQ(OnlyIssue("lora:\n  rnak: 8\n"),
            "t.yaml:2 [lora.rnak] unknown key \"rnak\"; did you mean \"rank\"?");
}

TEST(SpecLoader, UnknownKeySuggestionWithinLengthOverThree) {
  // "micro_batch" is 5 edits from "micro_batch_size"; 11 / 3 = 3 < 5, so no suggestion.
  EXPECT_EQ(OnlyIssue("train:\n  micro_batch: 8\n"),
            "t.yaml:2 [train.micro_batch] unknown key \"micro_batch\"; valid keys: epochs, "
            "max_steps, micro_batch_size, grad_accum_steps, optimizer, lr, weight_decay, beta1, "
            "beta2, eps, lr_schedule, lr_warmup_steps, min_lr_ratio, max_grad_norm, seed, "
            "timing_warmup_steps, loss_window, eval_every_steps, eval_max_batches, oom_fallback, "
            "oom_max_fallbacks, checkpoint");
  // "grad_acum_step" is 2 edits away.
  EXPECT_EQ(OnlyIssue("train:\n  grad_acum_step: 8\n"),
            "t.yaml:2 [train.grad_acum_step] unknown key \"grad_acum_step\"; did you mean "
            "\"grad_accum_steps\"?");
}

TEST(SpecLoader, UnknownKeyWithoutCloseMatchListsValidKeys) {
  EXPECT_EQ(OnlyIssue("lora:\n  banana: 1\n"),
            "t.yaml:2 [lora.banana] unknown key \"banana\"; valid keys: rank, alpha, dropout, "
            "targets, dtype");
}

TEST(SpecLoader, UnknownSectionSuggestsClosest) {
  EXPECT_EQ(OnlyIssue("lroa:\n  rank: 8\n"),
            "t.yaml:1 [lroa] unknown section \"lroa\"; did you mean \"lora\"?");
}

TEST(SpecLoader, UnknownSectionWithoutCloseMatchListsSections) {
  EXPECT_EQ(OnlyIssue("optimizer:\n  lr: 1\n"),
            "t.yaml:1 [optimizer] unknown section \"optimizer\"; valid sections: model, lora, "
            "data, train, backend, distributed, output");
}

TEST(SpecLoader, UnknownRopeScalingKey) {
  EXPECT_EQ(OnlyIssue("model:\n  preset: llama3.1-8b\n  rope_scaling:\n    fator: 4\n"),
            "t.yaml:4 [model.rope_scaling.fator] unknown key \"fator\"; did you mean \"factor\"?");
}

TEST(SpecLoader, DuplicateKey) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: 8\n  rank: 4\n"),
            "t.yaml:3 [lora.rank] duplicate key \"rank\" (first given at line 2)");
}

TEST(SpecLoader, DuplicateSection) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: 8\nlora:\n  rank: 4\n"),
            "t.yaml:3 [lora] duplicate section \"lora\" (first given at line 1)");
}

TEST(SpecLoader, SectionMustBeAMapping) {
  EXPECT_EQ(OnlyIssue("lora: 5\n"), "t.yaml:1 [lora] expected a mapping of keys, found \"5\"");
}

// ---- types ------------------------------------------------------------------------------------

TEST(SpecLoader, IntegerRejectsText) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: abc\n"),
            "t.yaml:2 [lora.rank] expected an integer, found \"abc\"");
}

TEST(SpecLoader, IntegerRejectsFraction) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: 2.5\n"),
            "t.yaml:2 [lora.rank] expected an integer, found \"2.5\"");
}

TEST(SpecLoader, IntegerRejectsExponentAndHex) {
  EXPECT_EQ(OnlyIssue("data:\n  num_examples: 1e3\n"),
            "t.yaml:2 [data.num_examples] expected an integer, found \"1e3\"");
  EXPECT_EQ(OnlyIssue("data:\n  num_examples: 0x10\n"),
            "t.yaml:2 [data.num_examples] expected an integer, found \"0x10\"");
}

TEST(SpecLoader, IntegerRejectsQuotedString) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: \"8\"\n"),
            "t.yaml:2 [lora.rank] expected an integer, found the quoted string \"8\"");
}

TEST(SpecLoader, IntegerRejectsListAndNull) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: [8]\n"),
            "t.yaml:2 [lora.rank] expected an integer, found a list");
  EXPECT_EQ(OnlyIssue("lora:\n  rank:\n"), "t.yaml:2 [lora.rank] expected an integer, found null");
}

TEST(SpecLoader, IntegerOutOfRange) {
  EXPECT_EQ(OnlyIssue("train:\n  max_steps: 99999999999999999999\n"),
            "t.yaml:2 [train.max_steps] expected an integer in the 64-bit range, found "
            "\"99999999999999999999\"");
}

TEST(SpecLoader, OutOfMemoryFallbackIsOnByDefaultAndBounded) {
  const RunSpec defaults = Load(kAllDefaults);
  EXPECT_TRUE(defaults.train.oom_fallback);
  EXPECT_EQ(defaults.train.oom_max_fallbacks, 4);
  const RunSpec off = Load("train:\n  oom_fallback: false\n  oom_max_fallbacks: 2\n");
  EXPECT_FALSE(off.train.oom_fallback);
  EXPECT_EQ(off.train.oom_max_fallbacks, 2);
  EXPECT_EQ(OnlyIssue("train:\n  oom_max_fallbacks: 0\n"),
            "t.yaml:2 [train.oom_max_fallbacks] must be an integer >= 1, found 0");
  EXPECT_EQ(OnlyIssue("train:\n  oom_fallback: maybe\n"),
            "t.yaml:2 [train.oom_fallback] expected true or false, found \"maybe\"");
}

TEST(SpecLoader, IntegerAcceptsPlusSign) { EXPECT_EQ(Load("lora:\n  rank: +8\n").lora.rank, 8); }

TEST(SpecLoader, NumberAcceptsIntegerAndExponent) {
  const RunSpec s = Load("lora:\n  alpha: 16\ntrain:\n  lr: 1e-3\n  eps: 1.0e-8\n");
  EXPECT_EQ(s.lora.alpha, 16.0);
  EXPECT_EQ(s.train.lr, 0.001);
  EXPECT_EQ(s.train.eps, 1e-8);
}

TEST(SpecLoader, NumberRejectsText) {
  EXPECT_EQ(OnlyIssue("train:\n  lr: fast\n"),
            "t.yaml:2 [train.lr] expected a number, found \"fast\"");
}

TEST(SpecLoader, NumberRejectsInfinite) {
  EXPECT_EQ(OnlyIssue("train:\n  lr: 1e999\n"),
            "t.yaml:2 [train.lr] expected a finite number, found \"1e999\"");
  // A number all the same: said as not finite, as the catalog says it (util/text/yaml_fields.h).
  EXPECT_EQ(OnlyIssue("train:\n  lr: .inf\n"),
            "t.yaml:2 [train.lr] expected a finite number, found \".inf\"");
}

TEST(SpecLoader, BoolAcceptsOnlyTrueAndFalse) {
  EXPECT_FALSE(Load("data:\n  shuffle: false\n").data.shuffle);
  EXPECT_EQ(OnlyIssue("data:\n  shuffle: yes\n"),
            "t.yaml:2 [data.shuffle] expected true or false, found \"yes\"");
  EXPECT_EQ(OnlyIssue("data:\n  shuffle: True\n"),
            "t.yaml:2 [data.shuffle] expected true or false, found \"True\"");
  EXPECT_EQ(OnlyIssue("data:\n  shuffle: 1\n"),
            "t.yaml:2 [data.shuffle] expected true or false, found \"1\"");
}

TEST(SpecLoader, StringRejectsListMappingAndNull) {
  EXPECT_EQ(OnlyIssue("output:\n  name: [a]\n"),
            "t.yaml:2 [output.name] expected a string, found a list");
  EXPECT_EQ(OnlyIssue("output:\n  name: {a: 1}\n"),
            "t.yaml:2 [output.name] expected a string, found a mapping");
  EXPECT_EQ(OnlyIssue("output:\n  name: ~\n"),
            "t.yaml:2 [output.name] expected a string, found null");
}

TEST(SpecLoader, StringAcceptsNumberLikeText) {
  EXPECT_EQ(Load("output:\n  name: 123\n").output.name, "123");
}

TEST(SpecLoader, ListRejectsScalar) {
  EXPECT_EQ(OnlyIssue("lora:\n  targets: q\n"),
            "t.yaml:2 [lora.targets] expected a list of strings, found \"q\"");
}

TEST(SpecLoader, ListItemMustBeScalarReportedAtItsLine) {
  EXPECT_EQ(OnlyIssue("lora:\n  targets:\n    - q\n    - [v]\n"),
            "t.yaml:4 [lora.targets] expected a list of strings, found an item that is a list");
  // Once for the key, however many items are wrong (it was said once per item; found by a
  // review).
  EXPECT_EQ(OnlyIssue("lora:\n  targets: [[q], [v], {a: 1}]\n"),
            "t.yaml:2 [lora.targets] expected a list of strings, found an item that is a list");
}

TEST(SpecLoader, SeedIsUnsigned) {
  EXPECT_EQ(OnlyIssue("data:\n  seed: -1\n"),
            "t.yaml:2 [data.seed] must be an integer >= 0, found -1");
  EXPECT_EQ(OnlyIssue("train:\n  seed: 1.5\n"),
            "t.yaml:2 [train.seed] expected an integer >= 0, found \"1.5\"");
  EXPECT_EQ(OnlyIssue("train:\n  seed: 18446744073709551616\n"),
            "t.yaml:2 [train.seed] expected an integer below 2^64, found \"18446744073709551616\"");
}

TEST(SpecLoader, PeakTflopsNumberOrNull) {
  EXPECT_EQ(Load("backend:\n  peak_tflops: 989\n").backend.peak_tflops, 989.0);
  EXPECT_FALSE(Load("backend:\n  peak_tflops: null\n").backend.peak_tflops.has_value());
  EXPECT_EQ(OnlyIssue("backend:\n  peak_tflops: lots\n"),
            "t.yaml:2 [backend.peak_tflops] expected a number or null, found \"lots\"");
}

TEST(SpecLoader, RopeScalingMustBeMappingOrNull) {
  EXPECT_EQ(OnlyIssue("model:\n  rope_scaling: 8\n"),
            "t.yaml:2 [model.rope_scaling] expected a mapping or null, found \"8\"");
}

// ---- presets ----------------------------------------------------------------------------------

TEST(SpecPreset, PresetFillsShape) {
  const RunSpec s = Load("model:\n  preset: llama3.1-8b\n  dtype: bf16\n");
  EXPECT_EQ(s.model.preset, "llama3.1-8b");
  EXPECT_EQ(s.model.dim, 4096);
  EXPECT_EQ(s.model.n_layers, 32);
  EXPECT_EQ(s.model.n_kv_heads, 8);
  EXPECT_EQ(s.model.vocab_size, 128256);
  EXPECT_EQ(s.model.max_seq_len, 131072);
  ASSERT_TRUE(s.model.rope_scaling.has_value());
  EXPECT_EQ(s.model.rope_scaling->factor, 8.0);
  EXPECT_EQ(s.model.dtype, "bf16");
}

TEST(SpecPreset, ShapeKeysOverridePresetWhereverTheyAppear) {
  // dim comes before preset in the file; the preset still only provides the defaults.
  const RunSpec s = Load("model:\n  n_layers: 4\n  preset: llama3.1-8b\n");
  EXPECT_EQ(s.model.n_layers, 4);
  EXPECT_EQ(s.model.dim, 4096);
}

TEST(SpecPreset, NullRopeScalingRemovesPresetScaling) {
  const RunSpec s = Load("model:\n  preset: llama3.1-8b\n  rope_scaling: null\n");
  EXPECT_FALSE(s.model.rope_scaling.has_value());
}

TEST(SpecPreset, PartialRopeScalingStartsFromPreset) {
  const RunSpec s = Load("model:\n  preset: llama3.2-1b\n  rope_scaling: {factor: 16}\n");
  ASSERT_TRUE(s.model.rope_scaling.has_value());
  EXPECT_EQ(s.model.rope_scaling->factor, 16.0);
  EXPECT_EQ(s.model.rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(s.model.rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(s.model.rope_scaling->original_max_position_embeddings, 8192);
}

TEST(SpecPreset, RopeScalingOnUnscaledPresetStartsFromLlama31Defaults) {
  const RunSpec s = Load("model:\n  rope_scaling: {factor: 2}\n");
  ASSERT_TRUE(s.model.rope_scaling.has_value());
  EXPECT_EQ(s.model.rope_scaling->factor, 2.0);
  EXPECT_EQ(s.model.rope_scaling->high_freq_factor, 4.0);
}

TEST(SpecPreset, UnknownPresetIsOneIssueWithSuggestion) {
  EXPECT_EQ(OnlyIssue("model:\n  preset: llama3-8b\n"),
            "t.yaml:2 [model.preset] expected one of tiny, llama3.2-1b, llama3.1-8b, llama3.1-70b, "
            "llama2-7b, llama2-70b, custom, found \"llama3-8b\"; did you mean \"llama3.1-8b\"?");
}

TEST(SpecPreset, CustomRequiresEveryShapeKey) {
  EXPECT_EQ(IssuesOf("model:\n  preset: custom\n  dim: 256\n  n_heads: 8\n"),
            (std::vector<std::string>{
                "t.yaml:0 [model.n_layers] required when model.preset is \"custom\"",
                "t.yaml:0 [model.n_kv_heads] required when model.preset is \"custom\"",
                "t.yaml:0 [model.ffn_dim] required when model.preset is \"custom\"",
                "t.yaml:0 [model.vocab_size] required when model.preset is \"custom\"",
                "t.yaml:0 [model.max_seq_len] required when model.preset is \"custom\"",
                "t.yaml:0 [model.norm_eps] required when model.preset is \"custom\"",
                "t.yaml:0 [model.rope_theta] required when model.preset is \"custom\"",
            }));
}

TEST(SpecPreset, CustomWithEveryShapeKeyLoads) {
  const RunSpec s = Load(
      "model:\n  preset: custom\n  dim: 256\n  n_layers: 4\n  n_heads: 8\n  n_kv_heads: 4\n"
      "  ffn_dim: 688\n  vocab_size: 2048\n  max_seq_len: 256\n  norm_eps: 1e-5\n"
      "  rope_theta: 10000\n");
  EXPECT_EQ(s.model.dim, 256);
  EXPECT_FALSE(s.model.rope_scaling.has_value());
  EXPECT_FALSE(s.model.tie_embeddings);
}

// ---- enums ------------------------------------------------------------------------------------

TEST(SpecValidate, ModelDtypeEnum) {
  EXPECT_EQ(OnlyIssue("model:\n  dtype: bf61\n"),
            "t.yaml:2 [model.dtype] expected one of bf16, fp16, fp32, found \"bf61\"; did you "
            "mean \"bf16\"?");
}

TEST(SpecValidate, DistributedSectionIsReadAndChecked) {
  const RunSpec s = Load(
      "distributed:\n  backend: gloo\n  init_timeout_seconds: 20\n  timeout_seconds: 5.5\n"
      "  check_every_steps: 4\n  shard_base: node\n");
  EXPECT_EQ(s.distributed.backend, "gloo");
  EXPECT_EQ(s.distributed.shard_base, "node");
  EXPECT_EQ(Load("lora:\n").distributed.shard_base, "none");
  EXPECT_EQ(OnlyIssue("distributed:\n  shard_base: nodes\n"),
            "t.yaml:2 [distributed.shard_base] expected one of none, node, all, found \"nodes\"; "
            "did you mean \"node\"?");
  EXPECT_EQ(s.distributed.init_timeout_seconds, 20.0);
  EXPECT_EQ(s.distributed.timeout_seconds, 5.5);
  EXPECT_EQ(s.distributed.check_every_steps, 4);
  EXPECT_EQ(OnlyIssue("distributed:\n  backend: mpi\n"),
            "t.yaml:2 [distributed.backend] expected one of auto, gloo, nccl, found \"mpi\"");
  EXPECT_EQ(OnlyIssue("distributed:\n  timeout_seconds: 0.5\n"),
            "t.yaml:2 [distributed.timeout_seconds] must be a number of seconds from 1 to 86400 "
            "(a day), found 0.5");
  EXPECT_EQ(OnlyIssue("distributed:\n  timeoutseconds: 5\n"),
            "t.yaml:2 [distributed.timeoutseconds] unknown key \"timeoutseconds\"; did you mean "
            "\"timeout_seconds\"?");
  EXPECT_EQ(OnlyIssue("distributed:\n  check_every_steps: -1\n"),
            "t.yaml:2 [distributed.check_every_steps] must be an integer >= 0, found -1");
}

TEST(SpecValidate, EnumSuggestionIgnoresCase) {
  EXPECT_EQ(OnlyIssue("model:\n  dtype: FP32\n"),
            "t.yaml:2 [model.dtype] expected one of bf16, fp16, fp32, found \"FP32\"; did you "
            "mean \"fp32\"?");
}

TEST(SpecValidate, LoraDtypeEnumAcceptsBase) {
  EXPECT_EQ(Load("lora:\n  dtype: base\n").lora.dtype, "base");
  EXPECT_EQ(OnlyIssue("lora:\n  dtype: int8\n"),
            "t.yaml:2 [lora.dtype] expected one of bf16, fp16, fp32, base, found \"int8\"");
}

TEST(SpecValidate, Fp16AdaptersAreRejected) {
  EXPECT_EQ(OnlyIssue("lora:\n  dtype: fp16\n"),
            "t.yaml:2 [lora.dtype] fp16 adapters are not supported: AdamW's state underflows in "
            "fp16; use fp32 (the default) or bf16, found \"fp16\"");
  EXPECT_EQ(OnlyIssue("model:\n  dtype: fp16\nlora:\n  dtype: base\n"),
            "t.yaml:4 [lora.dtype] fp16 adapters are not supported: AdamW's state underflows in "
            "fp16; use fp32 (the default) or bf16, found \"base (model.dtype fp16)\"");
  EXPECT_EQ(Load("model:\n  dtype: fp16\n").lora.dtype, "fp32");  // fp16 base, fp32 adapters
}

TEST(SpecValidate, ReservedInitKeysPointToModelCheckpoint) {
  const std::string replaced =
      "was replaced by model.checkpoint: a Hugging Face checkpoint folder to load the base "
      "weights from (random weights without it)";
  EXPECT_EQ(OnlyIssue("model:\n  init: random\n"), "t.yaml:2 [model.init] " + replaced);
  EXPECT_EQ(OnlyIssue("model:\n  checkpoint_path: /w\n"),
            "t.yaml:2 [model.checkpoint_path] " + replaced);
}

TEST(SpecValidate, LoraTargetsUnknown) {
  EXPECT_EQ(OnlyIssue("lora:\n  targets: [q, gaet]\n"),
            "t.yaml:2 [lora.targets] unknown target \"gaet\"; expected one of q, k, v, o, gate, "
            "up, down, output; did you mean \"gate\"?");
}

TEST(SpecValidate, LoraTargetsNoDuplicates) {
  EXPECT_EQ(OnlyIssue("lora:\n  targets: [q, v, q]\n"),
            "t.yaml:2 [lora.targets] target \"q\" is listed more than once");
}

TEST(SpecValidate, LoraTargetsNonEmpty) {
  EXPECT_EQ(OnlyIssue("lora:\n  targets: []\n"),
            "t.yaml:2 [lora.targets] must list at least one of q, k, v, o, gate, up, down, "
            "output, found an empty list");
}

TEST(SpecValidate, DataSourceEnum) {
  EXPECT_EQ(OnlyIssue("data:\n  source: alpaca\n"),
            "t.yaml:2 [data.source] expected one of synthetic, file, found \"alpaca\"");
}

TEST(SpecValidate, DataTokenizerMustBeNamed) {
  EXPECT_EQ(OnlyIssue("data:\n  tokenizer: \"\"\n"),
            "t.yaml:2 [data.tokenizer] expected \"byte\", a tokenizer.json file or folder, a "
            "SentencePiece .model file, or \"none\" for pre-tokenized data, found \"\"");
  // A path is checked when the run loads it (the spec loader reads no other file).
  EXPECT_NO_THROW(
      load_spec_from_string("data:\n  source: file\n  path: a.jsonl\n"
                            "  tokenizer: /models/llama3/tokenizer.json\n"
                            "model:\n  vocab_size: 128\n",
                            "t.yaml"));
  // Synthetic data is made of byte-tokenizer tokens.
  EXPECT_EQ(OnlyIssue("data:\n  tokenizer: /models/llama3\n"),
            "t.yaml:2 [data.tokenizer] synthetic data is generated in the byte tokenizer's tokens; "
            "use \"byte\" or data.source: file, found \"/models/llama3\"");
}

TEST(SpecValidate, ValidationDataAndEvaluation) {
  const std::string file = "data:\n  source: file\n  path: a.jsonl\n";
  EXPECT_EQ(OnlyIssue(file + "  validation_fraction: 0.1\n  validation_path: v.jsonl\n"),
            "t.yaml:5 [data.validation_path] give data.validation_fraction or "
            "data.validation_path, not both");
  EXPECT_EQ(OnlyIssue(file + "  validation_fraction: 1\n"),
            "t.yaml:4 [data.validation_fraction] must be a number in [0, 1), found 1");
  EXPECT_EQ(OnlyIssue("data:\n  validation_fraction: 0.1\n"),
            "t.yaml:2 [data.validation_fraction] validation data needs data.source: file");
  EXPECT_EQ(OnlyIssue(file + "train:\n  eval_every_steps: 10\n"),
            "t.yaml:5 [train.eval_every_steps] needs validation data: set "
            "data.validation_fraction or data.validation_path");
  EXPECT_NO_THROW(load_spec_from_string(
      file + "  validation_fraction: 0.1\ntrain:\n  eval_every_steps: 10\n", "t.yaml"));
}

TEST(SpecValidate, DataFileNeedsAPathAndSyntheticHasNone) {
  // No line: the key is absent.
  EXPECT_EQ(OnlyIssue("data:\n  source: file\n"),
            "t.yaml:0 [data.path] data.source is file: give the data file (.json or .jsonl)");
  EXPECT_EQ(OnlyIssue("data:\n  path: alpaca.json\n"),
            "t.yaml:2 [data.path] is only read with data.source: file (data.source is synthetic), "
            "found \"alpaca.json\"");
  EXPECT_EQ(OnlyIssue("data:\n  source: file\n  path: a.jsonl\n  format: alpca\n"),
            "t.yaml:4 [data.format] expected one of auto, alpaca, chat, text, tokenized, found "
            "\"alpca\"; did you mean \"alpaca\"?");
  EXPECT_EQ(OnlyIssue("data:\n  source: file\n  path: a.jsonl\n  too_long: cut\n"),
            "t.yaml:4 [data.too_long] expected one of truncate, drop, found \"cut\"");
  EXPECT_EQ(OnlyIssue("data:\n  source: file\n  path: a.jsonl\n  on_error: ignore\n"),
            "t.yaml:4 [data.on_error] expected one of fail, skip, found \"ignore\"");
  EXPECT_EQ(OnlyIssue("data:\n  source: file\n  path: a.jsonl\n  max_examples: -1\n"),
            "t.yaml:4 [data.max_examples] must be an integer >= 0, found -1");
  EXPECT_EQ(OnlyIssue("data:\n  source: file\n  path: a.jsonl\n  subset: last\n"),
            "t.yaml:4 [data.subset] expected one of first, random, found \"last\"");
  // A file's size is known when it is read: num_examples does not bound the steps then.
  EXPECT_NO_THROW(load_spec_from_string(
      "data:\n  source: file\n  path: a.jsonl\n  num_examples: 1\ntrain:\n  micro_batch_size: 8\n",
      "t.yaml"));
}

TEST(SpecValidate, DataLengthDistributionEnum) {
  EXPECT_EQ(OnlyIssue("data:\n  length_distribution: lognormla\n"),
            "t.yaml:2 [data.length_distribution] expected one of fixed, uniform, lognormal, "
            "found \"lognormla\"; did you mean \"lognormal\"?");
}

TEST(SpecValidate, DataPaddingEnum) {
  EXPECT_EQ(OnlyIssue("data:\n  padding: max\n"),
            "t.yaml:2 [data.padding] expected one of longest, max_length, pack, found \"max\"");
}

TEST(SpecValidate, TrainOptimizerEnum) {
  EXPECT_EQ(OnlyIssue("train:\n  optimizer: adam\n"),
            "t.yaml:2 [train.optimizer] expected one of adamw, found \"adam\"; did you mean "
            "\"adamw\"?");
}

TEST(SpecValidate, TrainLrScheduleEnum) {
  EXPECT_EQ(OnlyIssue("train:\n  lr_schedule: cosin\n"),
            "t.yaml:2 [train.lr_schedule] expected one of cosine, linear, constant, found "
            "\"cosin\"; did you mean \"cosine\"?");
}

TEST(SpecValidate, BackendDeviceEnum) {
  EXPECT_EQ(OnlyIssue("backend:\n  device: gpu\n"),
            "t.yaml:2 [backend.device] expected one of auto, cpu, cuda, rocm, found \"gpu\"; did "
            "you mean \"cpu\"?");
}

TEST(SpecValidate, OutputProgressEnum) {
  EXPECT_EQ(OnlyIssue("output:\n  progress: never\n"),
            "t.yaml:2 [output.progress] expected one of auto, on, off, found \"never\"");
}

// ---- model ranges and shape rules -------------------------------------------------------------

TEST(SpecValidate, ModelDimsPositive) {
  EXPECT_EQ(OnlyIssue("model:\n  dim: 0\n"),
            "t.yaml:2 [model.dim] must be an integer >= 1, found 0");
  EXPECT_EQ(OnlyIssue("model:\n  n_layers: 0\n"),
            "t.yaml:2 [model.n_layers] must be an integer >= 1, found 0");
  EXPECT_EQ(OnlyIssue("model:\n  n_heads: 0\n"),
            "t.yaml:2 [model.n_heads] must be an integer >= 1, found 0");
  EXPECT_EQ(OnlyIssue("model:\n  n_kv_heads: -2\n"),
            "t.yaml:2 [model.n_kv_heads] must be an integer >= 1, found -2");
  EXPECT_EQ(OnlyIssue("model:\n  ffn_dim: 0\n"),
            "t.yaml:2 [model.ffn_dim] must be an integer >= 1, found 0");
  EXPECT_EQ(OnlyIssue("model:\n  max_seq_len: 0\n"),
            "t.yaml:2 [model.max_seq_len] must be an integer >= 1, found 0");
}

TEST(SpecValidate, VocabHoldsByteTokenizer) {
  EXPECT_EQ(OnlyIssue("model:\n  vocab_size: 258\n"),
            "t.yaml:2 [model.vocab_size] must be an integer >= 259 (the byte tokenizer's 256 "
            "bytes + BOS, EOS, PAD), found 258");
  EXPECT_EQ(Load("model:\n  vocab_size: 259\n").model.vocab_size, 259);
}

TEST(SpecValidate, NormEpsPositive) {
  EXPECT_EQ(OnlyIssue("model:\n  norm_eps: 0\n"),
            "t.yaml:2 [model.norm_eps] must be a number > 0, found 0");
}

TEST(SpecValidate, RopeThetaPositive) {
  EXPECT_EQ(OnlyIssue("model:\n  rope_theta: -1\n"),
            "t.yaml:2 [model.rope_theta] must be a number > 0, found -1");
}

TEST(SpecValidate, HeadsDivideDim) {
  EXPECT_EQ(OnlyIssue("model:\n  dim: 256\n  n_heads: 6\n"),
            "t.yaml:3 [model.n_heads] 6 does not divide model.dim 256");
}

TEST(SpecValidate, HeadDimEven) {
  EXPECT_EQ(OnlyIssue("model:\n  dim: 72\n  n_heads: 8\n"),
            "t.yaml:2 [model.dim] head dimension model.dim / model.n_heads = 72 / 8 = 9 must be "
            "even (rotary embeddings rotate pairs of dimensions)");
}

TEST(SpecValidate, KvHeadsDivideHeads) {
  EXPECT_EQ(OnlyIssue("model:\n  n_kv_heads: 3\n"),
            "t.yaml:2 [model.n_kv_heads] 3 does not divide model.n_heads 4");
}

TEST(SpecValidate, PresetValueIssueHasLineZero) {
  // n_heads comes from the preset (no line), the offending dim from the file.
  EXPECT_EQ(OnlyIssue("model:\n  dim: 66\n"),
            "t.yaml:0 [model.n_heads] 4 does not divide model.dim 66");
}

TEST(SpecValidate, RopeScalingFactorAtLeastOne) {
  EXPECT_EQ(OnlyIssue("model:\n  rope_scaling:\n    factor: 0.5\n"),
            "t.yaml:3 [model.rope_scaling.factor] must be a number >= 1, found 0.5");
}

TEST(SpecValidate, RopeScalingLowBelowHigh) {
  EXPECT_EQ(OnlyIssue("model:\n  rope_scaling:\n    low_freq_factor: 4\n"),
            "t.yaml:3 [model.rope_scaling.low_freq_factor] must be < "
            "model.rope_scaling.high_freq_factor (4), found 4");
}

TEST(SpecValidate, RopeScalingLowPositive) {
  EXPECT_EQ(OnlyIssue("model:\n  rope_scaling:\n    low_freq_factor: 0\n"),
            "t.yaml:3 [model.rope_scaling.low_freq_factor] must be a number > 0, found 0");
}

TEST(SpecValidate, RopeScalingOriginalPositive) {
  EXPECT_EQ(OnlyIssue("model:\n  rope_scaling:\n    original_max_position_embeddings: 0\n"),
            "t.yaml:3 [model.rope_scaling.original_max_position_embeddings] must be an integer "
            ">= 1, found 0");
}

// ---- lora ranges ------------------------------------------------------------------------------

TEST(SpecValidate, LoraRankAtLeastOne) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: 0\n"),
            "t.yaml:2 [lora.rank] must be an integer >= 1, found 0");
}

TEST(SpecValidate, LoraAlphaPositive) {
  EXPECT_EQ(OnlyIssue("lora:\n  alpha: 0\n"),
            "t.yaml:2 [lora.alpha] must be a number > 0, found 0");
}

TEST(SpecValidate, LoraDropoutHalfOpenUnitInterval) {
  EXPECT_EQ(OnlyIssue("lora:\n  dropout: 1\n"),
            "t.yaml:2 [lora.dropout] must be a number in [0, 1), found 1");
  EXPECT_EQ(OnlyIssue("lora:\n  dropout: -0.1\n"),
            "t.yaml:2 [lora.dropout] must be a number in [0, 1), found -0.1");
  EXPECT_EQ(Load("lora:\n  dropout: 0\n").lora.dropout, 0.0);
}

// ---- data ranges ------------------------------------------------------------------------------

TEST(SpecValidate, NumExamplesAtLeastOne) {
  EXPECT_EQ(OnlyIssue("data:\n  num_examples: 0\n"),
            "t.yaml:2 [data.num_examples] must be an integer >= 1, found 0");
}

TEST(SpecValidate, SeqLenAtLeastTwo) {
  // min_tokens >= 2 cannot fit under seq_len 1, which is reported too.
  EXPECT_EQ(IssuesOf("data:\n  seq_len: 1\n  min_tokens: 2\n  max_tokens: 2\n"),
            (std::vector<std::string>{
                "t.yaml:2 [data.seq_len] must be an integer >= 2, found 1",
                "t.yaml:4 [data.max_tokens] must be <= data.seq_len (1), found 2",
            }));
}

TEST(SpecValidate, SeqLenWithinModelContext) {
  EXPECT_EQ(OnlyIssue("data:\n  seq_len: 1024\n"),
            "t.yaml:2 [data.seq_len] must be <= model.max_seq_len (512), found 1024");
}

TEST(SpecValidate, MinTokensAtLeastTwo) {
  EXPECT_EQ(OnlyIssue("data:\n  min_tokens: 1\n"),
            "t.yaml:2 [data.min_tokens] must be an integer >= 2, found 1");
}

TEST(SpecValidate, MinTokensAtMostMaxTokens) {
  EXPECT_EQ(OnlyIssue("data:\n  min_tokens: 200\n  max_tokens: 100\n"),
            "t.yaml:2 [data.min_tokens] must be <= data.max_tokens (100), found 200");
}

TEST(SpecValidate, MaxTokensAtMostSeqLen) {
  EXPECT_EQ(OnlyIssue("data:\n  seq_len: 128\n  max_tokens: 129\n"),
            "t.yaml:3 [data.max_tokens] must be <= data.seq_len (128), found 129");
}

TEST(SpecValidate, DefaultMaxTokensAboveShorterSeqLenHasLineZero) {
  EXPECT_EQ(OnlyIssue("data:\n  seq_len: 128\n"),
            "t.yaml:0 [data.max_tokens] must be <= data.seq_len (128), found 256");
}

TEST(SpecValidate, LognormalMedianPositive) {
  EXPECT_EQ(OnlyIssue("data:\n  lognormal_median_tokens: 0\n"),
            "t.yaml:2 [data.lognormal_median_tokens] must be a number > 0, found 0");
}

TEST(SpecValidate, LognormalSigmaNonNegative) {
  EXPECT_EQ(OnlyIssue("data:\n  lognormal_sigma: -0.5\n"),
            "t.yaml:2 [data.lognormal_sigma] must be a number >= 0, found -0.5");
}

TEST(SpecValidate, PromptFractionHalfOpenUnitInterval) {
  EXPECT_EQ(OnlyIssue("data:\n  prompt_fraction: 1\n"),
            "t.yaml:2 [data.prompt_fraction] must be a number in [0, 1), found 1");
}

// ---- train ranges -----------------------------------------------------------------------------

TEST(SpecValidate, EpochsAtLeastOne) {
  EXPECT_EQ(OnlyIssue("train:\n  epochs: 0\n"),
            "t.yaml:2 [train.epochs] must be an integer >= 1, found 0");
}

TEST(SpecValidate, MaxStepsNonNegative) {
  EXPECT_EQ(OnlyIssue("train:\n  max_steps: -1\n"),
            "t.yaml:2 [train.max_steps] must be an integer >= 0, found -1");
}

TEST(SpecValidate, MicroBatchSizeAtLeastOne) {
  EXPECT_EQ(OnlyIssue("train:\n  micro_batch_size: 0\n"),
            "t.yaml:2 [train.micro_batch_size] must be an integer >= 1, found 0");
}

TEST(SpecValidate, GradAccumStepsAtLeastOne) {
  EXPECT_EQ(OnlyIssue("train:\n  grad_accum_steps: 0\n"),
            "t.yaml:2 [train.grad_accum_steps] must be an integer >= 1, found 0");
}

TEST(SpecValidate, LrPositive) {
  EXPECT_EQ(OnlyIssue("train:\n  lr: 0\n"), "t.yaml:2 [train.lr] must be a number > 0, found 0");
}

TEST(SpecValidate, WeightDecayNonNegative) {
  EXPECT_EQ(OnlyIssue("train:\n  weight_decay: -0.01\n"),
            "t.yaml:2 [train.weight_decay] must be a number >= 0, found -0.01");
}

TEST(SpecValidate, BetasHalfOpenUnitInterval) {
  EXPECT_EQ(OnlyIssue("train:\n  beta1: 1\n"),
            "t.yaml:2 [train.beta1] must be a number in [0, 1), found 1");
  EXPECT_EQ(OnlyIssue("train:\n  beta2: -0.5\n"),
            "t.yaml:2 [train.beta2] must be a number in [0, 1), found -0.5");
}

TEST(SpecValidate, EpsPositive) {
  EXPECT_EQ(OnlyIssue("train:\n  eps: 0\n"), "t.yaml:2 [train.eps] must be a number > 0, found 0");
}

TEST(SpecValidate, LrWarmupStepsNonNegative) {
  EXPECT_EQ(OnlyIssue("train:\n  lr_warmup_steps: -1\n"),
            "t.yaml:2 [train.lr_warmup_steps] must be an integer >= 0, found -1");
}

TEST(SpecValidate, MinLrRatioClosedUnitInterval) {
  EXPECT_EQ(OnlyIssue("train:\n  min_lr_ratio: 1.5\n"),
            "t.yaml:2 [train.min_lr_ratio] must be a number in [0, 1], found 1.5");
  EXPECT_EQ(Load("train:\n  min_lr_ratio: 1\n").train.min_lr_ratio, 1.0);
}

TEST(SpecValidate, MaxGradNormNonNegative) {
  EXPECT_EQ(OnlyIssue("train:\n  max_grad_norm: -1\n"),
            "t.yaml:2 [train.max_grad_norm] must be a number >= 0, found -1");
}

TEST(SpecValidate, TimingWarmupStepsNonNegative) {
  EXPECT_EQ(OnlyIssue("train:\n  timing_warmup_steps: -1\n"),
            "t.yaml:2 [train.timing_warmup_steps] must be an integer >= 0, found -1");
}

TEST(SpecValidate, LossWindowAtLeastOne) {
  EXPECT_EQ(OnlyIssue("train:\n  loss_window: 0\n"),
            "t.yaml:2 [train.loss_window] must be an integer >= 1, found 0");
}

TEST(SpecValidate, AtLeastOneOptimizerStepPerEpoch) {
  EXPECT_EQ(OnlyIssue("data:\n  num_examples: 10\ntrain:\n  micro_batch_size: 4\n"
                      "  grad_accum_steps: 4\n"),
            "t.yaml:2 [data.num_examples] 10 examples make 0 optimizer steps with "
            "micro_batch_size 4 x grad_accum_steps 4 (need at least 16)");
  EXPECT_EQ(OnlyIssue("data:\n  num_examples: 1\ntrain:\n  micro_batch_size: 1\n"
                      "  grad_accum_steps: 2\n"),
            "t.yaml:2 [data.num_examples] 1 example makes 0 optimizer steps with "
            "micro_batch_size 1 x grad_accum_steps 2 (need at least 2)");
  EXPECT_EQ(Load("data:\n  num_examples: 16\ntrain:\n  micro_batch_size: 4\n"
                 "  grad_accum_steps: 4\n")
                .data.num_examples,
            16);
}

// ---- backend and output -----------------------------------------------------------------------

TEST(SpecValidate, DeviceIndexNonNegative) {
  EXPECT_EQ(OnlyIssue("backend:\n  device_index: -1\n"),
            "t.yaml:2 [backend.device_index] must be an integer >= 0, found -1");
}

TEST(SpecValidate, ThreadsNonNegative) {
  EXPECT_EQ(OnlyIssue("backend:\n  threads: -4\n"),
            "t.yaml:2 [backend.threads] must be an integer >= 0, found -4");
}

TEST(SpecValidate, EnergySampleIntervalWithinBounds) {
  EXPECT_EQ(OnlyIssue("backend:\n  energy_sample_ms: 5\n"),
            "t.yaml:2 [backend.energy_sample_ms] must be an integer >= 10, found 5");
  EXPECT_EQ(OnlyIssue("backend:\n  energy_sample_ms: 10001\n"),
            "t.yaml:2 [backend.energy_sample_ms] must be an integer <= 10000 (readings further "
            "apart than 10 s), found 10001");
  EXPECT_EQ(OnlyIssue("backend:\n  energy_sample_ms: 0.5\n"),
            "t.yaml:2 [backend.energy_sample_ms] expected an integer, found \"0.5\"");
}

// At least 1 GFLOP/s: MFU is divided by it, and 1e-320 printed "MFU inf%".
TEST(SpecValidate, PeakTflopsAtLeastOneGflopWhenGiven) {
  EXPECT_EQ(OnlyIssue("backend:\n  peak_tflops: 0\n"),
            "t.yaml:2 [backend.peak_tflops] must be a number >= 0.001, found 0");
  EXPECT_EQ(OnlyIssue("backend:\n  peak_tflops: 1e-320\n"),
            "t.yaml:2 [backend.peak_tflops] must be a number >= 0.001, found 1e-320");
}

TEST(SpecValidate, ReportPathNonEmpty) {
  EXPECT_EQ(OnlyIssue("output:\n  report: \"\"\n"), "t.yaml:2 [output.report] must not be empty");
}

TEST(SpecValidate, NameNonEmpty) {
  EXPECT_EQ(OnlyIssue("output:\n  name: ''\n"), "t.yaml:2 [output.name] must not be empty");
}

TEST(SpecValidate, NameCharacters) {
  EXPECT_EQ(OnlyIssue("output:\n  name: my run/1\n"),
            "t.yaml:2 [output.name] must match [A-Za-z0-9._-]+, found \"my run/1\"");
}

TEST(SpecValidate, LogEveryStepsAtLeastOne) {
  EXPECT_EQ(OnlyIssue("output:\n  log_every_steps: 0\n"),
            "t.yaml:2 [output.log_every_steps] must be an integer >= 1, found 0");
}

TEST(SpecValidate, TypeErrorIsNotRepeatedAsRangeError) {
  // The unreadable key keeps its default; no second issue about it.
  EXPECT_EQ(IssuesOf("model:\n  preset: custom\n  dim: abc\n  n_layers: 1\n  n_heads: 2\n"
                     "  n_kv_heads: 1\n  ffn_dim: 8\n  vocab_size: 300\n  max_seq_len: 256\n"
                     "  norm_eps: 1e-5\n  rope_theta: 10000\n"),
            (std::vector<std::string>{"t.yaml:3 [model.dim] expected an integer, found \"abc\""}));
}

TEST(SpecValidate, ValidateOnFilledSpecHasNoLines) {
  RunSpec s = Load(kAllDefaults);
  s.lora.rank = 0;
  s.source_path = "x.yaml";
  const std::vector<SpecIssue> issues = validate(s);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(Show(issues[0]), "x.yaml:0 [lora.rank] must be an integer >= 1, found 0");
}

// ---- --set overrides --------------------------------------------------------------------------

TEST(SpecOverride, SetsScalarsOfEachType) {
  const RunSpec s = Load(kAllDefaults, {"lora.rank=8", "lora.alpha=2.5", "data.shuffle=false",
                                        "output.name=123", "backend.peak_tflops=989"});
  EXPECT_EQ(s.lora.rank, 8);
  EXPECT_EQ(s.lora.alpha, 2.5);
  EXPECT_FALSE(s.data.shuffle);
  EXPECT_EQ(s.output.name, "123");
  EXPECT_EQ(s.backend.peak_tflops, 989.0);
}

TEST(SpecOverride, ReplacesFileValueAndKeepsOthers) {
  const RunSpec s = Load("lora:\n  rank: 4\n  alpha: 8\n", {"lora.rank=32"});
  EXPECT_EQ(s.lora.rank, 32);
  EXPECT_EQ(s.lora.alpha, 8.0);
}

TEST(SpecOverride, AppliedInOrder) {
  EXPECT_EQ(Load(kAllDefaults, {"lora.rank=8", "lora.rank=4"}).lora.rank, 4);
}

TEST(SpecOverride, SetsList) {
  EXPECT_EQ(Load(kAllDefaults, {"lora.targets=[q,v,gate]"}).lora.targets,
            (std::vector<std::string>{"q", "v", "gate"}));
}

TEST(SpecOverride, NullRemovesRopeScaling) {
  EXPECT_FALSE(Load("model:\n  preset: llama3.1-8b\n", {"model.rope_scaling=null"})
                   .model.rope_scaling.has_value());
}

TEST(SpecOverride, SetsRopeScalingField) {
  const RunSpec s = Load("model:\n  preset: llama3.1-8b\n", {"model.rope_scaling.factor=16"});
  ASSERT_TRUE(s.model.rope_scaling.has_value());
  EXPECT_EQ(s.model.rope_scaling->factor, 16.0);
  EXPECT_EQ(s.model.rope_scaling->original_max_position_embeddings, 8192);
}

TEST(SpecOverride, SetsWholeSection) {
  const RunSpec s = Load("lora:\n  rank: 4\n", {"lora={rank: 2, targets: [o]}"});
  EXPECT_EQ(s.lora.rank, 2);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"o"}));
}

TEST(SpecOverride, ChangesPreset) {
  const RunSpec s = Load("model:\n  preset: tiny\n", {"model.preset=llama2-7b"});
  EXPECT_EQ(s.model.dim, 4096);
  EXPECT_EQ(s.model.vocab_size, 32000);
}

TEST(SpecOverride, ValueIsValidatedWithSetAsFile) {
  EXPECT_EQ(OnlyIssue("lora:\n  rank: 4\n", {"lora.rank=0"}),
            "--set:0 [lora.rank] must be an integer >= 1, found 0");
}

TEST(SpecOverride, WrongType) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora.rank=abc"}),
            "--set:0 [lora.rank] expected an integer, found \"abc\"");
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora.targets=q"}),
            "--set:0 [lora.targets] expected a list of strings, found \"q\"");
}

TEST(SpecOverride, SectionSetIssuesPointAtSet) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora={rank: 0}"}),
            "--set:0 [lora.rank] must be an integer >= 1, found 0");
}

TEST(SpecOverride, UnknownKeySuggestsClosest) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora.rnak=8"}),
            "--set:0 [lora.rnak] unknown key \"rnak\"; did you mean \"rank\"?");
}

TEST(SpecOverride, UnknownSection) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"trian.lr=1"}),
            "--set:0 [trian.lr] unknown section \"trian\"; did you mean \"train\"?");
}

TEST(SpecOverride, UnknownRopeScalingKey) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"model.rope_scaling.factr=2"}),
            "--set:0 [model.rope_scaling.factr] unknown key \"factr\"; did you mean \"factor\"?");
}

TEST(SpecOverride, ScalarKeyHasNoSubKeys) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora.rank.x=1"}),
            "--set:0 [lora.rank.x] lora.rank has no sub-keys");
}

TEST(SpecOverride, MissingEquals) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora.rank"}),
            "--set:0 [] expected key.path=value, found \"lora.rank\"");
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"=8"}), "--set:0 [] expected key.path=value, found \"=8\"");
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora..rank=8"}),
            "--set:0 [] expected key.path=value, found \"lora..rank=8\"");
}

TEST(SpecOverride, UnparsableValue) {
  EXPECT_EQ(OnlyIssue(kAllDefaults, {"lora.targets=[q, v"}),
            "--set:0 [lora.targets] cannot parse value \"[q, v\" as YAML: end of sequence flow "
            "not found");
}

TEST(SpecOverride, FileIssuesKeepTheirLines) {
  EXPECT_EQ(IssuesOf("lora:\n  alpha: 0\n", {"lora.rank=0"}),
            (std::vector<std::string>{
                "--set:0 [lora.rank] must be an integer >= 1, found 0",
                "t.yaml:2 [lora.alpha] must be a number > 0, found 0",
            }));
}

TEST(SpecOverride, FixesABadFileValue) {
  EXPECT_EQ(Load("lora:\n  rank: 0\n", {"lora.rank=8"}).lora.rank, 8);
}

TEST(SpecOverride, CustomPresetKeysGivenBySet) {
  const RunSpec s = Load(
      kAllDefaults, {"model.preset=custom", "model.dim=128", "model.n_layers=1", "model.n_heads=2",
                     "model.n_kv_heads=1", "model.ffn_dim=256", "model.vocab_size=300",
                     "model.max_seq_len=256", "model.norm_eps=1e-5", "model.rope_theta=10000"});
  EXPECT_EQ(s.model.dim, 128);
  EXPECT_EQ(s.model.max_seq_len, 256);
}

// ---- shipped configs --------------------------------------------------------------------------

TEST(SpecConfigs, CiTiny) {
  const RunSpec s = load_spec(FTBENCH_SOURCE_DIR "/configs/ci-tiny.yaml");
  EXPECT_EQ(s.model.preset, "tiny");
  EXPECT_EQ(s.model.dtype, "fp32");
  EXPECT_EQ(s.lora.rank, 8);
  EXPECT_EQ(s.lora.alpha, 16.0);
  EXPECT_EQ(s.lora.dropout, 0.05);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"q", "k", "v", "o", "gate", "up", "down"}));
  EXPECT_EQ(s.data.num_examples, 64);
  EXPECT_EQ(s.data.seq_len, 128);
  EXPECT_EQ(s.data.length_distribution, "uniform");
  EXPECT_EQ(s.data.min_tokens, 24);
  EXPECT_EQ(s.data.max_tokens, 128);
  // 64 / 4 / 2 = 8 optimizer steps.
  EXPECT_EQ(s.data.num_examples / s.train.micro_batch_size / s.train.grad_accum_steps, 8);
  EXPECT_EQ(s.train.lr, 1e-3);
  EXPECT_EQ(s.train.lr_warmup_steps, 2);
  EXPECT_EQ(s.train.lr_schedule, "cosine");
  EXPECT_EQ(s.train.timing_warmup_steps, 2);
  EXPECT_EQ(s.train.loss_window, 4);
  EXPECT_EQ(s.backend.device, "cpu");
  EXPECT_EQ(s.backend.threads, 0);
  EXPECT_EQ(s.output.report, "reports/ci-tiny.json");
  EXPECT_EQ(s.output.name, "ci-tiny");
}

// The reference recipe reads the user's Alpaca subset through the Llama 3 tokenizer.
TEST(SpecConfigs, Llama31_8bLoraReadsAlpacaThroughTheLlama3Tokenizer) {
  const RunSpec s = load_spec(FTBENCH_SOURCE_DIR "/configs/llama3.1-8b-lora.yaml");
  EXPECT_EQ(s.data.source, "file");
  EXPECT_EQ(s.data.path, "data/alpaca-2k.jsonl");
  EXPECT_EQ(s.data.format, "alpaca");
  EXPECT_EQ(s.data.tokenizer, "models/llama3.1-8b");
  EXPECT_FALSE(s.data.train_on_input);
  EXPECT_EQ(s.data.seq_len, 2048);
  EXPECT_EQ(s.data.padding, "longest");
  // Same job as the synthetic variant in everything but the data.
  const RunSpec synthetic =
      load_spec(FTBENCH_SOURCE_DIR "/configs/llama3.1-8b-lora-synthetic.yaml");
  EXPECT_EQ(to_json(s)["model"], to_json(synthetic)["model"]);
  EXPECT_EQ(to_json(s)["lora"], to_json(synthetic)["lora"]);
  EXPECT_EQ(to_json(s)["train"], to_json(synthetic)["train"]);
}

TEST(SpecConfigs, Llama31_8bLoraSynthetic) {
  const RunSpec s = load_spec(FTBENCH_SOURCE_DIR "/configs/llama3.1-8b-lora-synthetic.yaml");
  EXPECT_EQ(s.model.preset, "llama3.1-8b");
  EXPECT_EQ(s.model.dim, 4096);
  EXPECT_EQ(s.model.dtype, "bf16");
  EXPECT_EQ(s.model.activation_checkpointing, "full");
  EXPECT_EQ(s.lora.rank, 16);
  EXPECT_EQ(s.lora.alpha, 32.0);
  EXPECT_EQ(s.lora.dropout, 0.05);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"q", "v", "o"}));
  EXPECT_EQ(s.lora.dtype, "bf16");  // torchtune's recipe builds the adapters in its dtype
  EXPECT_EQ(s.data.num_examples, 2000);
  EXPECT_EQ(s.data.seq_len, 2048);
  EXPECT_EQ(s.data.length_distribution, "lognormal");
  EXPECT_EQ(s.data.lognormal_median_tokens, 300.0);
  EXPECT_EQ(s.data.lognormal_sigma, 0.6);
  EXPECT_EQ(s.data.min_tokens, 32);
  EXPECT_EQ(s.data.max_tokens, 2048);
  EXPECT_EQ(s.data.padding, "longest");
  EXPECT_EQ(s.train.epochs, 3);
  EXPECT_EQ(s.train.micro_batch_size, 4);
  EXPECT_EQ(s.train.grad_accum_steps, 4);
  EXPECT_EQ(s.train.lr, 3e-4);
  EXPECT_EQ(s.train.weight_decay, 0.01);
  EXPECT_EQ(s.train.lr_warmup_steps, 100);
  EXPECT_EQ(s.train.lr_schedule, "cosine");
  EXPECT_EQ(s.train.max_grad_norm, 0.0);
  EXPECT_EQ(s.train.timing_warmup_steps, 5);
  EXPECT_EQ(s.train.loss_window, 20);
  EXPECT_EQ(s.backend.device, "auto");
  EXPECT_EQ(s.output.name, "llama3.1-8b-lora-synthetic");
  EXPECT_EQ(s.output.report, "reports/{name}.json");
}

TEST(SpecConfigs, CpuBench) {
  const RunSpec s = load_spec(FTBENCH_SOURCE_DIR "/configs/cpu-bench.yaml");
  EXPECT_EQ(s.model.preset, "custom");
  EXPECT_EQ(s.model.dim, 256);
  EXPECT_EQ(s.model.n_layers, 4);
  EXPECT_EQ(s.model.n_heads, 8);
  EXPECT_EQ(s.model.n_kv_heads, 4);
  EXPECT_EQ(s.model.ffn_dim, 688);
  EXPECT_EQ(s.model.vocab_size, 2048);
  EXPECT_EQ(s.model.max_seq_len, 256);
  EXPECT_EQ(s.model.norm_eps, 1e-5);
  EXPECT_EQ(s.model.rope_theta, 10000.0);
  EXPECT_FALSE(s.model.rope_scaling.has_value());
  EXPECT_FALSE(s.model.tie_embeddings);
  EXPECT_EQ(s.model.dtype, "fp32");
  EXPECT_EQ(s.lora.rank, 16);
  EXPECT_EQ(s.lora.alpha, 32.0);
  EXPECT_EQ(s.lora.dropout, 0.0);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"q", "v", "o"}));
  EXPECT_EQ(s.data.num_examples, 512);
  EXPECT_EQ(s.data.seq_len, 256);
  EXPECT_EQ(s.data.length_distribution, "fixed");
  EXPECT_EQ(s.data.min_tokens, 256);
  EXPECT_EQ(s.data.max_tokens, 256);
  EXPECT_EQ(s.data.padding, "max_length");
  EXPECT_EQ(s.train.epochs, 1);
  EXPECT_EQ(s.train.max_steps, 30);
  EXPECT_EQ(s.train.micro_batch_size, 8);
  EXPECT_EQ(s.train.grad_accum_steps, 1);
  EXPECT_EQ(s.train.lr, 1e-4);
  EXPECT_EQ(s.train.lr_warmup_steps, 0);
  EXPECT_EQ(s.train.lr_schedule, "constant");
  EXPECT_EQ(s.train.timing_warmup_steps, 5);
  EXPECT_EQ(s.backend.device, "cpu");
  EXPECT_EQ(s.output.name, "cpu-bench");
}

// torchtune's recipes/configs/llama3_1/8B_lora_single_device.yaml as it ships (pytorch/torchtune
// bd2a0fc, 2026-04-23), key by key; the file's top lists where ftbench differs.
TEST(SpecConfigs, TorchtuneLlama31_8bLoraSingleDevice) {
  const RunSpec s =
      load_spec(FTBENCH_SOURCE_DIR "/configs/torchtune-llama3.1-8b-lora-single-device.yaml");
  EXPECT_EQ(s.model.preset, "llama3.1-8b");
  EXPECT_EQ(s.model.max_seq_len, 131072);
  EXPECT_EQ(s.model.dtype, "bf16");
  EXPECT_EQ(s.model.activation_checkpointing, "full");
  EXPECT_EQ(s.model.checkpoint, "");
  // lora_rank 8, lora_alpha 16, lora_dropout 0.0 on q_proj, v_proj, output_proj and the MLP.
  EXPECT_EQ(s.lora.rank, 8);
  EXPECT_EQ(s.lora.alpha, 16.0);
  EXPECT_EQ(s.lora.dropout, 0.0);
  EXPECT_EQ(s.lora.targets, (std::vector<std::string>{"q", "v", "o", "gate", "up", "down"}));
  EXPECT_EQ(s.lora.dtype, "bf16");
  // alpaca_cleaned_dataset in the Llama 3 chat format, prompt in the loss; no max_seq_len in
  // torchtune: a bound for the plan that cuts nothing (a longer example is left out, counted).
  EXPECT_EQ(s.data.source, "file");
  EXPECT_EQ(s.data.path, "data/alpaca-cleaned-chat.jsonl");
  EXPECT_EQ(s.data.format, "chat");
  EXPECT_EQ(s.data.tokenizer, "models/llama3.1-8b-instruct");
  EXPECT_TRUE(s.data.train_on_input);
  EXPECT_EQ(s.data.seq_len, 4096);
  EXPECT_EQ(s.data.too_long, "drop");
  EXPECT_EQ(s.data.max_examples, 0);
  EXPECT_EQ(s.data.padding, "longest");
  EXPECT_TRUE(s.data.shuffle);
  EXPECT_EQ(s.train.epochs, 1);
  EXPECT_EQ(s.train.max_steps, 0);
  EXPECT_EQ(s.train.micro_batch_size, 2);
  EXPECT_EQ(s.train.grad_accum_steps, 8);
  EXPECT_EQ(s.train.optimizer, "adamw");
  EXPECT_EQ(s.train.lr, 3e-4);
  EXPECT_EQ(s.train.weight_decay, 0.01);
  EXPECT_EQ(s.train.beta1, 0.9);
  EXPECT_EQ(s.train.beta2, 0.999);
  EXPECT_EQ(s.train.eps, 1e-8);
  EXPECT_EQ(s.train.lr_schedule, "cosine");
  EXPECT_EQ(s.train.lr_warmup_steps, 100);
  EXPECT_EQ(s.train.min_lr_ratio, 0.0);
  EXPECT_EQ(s.train.max_grad_norm, 0.0);
  EXPECT_FALSE(s.train.oom_fallback);
  EXPECT_EQ(s.train.checkpoint.every_steps, 0);
  EXPECT_EQ(s.train.checkpoint.every_minutes, 0.0);
  EXPECT_EQ(s.output.log_every_steps, 1);
  // save_adapter_weights_only: False: the adapter and the merged model at the end.
  EXPECT_EQ(s.output.adapter, "exports/{name}/adapter");
  EXPECT_EQ(s.output.merged, "exports/{name}/merged");
  EXPECT_EQ(s.output.name, "torchtune-llama3.1-8b-lora-single-device");
}

}  // namespace
TEST(SpecLoader, CheckpointIsANestedMappingWithDefaults) {
  const RunSpec d = Load("train:\n  max_steps: 3\n");
  EXPECT_EQ(d.train.checkpoint.dir, "checkpoints/{name}");
  EXPECT_EQ(d.train.checkpoint.every_steps, 0);
  EXPECT_EQ(d.train.checkpoint.every_minutes, 0.0);
  EXPECT_EQ(d.train.checkpoint.keep_last, 2);
  const RunSpec s = Load("train:\n  checkpoint:\n    every_steps: 50\n    keep_last: 3\n",
                         {"train.checkpoint.every_minutes=7.5"});
  EXPECT_EQ(s.train.checkpoint.every_steps, 50);
  EXPECT_EQ(s.train.checkpoint.keep_last, 3);
  EXPECT_EQ(s.train.checkpoint.every_minutes, 7.5);
  EXPECT_EQ(s.train.checkpoint.dir, "checkpoints/{name}");
  // Checkpoint policy is not part of the job: the fingerprint stays.
  EXPECT_EQ(
      ftbench::spec::fingerprint(d.train.max_steps == 3 ? Load("train:\n  max_steps: 3\n") : d),
      ftbench::spec::fingerprint(
          Load("train:\n  max_steps: 3\n  checkpoint: {every_steps: 5, dir: x}\n")));
}

TEST(SpecLoader, CheckpointProblemsNameTheNestedKey) {
  EXPECT_EQ(OnlyIssue("train:\n  checkpoint:\n    keep_last: 0\n"),
            "t.yaml:3 [train.checkpoint.keep_last] must be an integer >= 1, found 0");
  EXPECT_EQ(OnlyIssue("train:\n  checkpoint: 5\n"),
            "t.yaml:2 [train.checkpoint] expected a mapping, found \"5\"");
  EXPECT_EQ(OnlyIssue("train:\n  checkpoint:\n    evry_steps: 5\n"),
            "t.yaml:3 [train.checkpoint.evry_steps] unknown key \"evry_steps\"; did you mean "
            "\"every_steps\"?");
}

}  // namespace ftbench::spec
