#include "spec/canonical.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spec/spec_loader.h"
#include "util/io/sha256.h"

namespace ftbench::spec {
namespace {

std::vector<std::string> Keys(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

RunSpec Defaults() { return load_spec_from_string("lora:\n", "t.yaml"); }

TEST(Canonical, ToJsonSectionOrder) {
  EXPECT_EQ(Keys(to_json(Defaults())),
            (std::vector<std::string>{"model", "lora", "data", "train", "backend", "distributed",
                                      "output", "source_path"}));
}

TEST(Canonical, ToJsonKeyOrderFollowsHeader) {
  const nlohmann::ordered_json j = to_json(load_spec_from_string(
      "model:\n  preset: llama3.1-8b\nbackend:\n  peak_tflops: 989\n", "t.yaml"));
  EXPECT_EQ(Keys(j["model"]),
            (std::vector<std::string>{"preset", "dim", "n_layers", "n_heads", "n_kv_heads",
                                      "ffn_dim", "vocab_size", "max_seq_len", "norm_eps",
                                      "rope_theta", "rope_scaling", "tie_embeddings", "dtype",
                                      "activation_checkpointing", "checkpoint"}));
  EXPECT_EQ(Keys(j["model"]["rope_scaling"]),
            (std::vector<std::string>{"factor", "low_freq_factor", "high_freq_factor",
                                      "original_max_position_embeddings"}));
  EXPECT_EQ(Keys(j["lora"]),
            (std::vector<std::string>{"rank", "alpha", "dropout", "targets", "dtype"}));
  EXPECT_EQ(Keys(j["data"]), (std::vector<std::string>{"source",
                                                       "tokenizer",
                                                       "path",
                                                       "format",
                                                       "max_examples",
                                                       "subset",
                                                       "too_long",
                                                       "on_error",
                                                       "validation_fraction",
                                                       "validation_path",
                                                       "num_examples",
                                                       "seq_len",
                                                       "length_distribution",
                                                       "min_tokens",
                                                       "max_tokens",
                                                       "lognormal_median_tokens",
                                                       "lognormal_sigma",
                                                       "prompt_fraction",
                                                       "train_on_input",
                                                       "padding",
                                                       "shuffle",
                                                       "seed"}));
  EXPECT_EQ(Keys(j["train"]), (std::vector<std::string>{"epochs",
                                                        "max_steps",
                                                        "micro_batch_size",
                                                        "grad_accum_steps",
                                                        "optimizer",
                                                        "lr",
                                                        "weight_decay",
                                                        "beta1",
                                                        "beta2",
                                                        "eps",
                                                        "lr_schedule",
                                                        "lr_warmup_steps",
                                                        "min_lr_ratio",
                                                        "max_grad_norm",
                                                        "seed",
                                                        "timing_warmup_steps",
                                                        "loss_window",
                                                        "eval_every_steps",
                                                        "eval_max_batches",
                                                        "oom_fallback",
                                                        "oom_max_fallbacks",
                                                        "checkpoint"}));
  EXPECT_EQ(Keys(j["backend"]), (std::vector<std::string>{"device", "device_index", "threads",
                                                          "peak_tflops", "energy_sample_ms"}));
  EXPECT_EQ(Keys(j["output"]),
            (std::vector<std::string>{"report", "adapter", "merged", "name", "progress",
                                      "log_every_steps", "mllog", "price"}));
}

TEST(Canonical, ToJsonValues) {
  const nlohmann::ordered_json j = to_json(load_spec_from_string(
      "model:\n  preset: llama3.1-8b\nbackend:\n  peak_tflops: 989.5\n", "t.yaml"));
  EXPECT_EQ(j["model"]["rope_scaling"].dump(),
            "{\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
            "\"original_max_position_embeddings\":8192}");
  EXPECT_EQ(j["backend"]["peak_tflops"].dump(), "989.5");
  EXPECT_EQ(j["lora"]["targets"].dump(), "[\"q\",\"v\"]");
  EXPECT_EQ(j["data"]["seed"].dump(), "1234");
  EXPECT_EQ(j["source_path"], "t.yaml");
}

TEST(Canonical, ToJsonNullsForAbsentOptionals) {
  const nlohmann::ordered_json j = to_json(Defaults());
  EXPECT_TRUE(j["model"]["rope_scaling"].is_null());
  EXPECT_TRUE(j["backend"]["peak_tflops"].is_null());
}

TEST(Canonical, JobJsonIsSortedCompactAndLeavesOutMachineKeys) {
  EXPECT_EQ(canonical_job_json(Defaults()),
            "{\"data\":{\"format\":\"auto\",\"length_distribution\":\"uniform\","
            "\"lognormal_median_tokens\":128.0,\"lognormal_sigma\":0.5,\"max_examples\":0,"
            "\"max_tokens\":256,\"min_tokens\":32,\"num_examples\":256,\"on_error\":\"fail\","
            "\"padding\":\"longest\",\"prompt_fraction\":0.5,\"seed\":1234,\"seq_len\":256,"
            "\"shuffle\":true,\"source\":\"synthetic\",\"subset\":\"first\","
            "\"too_long\":\"truncate\",\"train_on_input\":false,\"validation_fraction\":0.0},"
            "\"lora\":{\"alpha\":32.0,\"dropout\":0.0,\"dtype\":\"fp32\",\"rank\":16,"
            "\"targets\":[\"q\",\"v\"]},"
            "\"model\":{\"activation_checkpointing\":false,\"checkpoint_path\":\"\","
            "\"dim\":64,\"dtype\":\"fp32\",\"ffn_dim\":176,\"init\":\"random\","
            "\"max_seq_len\":512,\"n_heads\":4,\"n_kv_heads\":2,\"n_layers\":2,"
            "\"norm_eps\":1e-05,\"preset\":\"tiny\",\"rope_scaling\":null,"
            "\"rope_theta\":10000.0,\"tie_embeddings\":false,\"vocab_size\":320},"
            "\"train\":{\"beta1\":0.9,\"beta2\":0.999,\"epochs\":1,\"eps\":1e-08,"
            "\"eval_every_steps\":0,\"eval_max_batches\":0,"
            "\"grad_accum_steps\":1,\"loss_window\":10,\"lr\":0.0003,\"lr_schedule\":\"cosine\","
            "\"lr_warmup_steps\":0,\"max_grad_norm\":1.0,\"max_steps\":0,"
            "\"micro_batch_size\":4,\"min_lr_ratio\":0.0,\"optimizer\":\"adamw\",\"seed\":42,"
            "\"timing_warmup_steps\":2,\"weight_decay\":0.01}}");
}

TEST(Canonical, DecimalsDumpTheSameEveryTime) {
  const RunSpec s = load_spec_from_string("lora:\n  dropout: 0.05\n", "t.yaml");
  const std::string first = canonical_job_json(s);
  EXPECT_NE(first.find("\"dropout\":0.05,"), std::string::npos) << first;
  EXPECT_EQ(canonical_job_json(load_spec_from_string("lora:\n  dropout: 5e-2\n", "t.yaml")), first);
}

// full and none are hashed as the bools before them were: a report or checkpoint of a spec that
// said true or false keeps its fingerprint; selective and auto are jobs of their own.
TEST(Canonical, CheckpointingPoliciesKeepTheFingerprintsOfTheBoolsBeforeThem) {
  const auto of = [](const std::string& value) {
    return load_spec_from_string("model:\n  activation_checkpointing: " + value + "\n", "t.yaml");
  };
  EXPECT_EQ(fingerprint(of("full")), fingerprint(of("true")));
  EXPECT_EQ(fingerprint(of("none")), fingerprint(of("false")));
  EXPECT_NE(canonical_job_json(of("full")).find("\"activation_checkpointing\":true,"),
            std::string::npos);
  EXPECT_NE(canonical_job_json(of("none")).find("\"activation_checkpointing\":false,"),
            std::string::npos);
  EXPECT_NE(canonical_job_json(of("selective")).find("\"activation_checkpointing\":\"selective\","),
            std::string::npos);
  EXPECT_NE(fingerprint(of("selective")), fingerprint(of("full")));
  EXPECT_NE(fingerprint(of("auto")), fingerprint(of("none")));
  // The spec as written (the report's spec section) says the policy.
  EXPECT_EQ(to_json(of("true"))["model"]["activation_checkpointing"], "full");
}

TEST(Canonical, FingerprintIsSha256OfJobJson) {
  const RunSpec s = Defaults();
  EXPECT_EQ(fingerprint(s), io::sha256_hex(canonical_job_json(s)));
  EXPECT_EQ(fingerprint(s).size(), 64u);
  EXPECT_EQ(fingerprint(s), fingerprint(Defaults()));
}

TEST(Canonical, FingerprintIgnoresOutputBackendDistributedAndSourcePath) {
  const RunSpec a = load_spec_from_string("lora:\n", "a.yaml");
  const RunSpec b = load_spec_from_string(
      "backend:\n  device: cuda\n  device_index: 3\n  threads: 8\n  peak_tflops: 989\n"
      "distributed:\n  backend: nccl\n  init_timeout_seconds: 60\n  timeout_seconds: 30\n"
      "  check_every_steps: 10\n  shard_base: all\n"
      "output:\n  report: elsewhere.json\n  name: other\n  progress: off\n  log_every_steps: 5\n",
      "b.yaml");
  EXPECT_EQ(fingerprint(a), fingerprint(b));
}

// Where the data file and the tokenizer are is a machine detail; their content is in the
// report's data fingerprint.
TEST(Canonical, FingerprintIgnoresDataAndTokenizerPaths) {
  const RunSpec a = load_spec_from_string(
      "data:\n  source: file\n  path: /data/alpaca.json\n  tokenizer: /m/tokenizer.json\n",
      "a.yaml");
  const RunSpec b = load_spec_from_string(
      "data:\n  source: file\n  path: /mnt/x/alpaca.json\n  tokenizer: /home/u/llama3\n", "b.yaml");
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  const RunSpec c = load_spec_from_string(
      "data:\n  source: file\n  path: /data/alpaca.json\n  format: chat\n", "c.yaml");
  EXPECT_NE(fingerprint(a), fingerprint(c));
}

// The out-of-memory settings say how the job runs, not what it computes; the report of a
// fallback records it, and compare flags it. Fingerprints from before the keys existed hold.
TEST(Canonical, FingerprintIgnoresTheOutOfMemoryFallbackSettings) {
  const RunSpec a = load_spec_from_string("lora:\n", "a.yaml");
  const RunSpec b =
      load_spec_from_string("train:\n  oom_fallback: false\n  oom_max_fallbacks: 1\n", "b.yaml");
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  EXPECT_EQ(canonical_job_json(a).find("oom_"), std::string::npos);
  EXPECT_EQ(to_json(b)["train"]["oom_fallback"], false);
  EXPECT_EQ(to_json(b)["train"]["oom_max_fallbacks"], 1);
}

TEST(Canonical, FingerprintChangesWithTheJob) {
  const std::string base = fingerprint(Defaults());
  EXPECT_NE(fingerprint(load_spec_from_string("lora:\n  rank: 8\n", "t.yaml")), base);
  EXPECT_NE(fingerprint(load_spec_from_string("data:\n  seed: 1\n", "t.yaml")), base);
  EXPECT_NE(fingerprint(load_spec_from_string("model:\n  dtype: bf16\n", "t.yaml")), base);
}

TEST(Canonical, FingerprintSameForSameJobWrittenDifferently) {
  // Explicit defaults, other key order, flow style: the same job.
  const RunSpec a = load_spec_from_string("lora:\n  rank: 16\n  alpha: 32\n", "a.yaml");
  const RunSpec b = load_spec_from_string("lora: {alpha: 32.0, rank: 16}\n", "b.yaml");
  EXPECT_EQ(fingerprint(a), fingerprint(Defaults()));
  EXPECT_EQ(fingerprint(a), fingerprint(b));
}

// docs/spec.md must describe every key the spec has (run_spec.h asks to keep the two in step).
TEST(Canonical, DocsMentionEveryKey) {
  std::ifstream file(FTBENCH_SOURCE_DIR "/docs/spec.md");
  ASSERT_TRUE(file.good());
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string docs = buffer.str();
  const nlohmann::ordered_json j =
      to_json(load_spec_from_string("model:\n  preset: llama3.1-8b\n", "t.yaml"));
  for (const auto& section : j.items()) {
    if (!section.value().is_object()) continue;
    for (const auto& key : section.value().items()) {
      const std::string path = section.key() + "." + key.key();
      EXPECT_NE(docs.find("`" + path + "`"), std::string::npos) << path;
      if (key.value().is_object()) {
        for (const auto& sub : key.value().items()) {
          EXPECT_NE(docs.find("`" + path + "." + sub.key() + "`"), std::string::npos)
              << path << "." << sub.key();
        }
      }
    }
  }
}

}  // namespace
}  // namespace ftbench::spec
