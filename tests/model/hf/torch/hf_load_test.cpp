// Loading a Hugging Face Llama checkpoint: a random checkpoint written in HF layout by
// tests/reference/hf_checkpoint.py (sharded, bf16 or fp32), loaded into ftbench's model, and
// its logits compared with the independent NumPy forward pass (tests/reference/llama_numpy.py,
// float64) within the tolerance stated there (atol = rtol = 1e-4 for fp32). Needs Debian's
// /usr/bin/python3 with numpy; skipped without it, except on CI.
#include "model/hf/torch/hf_load.h"
#include "util/io/remove_tree.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "numpy_reference_test.h"
#include "report/report_io.h"
#include "spec/checkpoint_config.h"

namespace ftbench::hf {
using model::Llama;
namespace {

namespace fs = std::filesystem;

using HfLoad = NumpyReferenceTest;

// Unusual settings so that a misread or ignored one shows (tests/reference/README.md).
constexpr const char* kShape =
    "--layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 96 --vocab 97 --rope-theta 500000 "
    "--rope-scaling llama3 --rope-factor 8 --rope-original-max-position 16 "
    "--rms-norm-eps 1e-3 --max-position 64 --seed 5";

TEST_F(HfLoad, LogitsMatchTheNumpyReference) {
  for (const char* variant : {"--dtype float32 --shards 1", "--dtype float32 --shards 3",
                              "--dtype bfloat16 --shards 2 --tie"}) {
    SCOPED_TRACE(variant);
    const fs::path ck = dir_ / "ck";
    ftbench::io::remove_tree(ck);
    ASSERT_EQ(python("hf_checkpoint.py' make '" + ck.string() + "' " + kShape + " " + variant), 0)
        << log();
    const spec::HfConfig config = spec::parse_hf_config(
        report::read_whole_file((ck / "config.json").string()), (ck / "config.json").string());
    spec::LoraSpec lora;
    lora.rank = 4;
    lora.targets = {"q", "v"};
    Llama model(config.shape, lora, 64, at::kCPU);
    model->init_adapters();
    const HfLoadStats stats = load_hf_weights(model, ck.string(), config.shape);
    EXPECT_EQ(stats.tensors, config.shape.tie_embeddings ? 2 + 2 * 9 : 3 + 2 * 9);
    EXPECT_GT(stats.bytes, 0);

    // Logits of ftbench's model in fp32 (the base weights as loaded, bf16 ones widened), the
    // adapters contributing nothing (B = 0).
    model->eval();
    const std::vector<std::vector<int64_t>> ids = {{1, 5, 9, 33, 2, 96, 40, 7, 7, 60, 12, 3},
                                                   {0, 95, 4, 4, 4, 81, 17, 23, 42, 11, 9, 1}};
    at::Tensor input = at::empty({2, 12}, at::kLong);
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t c = 0; c < 12; ++c) input[r][c] = ids[size_t(r)][size_t(c)];
    }
    at::Tensor logits;
    {
      torch::NoGradGuard no_grad;
      logits = model->forward(input).to(at::kDouble).contiguous();
    }
    nlohmann::json out;
    out["input_ids"] = ids;
    std::vector<std::vector<std::vector<double>>> values(2);
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t s = 0; s < 12; ++s) {
        const at::Tensor row = logits[r][s];
        values[size_t(r)].emplace_back(row.data_ptr<double>(),
                                       row.data_ptr<double>() + row.numel());
      }
    }
    out["logits"] = values;
    std::ofstream(dir_ / "logits.json") << out.dump();
    EXPECT_EQ(python("llama_numpy.py' compare --checkpoint '" + ck.string() + "' --logits '" +
                     (dir_ / "logits.json").string() + "'"),
              0)
        << log();
    std::printf("%s: %s", variant, log().c_str());  // the measured differences, for the record
  }
}

TEST_F(HfLoad, MalformedCheckpointsGetClearErrors) {
  const fs::path ck = dir_ / "ck";
  ASSERT_EQ(python("hf_checkpoint.py' make '" + ck.string() + "' " + kShape + " --shards 2"), 0)
      << log();
  const spec::HfConfig config =
      spec::parse_hf_config(report::read_whole_file((ck / "config.json").string()), "config.json");
  spec::LoraSpec lora;
  auto error_of = [&](const spec::ModelSpec& shape) {
    Llama model(shape, lora, 64, at::kCPU);
    try {
      load_hf_weights(model, ck.string(), shape);
    } catch (const spec::HfCheckpointError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A model of another shape than the files: the first mismatching tensor is named.
  spec::ModelSpec wider = config.shape;
  wider.ffn_dim = 128;
  EXPECT_NE(error_of(wider).find("has shape [96, 64], config.json implies [128, 64]"),
            std::string::npos)
      << error_of(wider);
  // A file's tensor the index does not list.
  const std::string index_text =
      report::read_whole_file((ck / "model.safetensors.index.json").string());
  nlohmann::json index = nlohmann::json::parse(index_text);
  index["weight_map"].erase("model.norm.weight");
  std::ofstream(ck / "model.safetensors.index.json") << index.dump();
  EXPECT_NE(error_of(config.shape)
                .find(": tensor \"model.norm.weight\" is not in the index "
                      "(model.safetensors.index.json)"),
            std::string::npos)
      << error_of(config.shape);
  std::ofstream(ck / "model.safetensors.index.json") << index_text;
  // The output head of a model with tied embeddings is ignored, as transformers ignores it:
  // read as tied, these untied files load (the head's tensor skipped).
  spec::ModelSpec tied = config.shape;
  tied.tie_embeddings = true;
  {
    Llama model(tied, lora, 64, at::kCPU);
    const HfLoadStats stats = load_hf_weights(model, ck.string(), tied);
    EXPECT_EQ(stats.tensors, static_cast<int64_t>(hf_llama_tensors(tied).size()));
    EXPECT_EQ(stats.tensors + 1, static_cast<int64_t>(hf_llama_tensors(config.shape).size()));
  }
  // A missing shard.
  fs::remove(ck / "model-00002-of-00002.safetensors");
  EXPECT_NE(error_of(config.shape).find("model-00002-of-00002.safetensors: cannot open"),
            std::string::npos)
      << error_of(config.shape);
  // No safetensors at all.
  fs::remove(ck / "model.safetensors.index.json");
  EXPECT_NE(error_of(config.shape).find("no model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace ftbench::hf
