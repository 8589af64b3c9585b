// End to end: `ftbench run` on a Hugging Face checkpoint (model.checkpoint), the PEFT adapter and
// merged weights it exports, `ftbench logits` on them, and the independent float64 NumPy Llama
// (tests/reference/llama_numpy.py) agreeing within its fp32 tolerance (atol = rtol = 1e-4).
// The checkpoints are random, written in HF layout by tests/reference/hf_checkpoint.py. Needs
// Debian's /usr/bin/python3 with numpy; skipped without it, except on CI (ci_env.h).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../ci_env.h"
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

class HfRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system((std::string(kPython) + " -c 'import numpy' 2>/dev/null").c_str()) != 0) {
      if (ftbench::test_env::on_ci()) FAIL() << "numpy is missing on CI";
      GTEST_SKIP() << "no numpy for " << kPython;
    }
  }

  Result ftbench(const std::string& args) {
    const ftbench::e2e::Outcome o = run_ftbench(args, dir_, "", 300.0);
    EXPECT_EQ(o.signal, 0) << "killed by signal " << o.signal << "\n" << o.err;
    return {o.exit_code, o.err + o.out};
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

  ScratchDir scratch_{"ftbench-hfrun"};
  const fs::path dir_ = scratch_.path();
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
  EXPECT_NE(run.output.find("  weights                   " + ck.string() + ": 0.4 MB in "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("  adapter (PEFT)            " + adapter.string() + " ("),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("  merged weights            " + merged.string() + " ("),
            std::string::npos)
      << run.output;

  const json report = json::parse(ftbench::e2e::slurp(dir_ / "run.json"));
  EXPECT_EQ(report["schema"], "ftbench.report/1.11");
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

}  // namespace
