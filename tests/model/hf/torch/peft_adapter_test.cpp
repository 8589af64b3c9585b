// PEFT adapter export and import, and the merged export: a random HF checkpoint
// (tests/reference/hf_checkpoint.py) loaded into ftbench, adapters set to random non-zero
// values, exported; read back into a fresh model the logits must be bit for bit the same, and
// the independent float64 NumPy Llama (tests/reference/llama_numpy.py, which reads PEFT adapters
// and merges them itself) must give the same logits within its fp32 tolerance (atol = rtol =
// 1e-4). Needs Debian's /usr/bin/python3 with numpy; skipped without it, except on CI.
#include "model/hf/torch/peft_adapter.h"
#include "util/io/remove_tree.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/hf/peft_config.h"
#include "model/hf/torch/hf_load.h"
#include "numpy_reference_test.h"
#include "report/report_io.h"
#include "spec/checkpoint_config.h"
#include "util/io/safetensors.h"

namespace ftbench::hf {
using model::Llama;
namespace {

namespace fs = std::filesystem;

// Unusual settings so that a misread or ignored one shows (tests/reference/README.md).
constexpr const char* kShape =
    "--layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 96 --vocab 97 --rope-theta 500000 "
    "--rope-scaling llama3 --rope-factor 8 --rope-original-max-position 16 "
    "--rms-norm-eps 1e-3 --max-position 64 --seed 11";

const std::vector<std::string> kAllTargets = {"q", "k", "v", "o", "gate", "up", "down", "output"};

class PeftAdapter : public NumpyReferenceTest {
 protected:
  void TearDown() override {
    ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE");
    NumpyReferenceTest::TearDown();
  }

  // llama_numpy.py compare of `logits_file` against `checkpoint` (+ `adapter`): its exit code.
  int compare(const fs::path& checkpoint, const fs::path& adapter, const fs::path& logits_file) {
    std::string args = "llama_numpy.py' compare --checkpoint '" + checkpoint.string() + "'";
    if (!adapter.empty()) args += " --adapter '" + adapter.string() + "'";
    return python(args + " --logits '" + logits_file.string() + "'");
  }

  spec::HfConfig make_checkpoint(const fs::path& ck, const std::string& variant) {
    EXPECT_EQ(python("hf_checkpoint.py' make '" + ck.string() + "' " + kShape + " " + variant), 0)
        << log();
    return spec::parse_hf_config(report::read_whole_file((ck / "config.json").string()),
                                 (ck / "config.json").string());
  }
};

spec::LoraSpec lora_on(std::vector<std::string> targets, int64_t rank = 4) {
  spec::LoraSpec lora;
  lora.rank = rank;
  lora.alpha = 12.0;  // scale 3 at rank 4: a merge that forgets the scale shows
  lora.dropout = 0.0;
  lora.targets = std::move(targets);
  return lora;
}

// A model of the checkpoint's shape with its weights, adapters random (B too, so that they
// change the logits).
Llama load_model(const fs::path& ck, const spec::ModelSpec& shape, const spec::LoraSpec& lora,
                 uint64_t seed) {
  Llama model(shape, lora, 64, at::kCPU);
  at::manual_seed(seed);
  model->init_adapters();
  load_hf_weights(model, ck.string(), shape);
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    if (p.key().find("lora_b") != std::string::npos) p.value().normal_(0.0, 0.05);
  }
  model->eval();
  return model;
}

at::Tensor input_ids() {
  const std::vector<int64_t> ids = {1, 5,  9, 33, 2, 96, 40, 7,  7,  60, 12, 3,
                                    0, 95, 4, 4,  4, 81, 17, 23, 42, 11, 9,  1};
  return at::tensor(ids, at::kLong).view({2, 12});
}

at::Tensor logits_of(Llama& model) {
  torch::NoGradGuard no_grad;
  return model->forward(input_ids());
}

// The logits file llama_numpy.py reads.
void write_logits(const at::Tensor& logits, const fs::path& path) {
  const at::Tensor ids = input_ids();
  const at::Tensor values = logits.to(at::kDouble).contiguous();
  nlohmann::json out;
  out["input_ids"] = nlohmann::json::array();
  out["logits"] = nlohmann::json::array();
  for (int64_t r = 0; r < ids.size(0); ++r) {
    std::vector<int64_t> row(ids[r].data_ptr<int64_t>(), ids[r].data_ptr<int64_t>() + ids.size(1));
    out["input_ids"].push_back(row);
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t s = 0; s < values.size(1); ++s) {
      const at::Tensor v = values[r][s];
      rows.push_back(std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel()));
    }
    out["logits"].push_back(rows);
  }
  std::ofstream(path) << out.dump();
}

int64_t folder_bytes(const fs::path& dir) {
  int64_t bytes = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    bytes += static_cast<int64_t>(e.file_size());
  }
  return bytes;
}

// Names in `dir` that start with '.': temporary folders an export left behind.
std::vector<std::string> hidden_entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string()[0] == '.') out.push_back(e.path().filename().string());
  }
  return out;
}

TEST_F(PeftAdapter, ExportedAdapterAndMergedModelGiveTheTrainedLogits) {
  struct Variant {
    const char* checkpoint;
    std::vector<std::string> targets;
  };
  const std::vector<Variant> variants = {
      {"--dtype float32 --shards 1", kAllTargets},
      {"--dtype float32 --shards 2", {"q", "v"}},
      {"--dtype float32 --shards 1 --tie", kAllTargets},  // an adapter on a tied LM head
      {"--dtype float32 --shards 1 --tie", {"q", "v"}},
  };
  for (const Variant& variant : variants) {
    SCOPED_TRACE(std::string(variant.checkpoint) + ", " + std::to_string(variant.targets.size()) +
                 " targets");
    for (const char* sub : {"ck", "adapter", "zeroed", "merged", "logits.json"}) {
      ftbench::io::remove_tree(dir_ / sub);
    }
    const fs::path ck = dir_ / "ck";
    const spec::HfConfig config = make_checkpoint(ck, variant.checkpoint);
    const spec::ModelSpec& shape = config.shape;
    const spec::LoraSpec lora = lora_on(variant.targets);
    Llama model = load_model(ck, shape, lora, 3);
    const at::Tensor trained = logits_of(model);
    const fs::path logits_file = dir_ / "logits.json";
    write_logits(trained, logits_file);

    // The adapter: PEFT's files, every adapted slice's A and B.
    const fs::path adapter = dir_ / "adapter";
    const ExportStats stats = write_peft_adapter(model, shape, lora, ck.string(), adapter.string(),
                                                 /*replace=*/false);
    const int64_t modules = lora.targets.size() == 2 ? 2 * 2 : 2 * 7 + 1;
    EXPECT_EQ(stats.tensors, 2 * modules);
    EXPECT_EQ(stats.bytes, folder_bytes(adapter));
    EXPECT_EQ(hidden_entries(dir_), std::vector<std::string>{});
    const io::SafetensorsReader file((adapter / "adapter_model.safetensors").string());
    EXPECT_EQ(file.index().metadata.at("format"), "pt");
    const io::TensorInfo* b =
        file.index().find("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->shape, (std::vector<int64_t>{32, 4}));
    EXPECT_EQ(b->dtype, "F32");
    const PeftAdapterConfig written = parse_peft_adapter_config(
        report::read_whole_file((adapter / "adapter_config.json").string()), "adapter_config.json");
    EXPECT_EQ(written.lora.targets, lora.targets);
    EXPECT_EQ(written.base_model_name_or_path, ck.string());

    // (a) Read back into a fresh model (other random adapters first): the same logits, exactly.
    {
      Llama fresh = load_model(ck, shape, lora, 99);
      EXPECT_FALSE(at::equal(logits_of(fresh), trained));
      load_peft_adapter(fresh, shape, lora, adapter.string());
      EXPECT_TRUE(at::equal(logits_of(fresh), trained));
    }

    // (b) The independent reference reads the adapter, merges it, and agrees.
    EXPECT_EQ(compare(ck, adapter, logits_file), 0) << log();
    std::printf("adapter, %s: %s", variant.checkpoint, log().c_str());
    // ... and it would tell if the adapter were lost or its B matrices not written.
    EXPECT_EQ(compare(ck, "", logits_file), 1) << log();
    std::printf("without the adapter (must fail): %s", log().c_str());
    {
      Llama zeroed = load_model(ck, shape, lora, 3);
      torch::NoGradGuard no_grad;
      for (auto& p : zeroed->named_parameters()) {
        if (p.key().find("lora_b") != std::string::npos) p.value().zero_();
      }
      write_peft_adapter(zeroed, shape, lora, "", (dir_ / "zeroed").string(), false);
    }
    EXPECT_EQ(compare(ck, dir_ / "zeroed", logits_file), 1) << log();

    // (c) The merged model, in several shards, read by load_hf_weights into a model without
    // adapters, and by the reference.
    const fs::path merged = dir_ / "merged";
    const ExportStats merged_stats =
        write_merged_hf(model, shape, merged.string(), false, /*max_shard_bytes=*/150'000);
    EXPECT_EQ(merged_stats.bytes, folder_bytes(merged));
    ASSERT_TRUE(fs::exists(merged / "model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(merged / "model.safetensors"));
    const nlohmann::json index = nlohmann::json::parse(
        report::read_whole_file((merged / "model.safetensors.index.json").string()));
    std::set<std::string> shard_files;
    for (const auto& [name, f] : index["weight_map"].items()) shard_files.insert(f);
    EXPECT_GE(shard_files.size(), 2u);
    for (size_t k = 1; k <= shard_files.size(); ++k) {
      const std::string name = "model-0000" + std::to_string(k) + "-of-0000" +
                               std::to_string(shard_files.size()) + ".safetensors";
      EXPECT_EQ(shard_files.count(name), 1u) << name;
      EXPECT_LE(io::SafetensorsReader((merged / name).string()).file_bytes(), 150'000u + 4096u);
    }
    const spec::HfConfig merged_config = spec::parse_hf_config(
        report::read_whole_file((merged / "config.json").string()), "merged/config.json");
    const bool head_adapted = lora.targets.back() == "output";
    EXPECT_EQ(merged_config.shape.tie_embeddings, shape.tie_embeddings && !head_adapted);
    EXPECT_EQ(merged_stats.tensors, merged_config.shape.tie_embeddings ? 2 + 2 * 9 : 3 + 2 * 9);
    EXPECT_EQ(merged_config.torch_dtype, "float32");
    int64_t tensor_bytes = 0;
    for (const HfTensor& t : hf_llama_tensors(merged_config.shape)) {
      int64_t n = 4;
      for (int64_t d : t.shape) n *= d;
      tensor_bytes += n;
    }
    EXPECT_EQ(index["metadata"]["total_size"], tensor_bytes);
    EXPECT_EQ(index["weight_map"].size(), static_cast<size_t>(merged_stats.tensors));
    spec::LoraSpec none = lora;
    none.targets.clear();
    Llama plain(merged_config.shape, none, 64, at::kCPU);
    load_hf_weights(plain, merged.string(), merged_config.shape);
    plain->eval();
    // W + s B A computed once in fp32 rounds differently from x W^T + s (x A^T) B^T. Bound:
    // 1e-5 absolute, or 1e-6 of the largest logit where that is more: a rounding difference in
    // a hidden state grows with the whole row of logits, and the tied checkpoints' logits (their
    // head is the N(0, 1) embedding) reach 55. Measured: 2.4e-6 untied (largest logit 3.4),
    // 1.7e-5 tied (55).
    const at::Tensor merged_logits = logits_of(plain);
    const double merged_diff = (merged_logits - trained).abs().max().item<double>();
    const double largest = trained.abs().max().item<double>();
    EXPECT_LE(merged_diff, std::max(1e-5, 1e-6 * largest));
    std::printf("merged, %s: max |logits - trained| = %.3g, max |trained| = %.3g\n",
                variant.checkpoint, merged_diff, largest);
    EXPECT_EQ(compare(merged, "", logits_file), 0) << log();
    std::printf("merged against the reference: %s", log().c_str());
  }
}

TEST_F(PeftAdapter, AdaptersOfAnotherDtypeRoundTrip) {
  const fs::path ck = dir_ / "ck";
  const spec::HfConfig config = make_checkpoint(ck, "--dtype bfloat16 --shards 1");
  spec::LoraSpec lora = lora_on({"q", "down", "output"});
  lora.dtype = "bf16";
  Llama model = load_model(ck, config.shape, lora, 5);
  write_peft_adapter(model, config.shape, lora, "", (dir_ / "a").string(), false);
  const io::SafetensorsReader file((dir_ / "a" / "adapter_model.safetensors").string());
  for (const io::TensorInfo& t : file.index().tensors) EXPECT_EQ(t.dtype, "BF16") << t.name;
  Llama fresh = load_model(ck, config.shape, lora, 6);
  load_peft_adapter(fresh, config.shape, lora, (dir_ / "a").string());
  const auto a = model->trainable_named_parameters();
  const auto b = fresh->trainable_named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(at::equal(a[i].second, b[i].second)) << a[i].first;
}

TEST_F(PeftAdapter, ExistingFolderIsKeptUnlessReplacingAndFailedWritesLeaveNothing) {
  const fs::path ck = dir_ / "ck";
  const spec::HfConfig config = make_checkpoint(ck, "--dtype float32 --shards 1");
  const spec::LoraSpec lora = lora_on({"q", "v"});
  Llama model = load_model(ck, config.shape, lora, 3);
  const fs::path out = dir_ / "out" / "adapter";
  fs::create_directories(out);
  std::ofstream(out / "mine.txt") << "keep me";

  EXPECT_THROW(write_peft_adapter(model, config.shape, lora, "", out.string(), false),
               io::FileExistsError);
  EXPECT_THROW(write_merged_hf(model, config.shape, out.string(), false), io::FileExistsError);
  EXPECT_TRUE(fs::exists(out / "mine.txt"));
  EXPECT_FALSE(fs::exists(out / "adapter_config.json"));

  // A full disk: the error names the file and the reason; the old folder is as it was and no
  // temporary folder is left.
  ::setenv("FTBENCH_INJECT_WRITE_FAILURE", "export:ENOSPC@100", 1);
  for (bool merged : {false, true}) {
    try {
      if (merged) {
        write_merged_hf(model, config.shape, out.string(), true);
      } else {
        write_peft_adapter(model, config.shape, lora, "", out.string(), true);
      }
      ADD_FAILURE() << "the injected failure did not happen";
    } catch (const std::runtime_error& e) {
      const std::string file = merged ? "config.json" : "adapter_model.safetensors";
      EXPECT_EQ(
          std::string(e.what()),
          out.string() + ": cannot export: " +
              (dir_ / "out" / (".adapter.tmp-" + std::to_string(::getpid())) / file).string() +
              ": cannot write: No space left on device");
    }
    EXPECT_TRUE(fs::exists(out / "mine.txt"));
    EXPECT_EQ(hidden_entries(dir_ / "out"), std::vector<std::string>{});
  }
  // Where nothing existed, nothing is left.
  EXPECT_THROW(
      write_peft_adapter(model, config.shape, lora, "", (dir_ / "out" / "new").string(), false),
      std::runtime_error);
  EXPECT_FALSE(fs::exists(dir_ / "out" / "new"));
  ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE");

  write_peft_adapter(model, config.shape, lora, "", out.string(), /*replace=*/true);
  EXPECT_FALSE(fs::exists(out / "mine.txt"));
  EXPECT_TRUE(fs::exists(out / "adapter_config.json"));
  EXPECT_TRUE(fs::exists(out / "adapter_model.safetensors"));
  EXPECT_EQ(hidden_entries(dir_ / "out"), std::vector<std::string>{});
  write_merged_hf(model, config.shape, out.string(), /*replace=*/true);
  EXPECT_FALSE(fs::exists(out / "adapter_config.json"));
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  EXPECT_TRUE(fs::exists(out / "config.json"));
  EXPECT_FALSE(fs::exists(out / "model.safetensors.index.json"));
}

// A copy of the adapter's tensor file, edited: `edit` gets name -> (dtype, shape, bytes).
struct RawTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
void rewrite_adapter(const fs::path& from, const fs::path& to,
                     const std::function<void(std::map<std::string, RawTensor>&)>& edit) {
  ftbench::io::remove_tree(to);
  fs::create_directories(to);
  fs::copy_file(from / "adapter_config.json", to / "adapter_config.json");
  std::map<std::string, RawTensor> tensors;
  {
    const io::SafetensorsReader reader((from / "adapter_model.safetensors").string());
    for (const io::TensorInfo& t : reader.index().tensors) {
      tensors[t.name] = {t.dtype, t.shape,
                         std::string(static_cast<const char*>(reader.tensor_data(t)),
                                     static_cast<size_t>(t.end - t.begin))};
    }
  }
  edit(tensors);
  std::vector<io::TensorToWrite> out;
  for (const auto& [name, t] : tensors) out.push_back({name, t.dtype, t.shape, t.bytes.data()});
  io::write_safetensors((to / "adapter_model.safetensors").string(), out, {{"format", "pt"}});
}

// peft's save_pretrained saves the LM head's base weight next to its adapter when lm_head is a
// target (save_embedding_layers "auto" counts lm_head as an embedding layer), under
// base_model.model.lm_head.base_layer.weight, and PeftModel.from_pretrained loads it over the base
// model's head. ftbench reads such an adapter and does the same (tests/e2e/hf_run_test.cpp,
// HfLibraries, has a folder peft itself wrote).
TEST_F(PeftAdapter, TheLmHeadBaseWeightPeftSavesWithAHeadAdapterReplacesTheHead) {
  const fs::path ck = dir_ / "ck";
  const spec::HfConfig config = make_checkpoint(ck, "--dtype float32 --shards 1");
  const spec::ModelSpec& shape = config.shape;
  const spec::LoraSpec lora = lora_on({"q", "output"});
  Llama model = load_model(ck, shape, lora, 3);
  const fs::path good = dir_ / "good";
  write_peft_adapter(model, shape, lora, "", good.string(), false);
  const std::string base_key = "base_model.model.lm_head.base_layer.weight";
  auto with_head = [&](const fs::path& to, const at::Tensor& head) {
    const at::Tensor h = head.to(at::kFloat).contiguous();
    rewrite_adapter(good, to, [&](auto& t) {
      t[base_key] = {"F32", h.sizes().vec(),
                     std::string(static_cast<const char*>(h.data_ptr()), h.nbytes())};
    });
  };
  auto error_of = [&](const fs::path& adapter, const spec::LoraSpec& l) {
    Llama m = load_model(ck, shape, l, 8);
    try {
      load_peft_adapter(m, shape, l, adapter.string());
    } catch (const spec::HfCheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };

  // The checkpoint's own head, as peft saves it: the logits of the adapter without it.
  Llama reference = load_model(ck, shape, lora, 8);
  load_peft_adapter(reference, shape, lora, good.string());
  const at::Tensor head = reference->lm_head->weight.detach().clone();
  with_head(dir_ / "same-head", head);
  Llama target = load_model(ck, shape, lora, 8);
  load_peft_adapter(target, shape, lora, (dir_ / "same-head").string());
  EXPECT_TRUE(at::equal(logits_of(target), logits_of(reference)));

  // Another head replaces the checkpoint's, as in peft.
  const at::Tensor other = head * 0.5;
  with_head(dir_ / "other-head", other);
  load_peft_adapter(target, shape, lora, (dir_ / "other-head").string());
  EXPECT_TRUE(at::equal(target->lm_head->weight, other));
  EXPECT_FALSE(at::equal(logits_of(target), logits_of(reference)));

  // Only next to an adapter on the head, and in the head's shape.
  const fs::path wrong = dir_ / "wrong-shape";
  with_head(wrong, head.narrow(1, 0, 32));
  EXPECT_EQ(error_of(wrong, lora), (wrong / "adapter_model.safetensors").string() + ": key \"" +
                                       base_key + "\" has shape [97, 32], expected [97, 64]");
  const spec::LoraSpec qv = lora_on({"q", "v"});
  Llama qv_model = load_model(ck, shape, qv, 3);
  const fs::path qv_adapter = dir_ / "qv";
  write_peft_adapter(qv_model, shape, qv, "", qv_adapter.string(), false);
  const fs::path qv_head = dir_ / "qv-head";
  rewrite_adapter(qv_adapter, qv_head, [&](auto& t) {
    const at::Tensor h = head.contiguous();
    t[base_key] = {"F32", h.sizes().vec(),
                   std::string(static_cast<const char*>(h.data_ptr()), h.nbytes())};
  });
  EXPECT_NE(error_of(qv_head, qv).find(": unexpected key \"" + base_key + "\""), std::string::npos)
      << error_of(qv_head, qv);
}

TEST_F(PeftAdapter, BadAdaptersAreRefusedNamingFileAndKey) {
  const fs::path ck = dir_ / "ck";
  const spec::HfConfig config = make_checkpoint(ck, "--dtype float32 --shards 1");
  const spec::ModelSpec& shape = config.shape;
  const spec::LoraSpec lora = lora_on({"q", "v"});
  Llama model = load_model(ck, shape, lora, 3);
  const fs::path good = dir_ / "good";
  write_peft_adapter(model, shape, lora, "", good.string(), false);

  Llama target = load_model(ck, shape, lora, 8);
  const at::Tensor before = logits_of(target);
  auto error_of = [&](const fs::path& adapter, const spec::LoraSpec& l, Llama& m) {
    try {
      load_peft_adapter(m, shape, l, adapter.string());
    } catch (const spec::HfCheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const fs::path bad = dir_ / "bad";
  const std::string file = (bad / "adapter_model.safetensors").string();
  const std::string v1b = "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight";
  const std::string q0a = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";

  // Another rank: the config says so before any tensor is read.
  {
    const spec::LoraSpec rank8 = lora_on({"q", "v"}, 8);
    Llama other = load_model(ck, shape, rank8, 8);
    EXPECT_EQ(error_of(good, rank8, other),
              (good / "adapter_config.json").string() +
                  ": the adapter does not fit the model's LoRA: r is 4, the model's lora.rank 8");
    const spec::LoraSpec qkv = lora_on({"q", "k", "v"});
    Llama third = load_model(ck, shape, qkv, 8);
    EXPECT_EQ(error_of(good, qkv, third),
              (good / "adapter_config.json").string() +
                  ": the adapter does not fit the model's LoRA: target_modules is [q_proj, "
                  "v_proj], the model's lora.targets [q_proj, k_proj, v_proj]");
  }
  rewrite_adapter(good, bad, [&](auto& t) { t.erase(v1b); });
  EXPECT_EQ(error_of(bad, lora, target), file + ": 1 key missing: " + v1b);

  rewrite_adapter(good, bad, [&](auto& t) {
    t["base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight"] = t.at(q0a);
  });
  EXPECT_EQ(error_of(bad, lora, target),
            file +
                ": unexpected key \"base_model.model.model.layers.0.self_attn.k_proj.lora_A"
                ".weight\": expected base_model.model.<module>.lora_A.weight or .lora_B.weight "
                "of a targeted module (target_modules: q_proj, v_proj)");

  rewrite_adapter(good, bad, [&](auto& t) {
    t["base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight"] = t.at(q0a);
    t.erase(q0a);
  });
  EXPECT_NE(error_of(bad, lora, target).find("\".default.\" is the adapter's name"),
            std::string::npos)
      << error_of(bad, lora, target);

  rewrite_adapter(good, bad, [&](auto& t) { t.at(q0a).shape = {64, 4}; });
  EXPECT_EQ(error_of(bad, lora, target),
            file + ": key \"" + q0a + "\" has shape [64, 4], expected [4, 64]");

  rewrite_adapter(good, bad, [&](auto& t) { t.at(q0a).dtype = "I32"; });
  EXPECT_EQ(error_of(bad, lora, target),
            file + ": key \"" + q0a + "\" is I32; expected F32, F16 or BF16");

  fs::remove(bad / "adapter_model.safetensors");
  EXPECT_EQ(error_of(bad, lora, target).rfind(file + ": cannot open", 0), 0u)
      << error_of(bad, lora, target);

  // A shape that is not the model's is the caller's mistake.
  spec::ModelSpec three_layers = shape;
  three_layers.n_layers = 3;
  EXPECT_THROW(load_peft_adapter(target, three_layers, lora, good.string()), std::invalid_argument);

  // A refused adapter leaves the model's adapters as they were.
  EXPECT_TRUE(at::equal(logits_of(target), before));
}

}  // namespace
}  // namespace ftbench::hf
