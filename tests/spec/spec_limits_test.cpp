// Counts that do not fit (issue 14, item 1) and specs that are not one spec (item 15): refused by
// validation with the keys named, never wrapped into a run of 0 steps.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spec/derived.h"
#include "spec/limits.h"
#include "spec/spec_loader.h"
#include "spec_issues.h"
#include "util/text/messages.h"

namespace ftbench::spec {
namespace {

using Issues = std::vector<std::string>;

TEST(SpecLimits, EpochsThatOverflowTheStepCountAreRefused) {
  // 4 examples, micro-batch 1: 4 steps an epoch; x 2^62 epochs wrapped to 0 steps, "completed".
  EXPECT_EQ(IssuesOf("data:\n  num_examples: 4\ntrain:\n  epochs: 4611686018427387904\n"
                     "  micro_batch_size: 1\n"),
            Issues({"t.yaml:4 [train.epochs] 4 steps per epoch x 4611686018427387904 epochs = "
                    "more than 2^63 optimizer steps; a run has at most 1,000,000 optimizer steps "
                    "(the report keeps every step): lower train.epochs or set train.max_steps"}));
}

TEST(SpecLimits, StepsBeyondTheCeilingAreRefusedAndMaxStepsCapsThem) {
  const std::string spec = "data:\n  num_examples: 256\ntrain:\n  micro_batch_size: 1\n";
  EXPECT_EQ(IssuesOf(spec + "  epochs: 3907\n"),
            Issues({"t.yaml:5 [train.epochs] 256 steps per epoch x 3907 epochs = 1,000,192 "
                    "optimizer steps; a run has at most 1,000,000 optimizer steps (the report "
                    "keeps every step): lower train.epochs or set train.max_steps"}));
  // One step fewer than the ceiling's epoch count fits.
  EXPECT_EQ(
      derive_counts(load_spec_from_string(spec + "  epochs: 3906\n", "t.yaml", {})).total_steps,
      999'936);
  // A cap makes any epoch count harmless, even one whose product does not fit.
  const RunSpec capped = load_spec_from_string(
      spec + "  epochs: 9223372036854775807\n  max_steps: 10\n", "t.yaml", {});
  EXPECT_EQ(derive_counts(capped).total_steps, 10);
  EXPECT_EQ(derive_counts(capped).steps_per_epoch, 256);
  EXPECT_EQ(IssuesOf(spec + "  epochs: 9223372036854775807\n  max_steps: 1000001\n"),
            Issues({"t.yaml:6 [train.max_steps] 1000001 caps the run at 1,000,001 optimizer "
                    "steps; a run has at most 1,000,000 optimizer steps (the report keeps every "
                    "step)"}));
}

TEST(SpecLimits, HugeExampleAndEpochCountsAreNotOneStep) {
  // Both at 2^63 - 1 made "total steps 1" and "spec is valid".
  EXPECT_EQ(IssuesOf("data:\n  num_examples: 9223372036854775807\ntrain:\n"
                     "  epochs: 9223372036854775807\n"),
            Issues({"t.yaml:2 [data.num_examples] must be an integer <= 16777216 (synthetic "
                    "examples are generated before the first step), found 9223372036854775807"}));
}

TEST(SpecLimits, EffectiveBatchThatOverflowsIsRefused) {
  // Gave "(need at least 0)".
  EXPECT_EQ(IssuesOf("train:\n  micro_batch_size: 4611686018427387904\n  grad_accum_steps: 4\n"),
            Issues({"t.yaml:2 [train.micro_batch_size] train.micro_batch_size x "
                    "train.grad_accum_steps = 4611686018427387904 x 4 is more than 2^63 examples "
                    "per optimizer step"}));
}

TEST(SpecLimits, TokensPerStepThatOverflowAreRefused) {
  EXPECT_EQ(IssuesOf("train:\n  micro_batch_size: 2147483648\n  grad_accum_steps: 2147483648\n"
                     "data:\n  seq_len: 128\n  max_tokens: 128\n"),
            Issues({"t.yaml:5 [data.seq_len] 4611686018427387904 examples per optimizer step x "
                    "data.seq_len 128 is more than 2^63 tokens per step"}));
}

TEST(SpecLimits, CustomShapeKeysGetTheBoundsOfConfigJson) {
  const std::string big = "4611686018427387904";
  const Issues issues = IssuesOf(
      "model:\n  preset: custom\n  dim: " + big + "\n  n_layers: " + big + "\n  n_heads: 4\n" +
      "  n_kv_heads: 4\n  ffn_dim: " + big + "\n  vocab_size: " + big + "\n  max_seq_len: " + big +
      "\n  norm_eps: 1e-5\n  rope_theta: 10000\n");
  EXPECT_EQ(
      issues,
      Issues({"t.yaml:3 [model.dim] must be an integer <= 16777216 (the largest size ftbench "
              "builds), found 4611686018427387904",
              "t.yaml:4 [model.n_layers] must be an integer <= 4096 (the most layers ftbench "
              "builds), found 4611686018427387904",
              "t.yaml:7 [model.ffn_dim] must be an integer <= 16777216 (the largest size ftbench "
              "builds), found 4611686018427387904",
              "t.yaml:8 [model.vocab_size] must be an integer <= 16777216 (the largest size "
              "ftbench builds), found 4611686018427387904",
              "t.yaml:9 [model.max_seq_len] must be an integer <= 16777216 (the largest size "
              "ftbench builds), found 4611686018427387904"}));
  // A preset's shape overridden the same way, and the adapters' rank.
  EXPECT_EQ(IssuesOf("model:\n  n_layers: 4097\nlora:\n  rank: 65537\n"),
            Issues({"t.yaml:2 [model.n_layers] must be an integer <= 4096 (the most layers "
                    "ftbench builds), found 4097",
                    "t.yaml:4 [lora.rank] must be an integer <= 65536 (the largest rank ftbench "
                    "builds), found 65537"}));
}

// backend.threads of 2^32 + 1 ran on 1 thread and the report said 4294967297; 2^63 - 1 was
// "valid" and failed in LibTorch.
TEST(SpecLimits, ThreadAndDeviceCountsAreBounded) {
  EXPECT_EQ(IssuesOf("backend:\n  threads: 4294967297\n  device_index: 65536\n"),
            Issues({"t.yaml:2 [backend.threads] must be an integer <= 65536 (more threads than a "
                    "machine has), found 4294967297",
                    "t.yaml:3 [backend.device_index] must be an integer <= 65535 (more GPUs than "
                    "a machine has), found 65536"}));
}

// A file of a million unknown keys took 27 s and 2.5 GB to list them all.
TEST(SpecLimits, AtMostAHundredProblemsAreListed) {
  std::string yaml = "lora:\n";
  for (int i = 0; i < 5000; ++i) yaml += "  bad_key_" + std::to_string(i) + ": 1\n";
  const Issues issues = IssuesOf(yaml);
  ASSERT_EQ(issues.size(), 101u);
  EXPECT_EQ(issues[0].rfind("t.yaml:2 [lora.bad_key_0] unknown key ", 0), 0u) << issues[0];
  EXPECT_EQ(issues[99].rfind("t.yaml:101 [lora.bad_key_99] unknown key ", 0), 0u) << issues[99];
  EXPECT_EQ(issues[100], "t.yaml:0 [] and 4900 more problems (the first 100 are listed)");
}

// What derive_counts() is given after validation never wraps; given a spec that skipped it, it
// throws rather than return a wrapped count.
TEST(SpecLimits, DeriveCountsThrowsRatherThanWrap) {
  RunSpec s;
  s.source_path = "x.yaml";
  s.data.num_examples = 4;
  s.train.micro_batch_size = 1;
  s.train.epochs = int64_t{1} << 62;
  try {
    derive_counts(s);
    FAIL() << "no error";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.issues().size(), 1u);
    EXPECT_EQ(e.issues()[0].file, "x.yaml");
    EXPECT_EQ(e.issues()[0].key_path, "train.epochs");
  }
  // From a data file's micro-batches, as the run derives them.
  s.train.epochs = 1;
  EXPECT_THROW(derive_counts_from_batches(s, int64_t{1} << 40), SpecError);
  EXPECT_EQ(derive_counts_from_batches(s, 1'000'000).total_steps, 1'000'000);
}

// ---- item 15: one spec per file, and a file that says something ---------------------------------

TEST(SpecLimits, EmptyAndCommentOnlySpecsAreRefused) {
  EXPECT_EQ(IssuesOf(""), Issues({"t.yaml:0 [] the spec is empty: expected a mapping of sections "
                                  "(model, lora, data, train, backend, distributed, output)"}));
  EXPECT_EQ(IssuesOf("# nothing here\n\n  # still nothing\n"),
            Issues({"t.yaml:0 [] the spec is empty (only comments): expected a mapping of "
                    "sections (model, lora, data, train, backend, distributed, output)"}));
  // --set does not make an empty file a spec: the file is still a mistake.
  EXPECT_EQ(IssuesOf("", {"lora.rank=8"}),
            Issues({"t.yaml:0 [] the spec is empty: expected a mapping of sections (model, lora, "
                    "data, train, backend, distributed, output)"}));
}

TEST(SpecLimits, ASecondYamlDocumentIsRefused) {
  EXPECT_EQ(IssuesOf("lora:\n  rank: 8\n---\nlora:\n  rank: 4\n"),
            Issues({"t.yaml:3 [] a second YAML document (after \"---\"): a spec is one "
                    "document; only the first would be read"}));
  // A document marker at the start is one document, as is "..." closing it.
  EXPECT_TRUE(IssuesOf("---\nlora:\n  rank: 8\n...\n").empty());
  EXPECT_EQ(IssuesOf("lora:\n  rank: 8\n", {"lora.rank=4\n---\n5"}),
            Issues({"--set:0 [lora.rank] cannot parse value \"4\\x0A---\\x0A5\" as YAML: a second "
                    "YAML document (after \"---\"): a value is one document"}));
}

// data.format: tokenized demanded a tokenizer although the ids are given (and checked them
// against its vocabulary, not the model's). Pre-tokenized data needs none.
TEST(SpecLimits, PreTokenizedDataNeedsNoTokenizer) {
  const std::string file = "data:\n  source: file\n  path: ids.jsonl\n  format: tokenized\n";
  const RunSpec s = load_spec_from_string(file + "model:\n  vocab_size: 128\n", "t.yaml", {});
  EXPECT_EQ(s.data.tokenizer, "none");
  // One the spec names is used (and must fit the model when the run loads it).
  EXPECT_EQ(load_spec_from_string(file + "  tokenizer: byte\n", "t.yaml", {}).data.tokenizer,
            "byte");
  EXPECT_EQ(IssuesOf("data:\n  source: file\n  path: a.jsonl\n  tokenizer: none\n"),
            Issues({"t.yaml:4 [data.tokenizer] none reads pre-tokenized data only: set "
                    "data.format: tokenized, or give a tokenizer for data.format \"auto\""}));
}

// A lone "," was a spec of all defaults; reading it for a second document made yaml-cpp's
// LoadAll loop for ever (a fuzz finding: its parser keeps finding empty documents there).
TEST(SpecLimits, ContentThatIsNoDocumentIsRefusedAndEnds) {
  EXPECT_EQ(IssuesOf(","), Issues({"t.yaml:1 [] invalid YAML: content the parser cannot place in "
                                   "the document"}));
  EXPECT_EQ(IssuesOf("lora:\n  rank: 8\n", {"lora.rank=,"}),
            Issues({"--set:0 [lora.rank] cannot parse value \",\" as YAML: invalid YAML: content "
                    "the parser cannot place in the document"}));
}

TEST(SpecLimits, ALongBadValueIsQuotedCutShortAndGetsNoSuggestion) {
  const std::string preset(60'000, 'x');
  const Issues issues = IssuesOf("model:\n  preset: " + preset + "\n");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].rfind("t.yaml:2 [model.preset] expected one of ", 0), 0u) << issues[0];
  EXPECT_NE(issues[0].find("(cut; 60000 bytes in all)"), std::string::npos);
  EXPECT_EQ(issues[0].find("did you mean"), std::string::npos);
}

// output.price as `run` takes it, refused by `validate` alike (issue 39: validate said the spec
// was valid for each of these, which run then refused): a number is USD per GPU-hour, decimal,
// finite and within the prices billing takes; anything else names a catalog offer.
TEST(SpecLimits, OutputPriceIsADecimalPriceOrAnOffer) {
  const std::string range = "USD per GPU-hour from 0.0001 to 1000000";
  const auto issue = [](const std::string& found, const std::string& why) {
    return Issues({"t.yaml:2 [output.price] expected " + why + ", found \"" + found + "\""});
  };
  const std::string offer = " (a decimal number) or a catalog offer PROVIDER/GPU[/TIER]";
  EXPECT_EQ(IssuesOf("output:\n  price: \"-1\"\n"), issue("-1", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: \"0\"\n"), issue("0", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: \"1e7\"\n"), issue("1e7", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: nan\n"), issue("nan", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: .inf\n"), issue(".inf", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: \"inf\"\n"), issue("inf", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: \"0x10\"\n"), issue("0x10", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: \"1_000\"\n"), issue("1_000", range + offer));
  EXPECT_EQ(IssuesOf("output:\n  price: \"2.5\"\n"), Issues({}));
  EXPECT_EQ(IssuesOf("output:\n  price: reference-run/H100-SXM\n"), Issues({}));
  // A GPU alone is no offer: run refuses it (its catalog lookup takes PROVIDER/GPU[/TIER]).
  EXPECT_EQ(IssuesOf("output:\n  price: H100-SXM\n"), issue("H100-SXM", range + offer));
}

}  // namespace
}  // namespace ftbench::spec

namespace ftbench::spec {
namespace {

// An 8 MB value on one line (a file pasted into a key) cost 2.2 s of YAML scanning before its
// refusal (issue 39, item 4; 1.61 s on the 2-core VM, 2026-12-06, almost all in yaml-cpp's plain
// scalar scanner). No key of a spec needs a line of 64 KiB: one is refused before the YAML
// parser sees the text, naming its line.
TEST(SpecLimits, ALineLongerThanAnyKeyNeedsIsRefusedBeforeParsing) {
  const std::string yaml = "model:\n  preset: " + std::string(8'000'000, 'x') + "\n";
  EXPECT_EQ(IssuesOf(yaml),
            (std::vector<std::string>{"t.yaml:2 [] 8000010 bytes on one line; a spec line holds "
                                      "at most 65536 (a file pasted into a value?)"}));
  // 65,536 bytes is still a line (a long data.path list in flow style, say).
  const std::string longest = "model:\n  preset: tiny\n# " + std::string(65'534, 'x') + "\n";
  EXPECT_EQ(IssuesOf(longest), std::vector<std::string>{});
}

}  // namespace
}  // namespace ftbench::spec

namespace ftbench::spec {
namespace {

// validate said 0 for offer names that run refuses ("foo", "a/b/c/d", "x/", "/x", "€5"): a hostile
// review of issue 39. Text that is no number must have an offer's form, PROVIDER/GPU[/TIER].
TEST(SpecLimits, OutputPriceTextMustHaveAnOffersForm) {
  for (const std::string price : {"foo", "a/b/c/d", "x/", "/x", "a//b",
                                  "\xE2\x82\xAC"
                                  "5"}) {
    SCOPED_TRACE(price);
    EXPECT_EQ(IssuesOf("model: {preset: tiny}\n", {"output.price=" + price}),
              (std::vector<std::string>{
                  "--set:0 [output.price] expected USD per GPU-hour from 0.0001 to 1000000 (a "
                  "decimal number) or a catalog offer PROVIDER/GPU[/TIER], found " +
                  text::quoted(price)}));
  }
  for (const std::string price : {"reference-run/H100-SXM", "runpod/H100-SXM/spot"}) {
    EXPECT_EQ(IssuesOf("model: {preset: tiny}\n", {"output.price=" + price}),
              std::vector<std::string>{});
  }
}

}  // namespace
}  // namespace ftbench::spec
