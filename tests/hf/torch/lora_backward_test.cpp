// LoRA training's numerics against an independent reference: the gradient of every adapter A
// and B, and the adapters after clipped AdamW steps with weight decay, computed by ftbench (the
// model's loss_sum and backward as the Trainer runs them for the gradients; train::Trainer
// itself, with 2 micro-batches accumulated, for the steps) against the float64 NumPy backward
// written by hand in tests/reference/llama_numpy_backward.py, on a small random HF checkpoint
// (tests/reference/hf_checkpoint.py). Tolerance (llama_numpy_backward.py's defaults): gradients
// atol 1e-6 + rtol 1e-4, adapter weights atol 1e-6 + rtol 1e-5, losses and gradient norms rtol
// 1e-5. Controls that must fail the same comparison: the gradients with one adapter's sign
// flipped, and steps made without clipping or without weight decay. Needs Debian's
// /usr/bin/python3 with numpy; skipped without it, except on CI.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "ftbench/data/batcher.h"
#include "ftbench/data/dataset.h"
#include "ftbench/device/backend.h"
#include "ftbench/hf/hf_config.h"
#include "ftbench/hf/hf_load.h"
#include "ftbench/hf/peft_adapter.h"
#include "ftbench/model/llama.h"
#include "ftbench/report/report_io.h"
#include "ftbench/train/trainer.h"
#include "numpy_reference_test.h"

namespace ftbench::hf {
using model::Llama;
namespace {

namespace fs = std::filesystem;

// Unusual settings so that a misread one shows (tests/reference/README.md).
constexpr const char* kShape =
    "--layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 96 --vocab 97 --rope-theta 500000 "
    "--rope-scaling llama3 --rope-factor 8 --rope-original-max-position 16 "
    "--rms-norm-eps 1e-3 --max-position 64 --seed 11 --dtype float32 --shards 1";
constexpr int64_t kSeqLen = 16;
// llama_numpy_backward.py's default tolerance (asserted to be what the check used).
constexpr double kGradAtol = 1e-6;
constexpr double kGradRtol = 1e-4;
constexpr double kWeightAtol = 1e-6;
constexpr double kWeightRtol = 1e-5;

// Four examples in this order, of 12, 9, 16 and 7 tokens (BOS, then tokens in [3, 97)) with 3,
// 0, 5 and 2 prompt tokens: 33 target tokens. Two micro-batches of 2 rows, padded to 12 and 16.
class FixedExamples : public data::Dataset {
 public:
  FixedExamples() {
    const int64_t lengths[] = {12, 9, 16, 7};
    const int64_t prompts[] = {3, 0, 5, 2};
    for (int64_t e = 0; e < 4; ++e) {
      data::Example ex;
      ex.prompt_tokens = prompts[e];
      ex.tokens.push_back(1);
      for (int64_t t = 1; t < lengths[e]; ++t) {
        ex.tokens.push_back(static_cast<int32_t>(3 + (31 * t + 17 * e + t * t) % 94));
      }
      examples_.push_back(std::move(ex));
    }
  }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  const data::Example& at(int64_t i) const override { return examples_.at(static_cast<size_t>(i)); }
  std::string description() const override { return "fixed(4)"; }

 private:
  std::vector<data::Example> examples_;
};

data::Batcher batcher_of(const data::Dataset& ds) {
  data::BatcherOptions o;
  o.micro_batch_size = 2;
  o.seq_len = kSeqLen;
  o.shuffle = false;  // the examples in data set order, every epoch
  o.pad_id = 0;
  return data::Batcher(ds, o, at::kCPU);
}

class LoraBackward : public NumpyReferenceTest {
 protected:
  // Checkpoint, model with random adapters (B nonzero: with B = 0 every A gradient is zero),
  // the run's spec, and the adapter before training exported to dir_/initial.
  void prepare(std::vector<std::string> targets) {
    const fs::path ck = dir_ / "ck";
    ASSERT_EQ(python("hf_checkpoint.py' make '" + ck.string() + "' " + kShape), 0) << log();
    const HfConfig config = parse_hf_config(report::read_whole_file((ck / "config.json").string()),
                                            (ck / "config.json").string());
    spec_.model = config.shape;
    spec_.model.checkpoint = ck.string();
    spec_.lora.rank = 4;
    spec_.lora.alpha = 12.0;  // scale 3
    spec_.lora.dropout = 0.0;
    spec_.lora.targets = std::move(targets);
    spec_.data.seq_len = kSeqLen;
    spec_.data.num_examples = dataset_.size();
    spec_.train.epochs = 2;  // 2 steps, each on all 4 examples
    spec_.train.micro_batch_size = 2;
    spec_.train.grad_accum_steps = 2;
    spec_.train.lr = 1e-2;
    spec_.train.lr_schedule = "constant";
    spec_.train.lr_warmup_steps = 0;
    spec_.train.weight_decay = 0.1;
    spec_.train.beta1 = 0.9;
    spec_.train.beta2 = 0.95;
    // At step 1 Adam's update lr g / (|g| + eps) hardly depends on the scale of g unless eps is
    // comparable with |g|: with eps 1e-3 against gradients of order 1e-2 clipped to about 0.4
    // of themselves, clipping moves the adapters by 2e-3 in step 1, 2000 times the tolerance.
    spec_.train.eps = 1e-3;
    spec_.train.max_grad_norm = 0.5;  // raw norms 1.2 to 1.6: clipping active (asserted below)
    spec_.train.oom_fallback = false;
    spec_.backend.device = "cpu";
    spec_.backend.threads = 2;

    model_ = Llama(spec_.model, spec_.lora, kSeqLen, at::kCPU);
    at::manual_seed(7);
    model_->init_adapters();
    load_hf_weights(model_, ck.string(), spec_.model);
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model_->named_parameters()) {
        if (p.key().find("lora_b") != std::string::npos) p.value().normal_(0.0, 0.05);
      }
    }
    write_peft_adapter(model_, spec_.model, spec_.lora, "", (dir_ / "initial").string(), false);
  }

  // The gradients of the first step's loss, at the initial adapter, as the Trainer computes
  // them (src/train/torch/trainer.cpp): each micro-batch's loss_sum times 1 / (the loss tokens of
  // the whole step), back-propagated, accumulated. Written as a PEFT folder whose A and B hold the
  // gradients (through write_peft_adapter, so that the reference reads them by PEFT's names);
  // `flip`, a parameter name, is written with its sign flipped. Returns the loss.
  double write_gradients(const fs::path& dir, const std::string& flip = "") {
    load_peft_adapter(model_, spec_.model, spec_.lora, (dir_ / "initial").string());
    data::Batcher batcher = batcher_of(dataset_);
    const auto params = model_->trainable_named_parameters();  // also sets requires_grad
    model_->train();
    std::vector<data::MicroBatch> micro_batches = {batcher.get(1, 0), batcher.get(1, 1)};
    int64_t loss_tokens = 0;
    for (const data::MicroBatch& mb : micro_batches) loss_tokens += mb.loss_tokens;
    EXPECT_EQ(loss_tokens, 33);
    double loss_sum = 0.0;
    for (const data::MicroBatch& mb : micro_batches) {
      const at::Tensor loss = model_->loss_sum(mb.input_ids, mb.labels, mb.loss_positions,
                                               mb.position_ids, mb.segment_ids);
      (loss * (1.0 / double(loss_tokens))).backward();
      loss_sum += loss.item<double>();
    }
    std::vector<at::Tensor> weights;
    {
      torch::NoGradGuard no_grad;
      for (const auto& [name, p] : params) {
        weights.push_back(p.detach().clone());
        p.detach().copy_(name == flip ? -p.grad() : p.grad());
      }
    }
    write_peft_adapter(model_, spec_.model, spec_.lora, "", dir.string(), false);
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      at::Tensor p = params[i].second;
      p.detach().copy_(weights[i]);
      p.mutable_grad() = at::Tensor();
    }
    return loss_sum / double(loss_tokens);
  }

  // train::Trainer's steps under `s`, from the initial adapter; the adapter after step k
  // exported to dir_/<name>_k from the step callback. The exported folders, in step order.
  std::vector<fs::path> train(const spec::RunSpec& s, const std::string& name,
                              train::TrainResult& result) {
    load_peft_adapter(model_, s.model, s.lora, (dir_ / "initial").string());
    device::Backend backend(s.backend);
    data::Batcher batcher = batcher_of(dataset_);
    train::Trainer trainer(s, model_, batcher, backend);
    std::vector<fs::path> stepped;
    trainer.run(result, [&](const report::StepRecord& rec) {
      stepped.push_back(dir_ / (name + "_" + std::to_string(rec.step)));
      write_peft_adapter(model_, s.model, s.lora, "", stepped.back().string(), false);
    });
    EXPECT_EQ(result.steps.size(), 2u);
    EXPECT_EQ(result.optimizer_updates, 2);
    return stepped;
  }

  // llama_numpy_backward.py check of `grads` (may be empty) and `stepped` with the Trainer's
  // losses and norms of `result`; its exit code, its measurements in `measured`.
  int check(const fs::path& grads, const std::vector<fs::path>& stepped,
            const train::TrainResult& result, const spec::RunSpec& s, nlohmann::json& measured) {
    nlohmann::json step;
    step["examples"] = nlohmann::json::array();
    for (int64_t i = 0; i < dataset_.size(); ++i) {
      step["examples"].push_back(
          {{"tokens", dataset_.at(i).tokens}, {"prompt_tokens", dataset_.at(i).prompt_tokens}});
    }
    step["steps"] = result.steps.size();
    const spec::TrainSpec& t = s.train;
    step["optimizer"] = {{"lr", t.lr},
                         {"beta1", t.beta1},
                         {"beta2", t.beta2},
                         {"eps", t.eps},
                         {"weight_decay", t.weight_decay},
                         {"max_grad_norm", t.max_grad_norm}};
    step["losses"] = nlohmann::json::array();
    step["grad_norms"] = nlohmann::json::array();
    for (const report::StepRecord& rec : result.steps) {
      step["losses"].push_back(rec.loss);
      step["grad_norms"].push_back(rec.grad_norm);
    }
    std::ofstream(dir_ / "step.json") << step.dump();
    std::string args = "llama_numpy_backward.py' check --checkpoint '" + s.model.checkpoint +
                       "' --adapter '" + (dir_ / "initial").string() + "' --step '" +
                       (dir_ / "step.json").string() + "' -o '" + (dir_ / "result.json").string() +
                       "'";
    if (!grads.empty()) args += " --grads '" + grads.string() + "'";
    for (const fs::path& p : stepped) args += " --stepped '" + p.string() + "'";
    fs::remove(dir_ / "result.json");
    const int code = python(args);
    measured = fs::exists(dir_ / "result.json")
                   ? nlohmann::json::parse(report::read_whole_file((dir_ / "result.json").string()))
                   : nlohmann::json::object();
    return code;
  }

  // The whole comparison for adapters on `targets`, and the sign-flip control: the gradient of
  // parameter `flip` negated must fail, and only that tensor (PEFT's `flip_module`).
  void gradients_and_steps_match(std::vector<std::string> targets, const std::string& flip,
                                 const std::string& flip_module) {
    prepare(std::move(targets));
    if (HasFatalFailure()) return;
    const double loss = write_gradients(dir_ / "grads");
    train::TrainResult result;
    const std::vector<fs::path> stepped = train(spec_, "trained", result);
    EXPECT_NEAR(result.steps.at(0).loss, loss, 1e-6);  // the Trainer's loss is the test's

    nlohmann::json measured;
    EXPECT_EQ(check(dir_ / "grads", stepped, result, spec_, measured), 0) << log();
    std::printf("%s", log().c_str());
    const nlohmann::json& tolerance = measured["tolerance"];
    EXPECT_EQ(tolerance["grad_atol"], kGradAtol);
    EXPECT_EQ(tolerance["grad_rtol"], kGradRtol);
    EXPECT_EQ(tolerance["weight_atol"], kWeightAtol);
    EXPECT_EQ(tolerance["weight_rtol"], kWeightRtol);
    EXPECT_EQ(measured["target_tokens"], 33);
    // Every adapter's A and B is compared, and the gradient of each is far from zero (a flipped
    // sign anywhere would show).
    const bool head = spec_.lora.targets.back() == "output";
    const size_t modules = 2 * (spec_.lora.targets.size() - (head ? 1 : 0)) + (head ? 1 : 0);
    EXPECT_EQ(measured["gradients"]["tensors"], 2 * modules);
    EXPECT_GT(measured["gradients"]["smallest_max_abs"].get<double>(), 1000 * kGradAtol);
    // Clipping is active in both steps, and the controls move the adapters by far more than
    // the tolerance.
    for (double coef : measured["clip_coefficients"]) EXPECT_LT(coef, 0.5);
    EXPECT_GT(measured["unclipped_diff"].get<double>(), 100 * kWeightAtol);
    EXPECT_GT(measured["no_decay_diff"].get<double>(), 100 * kWeightAtol);

    // Control: one adapter's gradient with its sign flipped fails.
    write_gradients(dir_ / "flipped", flip);
    nlohmann::json flipped;
    EXPECT_EQ(check(dir_ / "flipped", {}, result, spec_, flipped), 1) << log();
    std::printf("one gradient's sign flipped (must fail): %s", log().c_str());
    EXPECT_EQ(flipped["gradients"]["failed"], nlohmann::json::array({flip_module}));
  }

  const FixedExamples dataset_;
  spec::RunSpec spec_;
  Llama model_{nullptr};
};

TEST_F(LoraBackward, AttentionAndMlpAdaptersGradientsAndClippedAdamWStepsMatchTheReference) {
  // q and v of the fused qkv (k without an adapter), o, up of the fused gate_up, down; the
  // frozen LM head takes the chunked cross-entropy path.
  gradients_and_steps_match({"q", "v", "o", "up", "down"}, "layer1.qkv.lora_a_v",
                            "model.layers.1.self_attn.v_proj.lora_A");
  if (HasFailure()) return;

  // Controls: the Trainer's steps without clipping, or without weight decay, against the
  // reference's steps with both: each must fail.
  for (const char* what : {"unclipped", "no_decay"}) {
    spec::RunSpec wrong = spec_;
    (std::string(what) == "unclipped" ? wrong.train.max_grad_norm : wrong.train.weight_decay) = 0.0;
    train::TrainResult result;
    const std::vector<fs::path> stepped = train(wrong, what, result);
    nlohmann::json measured;
    EXPECT_EQ(check("", stepped, result, spec_, measured), 1) << what << ": " << log();
    std::printf("steps %s (must fail): %s", what, log().c_str());
    EXPECT_FALSE(measured["weights_after_step_1"]["ok"].get<bool>()) << what;
  }
}

TEST_F(LoraBackward, EveryTargetWithTheLmHeadAdapterMatchesTheReference) {
  // Every target, the LM head's adapter too (the full cross-entropy path).
  gradients_and_steps_match({"q", "k", "v", "o", "gate", "up", "down", "output"},
                            "lm_head.lora_b_output", "lm_head.lora_B");
}

}  // namespace
}  // namespace ftbench::hf
