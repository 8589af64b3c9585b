// End to end: `ftbench run` on a Hugging Face checkpoint (model.checkpoint), the PEFT adapter and
// merged weights it exports, and `ftbench logits` on them, checked two ways within the fp32
// tolerance atol = rtol = 1e-4:
// - HfRun: against the independent float64 NumPy Llama (tests/reference/llama_numpy.py), on
//   random checkpoints written in HF layout by tests/reference/hf_checkpoint.py. Needs Debian's
//   /usr/bin/python3 with numpy.
// - HfLibraries: against transformers and peft themselves (scripts/reference/check_hf.py), on
//   checkpoints and adapters that transformers and peft wrote (tests/reference/hf_transformers.py),
//   each with controls that carry one mapping mistake and must fail the same comparison. Needs
//   the pinned environment's Python (FTBENCH_PYTHON, tests/model/hf/hf_python.h).
// Both skipped without their Python, except on CI (ci_env.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../ci_env.h"
#include "../model/hf/hf_python.h"
#include "ftbench_process.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;
using ftbench::e2e::shell_quote;
using nlohmann::json;

constexpr const char* kPython = "/usr/bin/python3";

struct Result {
  int exit_code = -1;
  std::string output;  // stderr, then stdout
};

// A scratch folder and the ftbench executable.
class HfCliTest : public ::testing::Test {
 protected:
  Result ftbench(const std::string& args) {
    const ftbench::e2e::Outcome o = run_ftbench(args, dir_, "", 300.0);
    EXPECT_EQ(o.signal, 0) << "killed by signal " << o.signal << "\n" << o.err;
    return {o.exit_code, o.err + o.out};
  }

  ScratchDir scratch_{"ftbench-hfrun"};
  const fs::path dir_ = scratch_.path();
};

class HfRun : public HfCliTest {
 protected:
  void SetUp() override {
    if (std::system((std::string(kPython) + " -c 'import numpy' 2>/dev/null").c_str()) != 0) {
      if (ftbench::test_env::on_ci()) FAIL() << "numpy is missing on CI";
      GTEST_SKIP() << "no numpy for " << kPython;
    }
  }

  // Runs a reference script; its exit code, its output in `log`.
  int python(const std::string& script_and_args, std::string* log = nullptr) {
    const fs::path out = dir_ / "py.log";
    const std::string cmd = std::string(kPython) + " " +
                            shell_quote(std::string(FTBENCH_SOURCE_DIR) + "/tests/reference/") +
                            script_and_args + " > " + shell_quote(out.string()) + " 2>&1";
    const int status = std::system(cmd.c_str());
    if (log != nullptr) *log = ftbench::e2e::slurp(out);
    return WEXITSTATUS(status);
  }

  // A random checkpoint: 2 layers, GQA, Llama 3 rope scaling, vocabulary for the byte tokenizer.
  fs::path make_checkpoint(const std::string& name, int seed, int shards = 2) {
    const fs::path ck = dir_ / name;
    std::string log;
    const int rc =
        python("hf_checkpoint.py make " + shell_quote(ck.string()) +
                   " --layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 96 --vocab 300 "
                   "--rope-theta 500000 --rope-scaling llama3 --rope-original-max-position 32 "
                   "--max-position 256 --dtype float32 --shards " +
                   std::to_string(shards) + " --seed " + std::to_string(seed),
               &log);
    EXPECT_EQ(rc, 0) << log;
    return ck;
  }

  // configs/ci-tiny.yaml on the checkpoint: 4 steps of LoRA on every target.
  std::string run_args(const fs::path& ck, const std::string& name) const {
    return "run configs/ci-tiny.yaml --set model.preset=custom --set model.checkpoint=" +
           shell_quote(ck.string()) +
           " --set data.num_examples=32 --set lora.targets=[q,k,v,o,gate,up,down,output] "
           "--set lora.dropout=0 --set output.progress=off -o " +
           shell_quote((dir_ / (name + ".json")).string());
  }
};

// The whole way: load, train, export both ways, and the exported files give the logits the
// NumPy reference computes from the same files.
TEST_F(HfRun, TrainsOnACheckpointAndExportsWhatTheReferenceReads) {
  const fs::path ck = make_checkpoint("ck", 3);
  {
    std::ofstream(ck / "generation_config.json") << "{\"bos_token_id\": 1, \"do_sample\": true}\n";
    json config = json::parse(ftbench::e2e::slurp(ck / "config.json"));
    config["bos_token_id"] = 128000;
    config["eos_token_id"] = json::array({128001, 128009});
    std::ofstream(ck / "config.json") << config.dump(2);
  }
  const fs::path adapter = dir_ / "adapter";
  const fs::path merged = dir_ / "merged";
  // max_seq_len sizes the run's rotary table; the merged model keeps the checkpoint's context.
  const Result run = ftbench(run_args(ck, "run") + " --set model.max_seq_len=200" +
                             " --set output.adapter=" + shell_quote(adapter.string()) +
                             " --set output.merged=" + shell_quote(merged.string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // The summary says where the weights came from and where the exports went.
  // Its size in the summary's units (0.4 MB: a few hundred KiB).
  const size_t weights = run.output.find("  weights                   " + ck.string() + ": ");
  ASSERT_NE(weights, std::string::npos) << run.output;
  EXPECT_NE(run.output.substr(weights, run.output.find('\n', weights) - weights).find(" KiB in "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("  adapter (PEFT)            " + adapter.string() + " ("),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("  merged weights            " + merged.string() + " ("),
            std::string::npos)
      << run.output;

  const json report = json::parse(ftbench::e2e::slurp(dir_ / "run.json"));
  EXPECT_EQ(report["schema"], "ftbench.report/1.13");
  const json& w = report["weights"];
  EXPECT_EQ(w["source"], "checkpoint");
  EXPECT_EQ(w["path"], ck.string());
  EXPECT_EQ(w["format"], "safetensors");
  EXPECT_EQ(w["files"], 2);
  // embed, 2 x (4 attention + 3 MLP + 2 norms), final norm, lm_head.
  EXPECT_EQ(w["tensors"], 21);
  // fp32: embed and lm_head 300 x 64, per layer q 64x64, k v 32x64, o 64x64, 3 x 96x64, 2 x 64.
  const int64_t per_layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 96 * 64 + 2 * 64;
  EXPECT_EQ(w["bytes"].get<int64_t>(), 4 * (2 * 300 * 64 + 2 * per_layer + 64));
  EXPECT_GT(w["bytes_per_second"].get<double>(), 0.0);
  EXPECT_EQ(w["fingerprint"].get<std::string>().size(), 64u);
  ASSERT_EQ(report["exports"].size(), 2u);
  EXPECT_EQ(report["exports"][0]["kind"], "peft_adapter");
  EXPECT_EQ(report["exports"][0]["path"], adapter.string());
  EXPECT_EQ(report["exports"][1]["kind"], "merged");
  std::vector<std::string> phases;
  for (const json& p : report["timing"]["phases"]) phases.push_back(p["name"]);
  for (const char* phase : {"weight_load", "adapter_export", "merged_export"}) {
    EXPECT_NE(std::find(phases.begin(), phases.end(), phase), phases.end()) << phase;
  }
  EXPECT_EQ(report["steps"].size(), 4u);
  // The merged folder carries what the source says beyond the shape.
  const json merged_config = json::parse(ftbench::e2e::slurp(merged / "config.json"));
  EXPECT_EQ(merged_config["bos_token_id"], 128000);
  EXPECT_EQ(merged_config["eos_token_id"], json::array({128001, 128009}));
  EXPECT_EQ(merged_config["max_position_embeddings"], 256);
  EXPECT_EQ(report["spec"]["model"]["max_seq_len"], 200);
  EXPECT_EQ(ftbench::e2e::slurp(merged / "generation_config.json"),
            ftbench::e2e::slurp(ck / "generation_config.json"));
  const json adapter_config = json::parse(ftbench::e2e::slurp(adapter / "adapter_config.json"));
  EXPECT_EQ(adapter_config["base_model_name_or_path"], ck.string());
  EXPECT_EQ(adapter_config["target_modules"],
            json::array({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                         "down_proj", "lm_head"}));

  // The adapter on the checkpoint, in ftbench and in the NumPy reference.
  const std::string ids = "1,17,250,33,5,299,64,7;9,8,7,6,5,4,3,2";
  const fs::path with_adapter = dir_ / "adapter-logits.json";
  Result logits = ftbench("logits --checkpoint " + shell_quote(ck.string()) + " --adapter " +
                          shell_quote(adapter.string()) + " --ids '" + ids + "' --device cpu -o " +
                          shell_quote(with_adapter.string()));
  ASSERT_EQ(logits.exit_code, 0) << logits.output;
  std::string log;
  EXPECT_EQ(
      python("llama_numpy.py compare --checkpoint " + shell_quote(ck.string()) + " --adapter " +
                 shell_quote(adapter.string()) + " --logits " + shell_quote(with_adapter.string()),
             &log),
      0)
      << log;
  EXPECT_NE(log.find(": ok"), std::string::npos) << log;
  // The merged folder is the same model.
  EXPECT_EQ(python("llama_numpy.py compare --checkpoint " + shell_quote(merged.string()) +
                       " --logits " + shell_quote(with_adapter.string()),
                   &log),
            0)
      << log;
  // Training moved the adapter: the base alone is another model (so these checks can fail).
  EXPECT_EQ(python("llama_numpy.py compare --checkpoint " + shell_quote(ck.string()) +
                       " --logits " + shell_quote(with_adapter.string()),
                   &log),
            1)
      << log;
  EXPECT_NE(log.find("MISMATCH"), std::string::npos) << log;
  // And ftbench's merged model gives the adapter's logits.
  const fs::path from_merged = dir_ / "merged-logits.json";
  logits = ftbench("logits --checkpoint " + shell_quote(merged.string()) + " --ids '" + ids +
                   "' --device cpu -o " + shell_quote(from_merged.string()));
  ASSERT_EQ(logits.exit_code, 0) << logits.output;
  const json a = json::parse(ftbench::e2e::slurp(with_adapter));
  const json b = json::parse(ftbench::e2e::slurp(from_merged));
  double max_diff = 0.0;
  for (size_t r = 0; r < 2; ++r) {
    for (size_t s = 0; s < 8; ++s) {
      for (size_t v = 0; v < 300; ++v) {
        max_diff = std::max(max_diff, std::abs(a["logits"][r][s][v].get<double>() -
                                               b["logits"][r][s][v].get<double>()));
      }
    }
  }
  EXPECT_LT(max_diff, 1e-5);
  EXPECT_NEAR(a["loss"].get<double>(), b["loss"].get<double>(), 1e-5);

  // An adapter that scales by 1e308 / r overflows: an error, not logits and a loss of null
  // with exit 0 (found by a review).
  const fs::path huge = dir_ / "huge-alpha";
  fs::copy(adapter, huge);
  json huge_config = adapter_config;
  huge_config["lora_alpha"] = 1e308;
  std::ofstream(huge / "adapter_config.json") << huge_config.dump(2);
  const fs::path none = dir_ / "huge-logits.json";
  logits = ftbench("logits --checkpoint " + shell_quote(ck.string()) + " --adapter " +
                   shell_quote(huge.string()) + " --ids '" + ids + "' --device cpu -o " +
                   shell_quote(none.string()));
  EXPECT_EQ(logits.exit_code, 3) << logits.output;
  EXPECT_NE(logits.output.find("error: the logits are not all finite: "), std::string::npos)
      << logits.output;
  EXPECT_NE(logits.output.find("lora_alpha 1e+308 / r 8"), std::string::npos) << logits.output;
  EXPECT_FALSE(fs::exists(none));
}

// A base split across two ranks is read unit by unit from the checkpoint's two files: the
// same weights (fingerprint), the same training, bit for bit, and the same merged export as two
// ranks that each hold the whole base.
TEST_F(HfRun, ASplitBaseLoadsTheCheckpointUnitByUnit) {
  const fs::path ck = make_checkpoint("ck", 5);
  for (const std::string how : {"none", "node"}) {
    const Result run = ftbench("run --nproc-per-node 2 " + run_args(ck, how).substr(4) +
                               " --set distributed.shard_base=" + how + " --set output.merged=" +
                               shell_quote((dir_ / (how + "-merged")).string()));
    ASSERT_EQ(run.exit_code, 0) << how << "\n" << run.output;
  }
  const json none = json::parse(ftbench::e2e::slurp(dir_ / "none.json"));
  const json node = json::parse(ftbench::e2e::slurp(dir_ / "node.json"));
  EXPECT_EQ(node["distributed"]["ranks"][1]["shard_group_size"], 2);
  EXPECT_EQ(node["weights"]["fingerprint"], none["weights"]["fingerprint"]);
  EXPECT_EQ(node["weights"]["tensors"], 21);
  ASSERT_EQ(node["steps"].size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(node["steps"][i]["loss"], none["steps"][i]["loss"]) << "step " << i + 1;
  }
  EXPECT_TRUE(ftbench::e2e::slurp(dir_ / "none-merged" / "model.safetensors") ==
              ftbench::e2e::slurp(dir_ / "node-merged" / "model.safetensors"));
}

// The same checkpoint in another folder is the same job with the same weights; other weights of
// the same shape are the same spec but a different weights fingerprint, which compare flags.
TEST_F(HfRun, WeightsFingerprintFollowsTheContentNotThePath) {
  const fs::path ck = make_checkpoint("ck", 3);
  fs::copy(ck, dir_ / "copy", fs::copy_options::recursive);
  const fs::path other = make_checkpoint("other", 4);
  for (const auto& [folder, name] :
       {std::pair<fs::path, std::string>{ck, "a"}, {dir_ / "copy", "b"}, {other, "c"}}) {
    const Result r = ftbench(run_args(folder, name) + " --set data.num_examples=8");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const json a = json::parse(ftbench::e2e::slurp(dir_ / "a.json"));
  const json b = json::parse(ftbench::e2e::slurp(dir_ / "b.json"));
  const json c = json::parse(ftbench::e2e::slurp(dir_ / "c.json"));
  EXPECT_EQ(a["spec_fingerprint"], b["spec_fingerprint"]);
  EXPECT_EQ(a["spec_fingerprint"], c["spec_fingerprint"]);
  EXPECT_EQ(a["weights"]["fingerprint"], b["weights"]["fingerprint"]);
  EXPECT_NE(a["weights"]["fingerprint"], c["weights"]["fingerprint"]);
  // Same weights, same data, same seeds: the same losses.
  EXPECT_EQ(a["steps"][0]["loss"], b["steps"][0]["loss"]);

  Result cmp = ftbench("compare --format json " + shell_quote((dir_ / "a.json").string()) + " " +
                       shell_quote((dir_ / "b.json").string()));
  ASSERT_EQ(cmp.exit_code, 0) << cmp.output;
  // Other weights: refused as another job, the weights named, unless asked to go on.
  const std::string ac =
      shell_quote((dir_ / "a.json").string()) + " " + shell_quote((dir_ / "c.json").string());
  cmp = ftbench("compare " + ac);
  EXPECT_EQ(cmp.exit_code, 2) << cmp.output;
  EXPECT_NE(cmp.output.find("[job] weights fingerprint: A: " +
                            a["weights"]["fingerprint"].get<std::string>()),
            std::string::npos)
      << cmp.output;
  // Random weights of the same shape: another job too (the spec fingerprints differ, and the
  // reports say which weights).
  const json& shape = a["spec"]["model"];
  std::string shape_args;
  for (const char* key : {"dim", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "vocab_size",
                          "max_seq_len", "norm_eps", "rope_theta"}) {
    shape_args += std::string(" --set model.") + key + "=" + shape[key].dump();
  }
  const json& sc = shape["rope_scaling"];
  shape_args +=
      " --set 'model.rope_scaling={factor: " + sc["factor"].dump() +
      ", low_freq_factor: " + sc["low_freq_factor"].dump() +
      ", high_freq_factor: " + sc["high_freq_factor"].dump() +
      ", original_max_position_embeddings: " + sc["original_max_position_embeddings"].dump() + "}'";
  const Result random =
      ftbench("run configs/ci-tiny.yaml --set model.preset=custom" + shape_args +
              " --set data.num_examples=8 --set lora.targets=[q,k,v,o,gate,up,down,output] "
              "--set lora.dropout=0 --set output.progress=off -o " +
              shell_quote((dir_ / "r.json").string()));
  ASSERT_EQ(random.exit_code, 0) << random.output;
  cmp = ftbench("compare " + shell_quote((dir_ / "a.json").string()) + " " +
                shell_quote((dir_ / "r.json").string()));
  EXPECT_EQ(cmp.exit_code, 2) << cmp.output;
  EXPECT_NE(cmp.output.find("[job] weights: A: checkpoint | B: random"), std::string::npos)
      << cmp.output;

  cmp = ftbench("compare --format json --allow-different " + ac);
  ASSERT_EQ(cmp.exit_code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("\"same_job\": false"), std::string::npos) << cmp.output;
}

// A run stopped on one checkpoint resumes only on the same weights: other weights of the same
// shape at the same path are refused (exit 2) before training, with both fingerprints named.
TEST_F(HfRun, ResumeRefusesOtherWeights) {
  const fs::path ck = make_checkpoint("ck", 3);
  const std::string args = run_args(ck, "stopped") + " --set train.checkpoint.every_steps=2 " +
                           "--set train.checkpoint.dir=" + shell_quote((dir_ / "cps").string());
  Result r = ftbench(args + " --stop-after-steps 2");
  ASSERT_EQ(r.exit_code, 4) << r.output;
  const json stopped = json::parse(ftbench::e2e::slurp(dir_ / "stopped.json"));
  const std::string before = stopped["weights"]["fingerprint"];
  fs::remove_all(ck);
  make_checkpoint("ck", 4);
  r = ftbench(args + " --resume latest");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("saved by a run on other base weights (weights fingerprint " +
                          before.substr(0, 12)),
            std::string::npos)
      << r.output;
  // The interrupted report is kept as it was.
  EXPECT_EQ(json::parse(ftbench::e2e::slurp(dir_ / "stopped.json"))["run"]["status"],
            "interrupted");
  // On the original weights it resumes and completes.
  fs::remove_all(ck);
  make_checkpoint("ck", 3);
  r = ftbench(args + " --resume latest");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Bad checkpoints and taken export folders stop the run before any training, with exit code 2
// or 5, a message naming the file, and no report.
TEST_F(HfRun, MalformedCheckpointsAndTakenFoldersAreRefused) {
  const fs::path ck = make_checkpoint("ck", 3, 1);
  // A tensor missing from the only file: the reference writer makes it, then one is dropped.
  std::string log;
  const fs::path broken = dir_ / "broken";
  fs::copy(ck, broken, fs::copy_options::recursive);
  ASSERT_EQ(python("hf_checkpoint.py drop-tensor " + shell_quote(broken.string()) +
                       " model.layers.1.mlp.down_proj.weight",
                   &log),
            0)
      << log;
  Result r = ftbench(run_args(broken, "broken"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("1 tensor missing: model.layers.1.mlp.down_proj.weight"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "broken.json"));

  // Truncated tensor data: the header promises more bytes than the file has.
  const fs::path truncated = dir_ / "truncated";
  fs::copy(ck, truncated, fs::copy_options::recursive);
  fs::resize_file(truncated / "model.safetensors",
                  fs::file_size(truncated / "model.safetensors") - 4);
  r = ftbench(run_args(truncated, "truncated"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find((truncated / "model.safetensors").string()), std::string::npos)
      << r.output;

  // A header that claims more bytes than the file has.
  const fs::path bad_header = dir_ / "bad-header";
  fs::copy(ck, bad_header, fs::copy_options::recursive);
  {
    std::fstream f(bad_header / "model.safetensors",
                   std::ios::in | std::ios::out | std::ios::binary);
    const char huge[8] = {'\x00', '\x00', '\x00', '\x00', '\x00', '\x00', '\x01', '\x00'};
    f.write(huge, 8);
  }
  r = ftbench(run_args(bad_header, "bad-header"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find((bad_header / "model.safetensors").string()), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "bad-header.json"));

  // `ftbench logits` checks what it is given before building anything.
  r = ftbench("logits --checkpoint " + shell_quote(ck.string()) + " --ids '1,2;3'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--ids: expected rows of equal, non-zero length"), std::string::npos)
      << r.output;
  r = ftbench("logits --checkpoint " + shell_quote(ck.string()) + " --ids '1,300'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("expected token ids in [0, 300)"), std::string::npos) << r.output;
  r = ftbench("logits --checkpoint " + shell_quote(ck.string()) + " --adapter " +
              shell_quote(ck.string()) + " --ids 1,2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("adapter_config.json"), std::string::npos) << r.output;

  // A config.json that disagrees with the spec.
  r = ftbench(run_args(ck, "conflict") + " --set model.n_layers=3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.n_layers: 3 here, 2 in"), std::string::npos) << r.output;

  // Export folders that cannot be written: refused before the run starts, not after training.
  std::ofstream(dir_ / "a-file") << "x";
  r = ftbench(run_args(ck, "parent") +
              " --set output.adapter=" + shell_quote((dir_ / "a-file" / "adapter").string()));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("cannot write " + (dir_ / "a-file" / "adapter").string() +
                          " (output.adapter): cannot create folder"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << r.output;
  fs::create_symlink(dir_ / "nowhere", dir_ / "dangling");
  r = ftbench(run_args(ck, "dangling") +
              " --set output.merged=" + shell_quote((dir_ / "dangling").string()));
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("(output.merged); pass --force"), std::string::npos) << r.output;

  // An export folder that exists: refused before the run starts.
  fs::create_directories(dir_ / "taken");
  r = ftbench(run_args(ck, "taken") +
              " --set output.adapter=" + shell_quote((dir_ / "taken").string()));
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("(output.adapter); pass --force"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "taken.json"));
}

// ftbench against transformers and peft themselves, on CPU in fp32: checkpoints written by
// LlamaForCausalLM.save_pretrained and adapters by PeftModel.save_pretrained
// (tests/reference/hf_transformers.py), compared by scripts/reference/check_hf.py (tolerance
// atol = rtol = 1e-4: both sides in fp32 lie some 1e-6 apart on these models). Every comparison
// has a control, a copy with one plausible mapping mistake, that must fail it by far more than
// the tolerance, so that a comparison that cannot fail does not pass for one that checked.
class HfLibraries : public HfCliTest {
 protected:
  // GQA, Llama 3 rope scaling whose original context (256) puts the rotary frequencies of
  // head_dim 16 in all three of its regimes, unusual eps and theta: a setting misread shows
  // (tests/reference/README.md). Vocabulary 300: the byte tokenizer's ids fit.
  static constexpr const char* kShape =
      "--layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 96 --vocab 300 --rope-theta 500000 "
      "--rope-scaling llama3 --rope-original-max-position 256 --rms-norm-eps 1e-3 "
      "--max-position 512";
  static constexpr const char* kIds =
      "1,17,250,33,5,299,64,7,120,8,8,200,31,2,77,150,9,41,260,3;"
      "9,8,7,6,5,4,3,2,100,101,102,103,280,12,99,64,64,1,0,11";
  // A control must miss by this much at least: 100 times the tolerance's atol.
  static constexpr double kControlMargin = 1e-2;

  struct Case {
    std::string name;
    fs::path checkpoint;
    fs::path adapter;  // empty: none
    fs::path logits;   // ftbench's
  };

  void SetUp() override {
    std::string why;
    python_ = ftbench::test_env::hf_python(why);
    if (python_.empty()) {
      if (ftbench::test_env::on_ci()) FAIL() << why << " (on CI)";
      GTEST_SKIP() << why;
    }
  }

  static std::string q(const fs::path& p) { return shell_quote(p.string()); }

  // tests/reference/hf_transformers.py `args` (commands separated by " + " run in one process):
  // its exit code, its output in log_.
  int hf(const std::string& args) {
    const fs::path out = dir_ / "hf.log";
    const int status =
        std::system(ftbench::test_env::hf_python_command(python_, FTBENCH_SOURCE_DIR,
                                                         "hf_transformers.py " + args, out.string())
                        .c_str());
    log_ = ftbench::e2e::slurp(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // `ftbench logits` of `checkpoint` (+ `adapter`) for kIds, written to dir_/<name>.json.
  fs::path logits(const std::string& name, const fs::path& checkpoint,
                  const fs::path& adapter = {}) {
    const fs::path out = dir_ / (name + ".json");
    const Result r = ftbench("logits --checkpoint " + q(checkpoint) +
                             (adapter.empty() ? "" : " --adapter " + q(adapter)) + " --ids '" +
                             kIds + "' --device cpu -o " + q(out));
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
    return out;
  }

  // check_hf.py --cases on CPU in fp32, after the hf_transformers.py commands `before` (" + "
  // separated, may be empty) in the same process: its result file, cases by name.
  json check(const std::vector<Case>& cases, const std::string& before = "") {
    json list = json::array();
    for (const Case& c : cases) {
      json item = {
          {"name", c.name}, {"checkpoint", c.checkpoint.string()}, {"logits", c.logits.string()}};
      if (!c.adapter.empty()) item["adapter"] = c.adapter.string();
      list.push_back(item);
    }
    std::ofstream(dir_ / "cases.json") << list.dump(1);
    const fs::path result = dir_ / "check.json";
    fs::remove(result);
    const int code = hf(before + (before.empty() ? "" : " + ") + "check-hf --cases " +
                        q(dir_ / "cases.json") + " --device cpu --dtype float32 -o " + q(result));
    std::printf("%s", log_.c_str());              // the measured differences, for the record
    EXPECT_TRUE(code == 0 || code == 1) << log_;  // 2: a case could not be compared at all
    json by_name = json::object();
    if (!fs::exists(result)) {
      ADD_FAILURE() << "no " << result << "\n" << log_;
      return by_name;
    }
    const json doc = json::parse(ftbench::e2e::slurp(result));
    EXPECT_EQ(doc["atol"], 1e-4);
    EXPECT_EQ(doc["rtol"], 1e-4);
    for (const json& c : doc["cases"]) by_name[c["name"].get<std::string>()] = c;
    return by_name;
  }

  static void expect_match(const json& results, const std::string& name) {
    ASSERT_TRUE(results.contains(name)) << name;
    const json& r = results[name];
    EXPECT_FALSE(r.contains("error")) << name << ": " << r.dump();
    EXPECT_TRUE(r["ok"].get<bool>()) << name << ": " << r.dump();
    EXPECT_TRUE(r.contains("loss")) << name;  // ftbench's file has the loss: compared too
  }

  // A control: compared (no error) and outside the tolerance by kControlMargin at least.
  static void expect_mismatch(const json& results, const std::string& name) {
    ASSERT_TRUE(results.contains(name)) << name;
    const json& r = results[name];
    EXPECT_FALSE(r.contains("error")) << name << ": " << r.dump();
    EXPECT_FALSE(r["ok"].get<bool>()) << name << " must not match: " << r.dump();
    EXPECT_GT(r["logits"]["max_abs_diff"].get<double>(), kControlMargin) << name;
  }

  std::string python_;
  std::string log_;
};

// transformers' own checkpoints: GQA with an untied and with a tied head, the config.json of
// transformers 5 (rope_parameters, dtype). Controls: one square projection transposed, q and k
// rows permuted between the rotate_half (HF) and interleaved (Meta) rotary layouts as
// convert_llama_weights_to_hf permutes them, and the rope scaling left out of config.json.
TEST_F(HfLibraries, LogitsAndLossMatchLlamaForCausalLM) {
  const fs::path ck = dir_ / "ck", tied = dir_ / "tied", transposed = dir_ / "transposed",
                 permuted = dir_ / "rope-permuted", unscaled = dir_ / "unscaled";
  ASSERT_EQ(hf("make " + q(ck) + " " + kShape + " --seed 5 + make " + q(tied) + " " + kShape +
               " --tie --seed 6 + alter " + q(ck) + " " + q(transposed) +
               " --transpose model.layers.1.self_attn.o_proj.weight + alter " + q(ck) + " " +
               q(permuted) + " --rope-permute"),
            0)
      << log_;
  json config = json::parse(ftbench::e2e::slurp(ck / "config.json"));
  EXPECT_EQ(config["rope_parameters"]["rope_type"], "llama3") << config.dump(1);
  EXPECT_FALSE(config.contains("rope_scaling")) << config.dump(1);
  EXPECT_EQ(config["dtype"], "float32") << config.dump(1);
  EXPECT_FALSE(fs::exists(tied / "model.safetensors.index.json"));
  fs::copy(ck, unscaled);
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  std::ofstream(unscaled / "config.json") << config.dump(2);

  const std::vector<Case> cases = {
      {"untied", ck, {}, logits("untied", ck)},
      {"tied", tied, {}, logits("tied", tied)},
      {"control: o_proj transposed", ck, {}, logits("t", transposed)},
      {"control: rotary layout permuted", ck, {}, logits("p", permuted)},
      {"control: rope scaling left out", ck, {}, logits("u", unscaled)}};
  ASSERT_FALSE(HasFailure());
  const json results = check(cases);
  expect_match(results, "untied");
  expect_match(results, "tied");
  expect_mismatch(results, "control: o_proj transposed");
  expect_mismatch(results, "control: rotary layout permuted");
  expect_mismatch(results, "control: rope scaling left out");
}

// Adapters both ways and the merged weights: ftbench applies an adapter peft saved (random A and
// B on k, v, o, gate, up and lm_head: slices of ftbench's fused qkv and gate_up without their
// neighbours, and the head) as peft does; peft applies the adapter ftbench exported after
// training on every target as ftbench does; transformers on ftbench's merged export gives the
// adapter's logits. The same with a tied head, whose merged export unties it. Controls: two
// tensors of one shape swapped in either adapter (gate's and up's B; q's and k's A: a slice of a
// fused projection mapped to its neighbour), a square tensor of the merged export transposed, and
// the base without the trained adapter.
TEST_F(HfLibraries, AdaptersAndMergedWeightsCrossBetweenFtbenchAndPeft) {
  const fs::path ck = dir_ / "ck", peft = dir_ / "peft", peft_swapped = dir_ / "peft-swapped";
  const fs::path tied = dir_ / "tied", peft_tied = dir_ / "peft-tied";
  const std::string p = "base_model.model.model.layers.";
  ASSERT_EQ(hf("make " + q(ck) + " " + kShape + " --seed 7 + make-adapter " + q(peft) +
               " --checkpoint " + q(ck) +
               " --targets k_proj,v_proj,o_proj,gate_proj,up_proj,lm_head --r 4 --alpha 12 "
               "--seed 8 + alter " +
               q(peft) + " " + q(peft_swapped) + " --swap " + p + "0.mlp.gate_proj.lora_B.weight " +
               p + "0.mlp.up_proj.lora_B.weight + make " + q(tied) + " " + kShape +
               " --tie --seed 9 + make-adapter " + q(peft_tied) + " --checkpoint " + q(tied) +
               " --targets q_proj,lm_head --r 4 --alpha 12 --seed 10"),
            0)
      << log_;

  // Trained by ftbench (lr 2e-2, so that the adapter moves the logits well past the tolerance
  // in 4 steps) and exported both ways.
  auto train = [&](const fs::path& checkpoint, const std::string& name) {
    const Result run = ftbench(
        "run configs/ci-tiny.yaml --set model.preset=custom --set model.checkpoint=" +
        q(checkpoint) +
        " --set data.num_examples=32 --set lora.targets=[q,k,v,o,gate,up,down,output] "
        "--set lora.dropout=0 --set train.lr=2e-2 --set output.progress=off "
        "--set output.adapter=" +
        q(dir_ / (name + "-adapter")) + " --set output.merged=" + q(dir_ / (name + "-merged")) +
        " -o " + q(dir_ / (name + "-run.json")));
    EXPECT_EQ(run.exit_code, 0) << name << ": " << run.output;
  };
  train(ck, "untied");
  train(tied, "tied");
  ASSERT_FALSE(HasFailure());
  const fs::path adapter = dir_ / "untied-adapter", merged = dir_ / "untied-merged";
  const fs::path trained = logits("trained", ck, adapter);
  const fs::path trained_tied = logits("trained-tied", tied, dir_ / "tied-adapter");
  EXPECT_EQ(
      json::parse(ftbench::e2e::slurp(dir_ / "tied-merged" / "config.json"))["tie_word_embeddings"],
      false);

  const std::vector<Case> cases = {
      {"peft's adapter in ftbench", ck, peft, logits("peft", ck, peft)},
      {"control: peft's adapter with gate and up B swapped", ck, peft,
       logits("peft-swapped", ck, peft_swapped)},
      {"ftbench's adapter in peft", ck, adapter, trained},
      {"control: ftbench's adapter with q and k A swapped", ck, dir_ / "adapter-swapped", trained},
      {"ftbench's merged weights in transformers", merged, {}, trained},
      {"control: merged weights with q_proj transposed", dir_ / "merged-transposed", {}, trained},
      {"control: the base without the trained adapter", ck, {}, trained},
      {"tied head: peft's adapter in ftbench", tied, peft_tied,
       logits("peft-tied", tied, peft_tied)},
      {"tied head: ftbench's adapter in peft", tied, dir_ / "tied-adapter", trained_tied},
      {"tied head: ftbench's merged (untied) weights in transformers",
       dir_ / "tied-merged",
       {},
       trained_tied}};
  ASSERT_FALSE(HasFailure());
  const json results = check(cases, "alter " + q(adapter) + " " + q(dir_ / "adapter-swapped") +
                                        " --swap " + p + "1.self_attn.q_proj.lora_A.weight " + p +
                                        "1.self_attn.k_proj.lora_A.weight + alter " + q(merged) +
                                        " " + q(dir_ / "merged-transposed") +
                                        " --transpose model.layers.0.self_attn.q_proj.weight");
  expect_match(results, "peft's adapter in ftbench");
  expect_mismatch(results, "control: peft's adapter with gate and up B swapped");
  expect_match(results, "ftbench's adapter in peft");
  expect_mismatch(results, "control: ftbench's adapter with q and k A swapped");
  expect_match(results, "ftbench's merged weights in transformers");
  expect_mismatch(results, "control: merged weights with q_proj transposed");
  expect_mismatch(results, "control: the base without the trained adapter");
  expect_match(results, "tied head: peft's adapter in ftbench");
  expect_match(results, "tied head: ftbench's adapter in peft");
  expect_match(results, "tied head: ftbench's merged (untied) weights in transformers");
}

}  // namespace
