// LoRA training's numerics against two independent references: the gradient of every adapter A
// and B, and the adapters after clipped AdamW steps with weight decay, computed by ftbench (the
// model's loss_sum and backward as the Trainer runs them for the gradients; train::Trainer
// itself, with 2 micro-batches accumulated, for the steps) on a small random HF checkpoint
// (tests/reference/hf_checkpoint.py), against
// - Numpy: the float64 NumPy backward written by hand in tests/reference/llama_numpy_backward.py
//   (Debian's /usr/bin/python3 with numpy), and
// - Peft: transformers' LlamaForCausalLM with peft's PeftModel.from_pretrained of ftbench's
//   exported adapter, torch autograd, torch.nn.utils.clip_grad_norm_ and torch.optim.AdamW in
//   fp32 (tests/reference/peft_reference.py, the pinned environment's FTBENCH_PYTHON,
//   model/hf/hf_python.h).
// Tolerance (the references' defaults): gradients atol 1e-6 + rtol 1e-4, adapter weights atol
// 1e-6 + rtol 1e-5, losses and gradient norms rtol 1e-5. Controls that must fail the same
// comparison: the gradients with one adapter's sign flipped, and steps made without clipping or
// without weight decay. Skipped without the reference's Python, except on CI.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "../hf_python.h"
#include "data/dataset.h"
#include "data/torch/batcher.h"
#include "device/torch/backend.h"
#include "model/hf/checkpoint_layout.h"
#include "model/hf/torch/hf_load.h"
#include "model/hf/torch/peft_adapter.h"
#include "model/torch/llama.h"
#include "numpy_reference_test.h"
#include "report/report_io.h"
#include "spec/checkpoint_config.h"
#include "train/torch/trainer.h"

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

enum class Reference { kNumpy, kPeft };
// gtest's name for a parameter in its messages.
void PrintTo(Reference r, std::ostream* os) { *os << (r == Reference::kNumpy ? "Numpy" : "Peft"); }

class LoraBackward : public NumpyReferenceTest, public ::testing::WithParamInterface<Reference> {
 protected:
  // The PEFT reference runs every script (the checkpoint's too) with FTBENCH_PYTHON.
  void SetUp() override {
    if (GetParam() == Reference::kPeft) {
      std::string why;
      python_ = test_env::hf_python(why);
      if (python_.empty()) {
        if (test_env::on_ci()) FAIL() << why << " (on CI)";
        GTEST_SKIP() << why;
      }
    }
    NumpyReferenceTest::SetUp();
  }

  // Checkpoint, model with random adapters (B nonzero: with B = 0 every A gradient is zero),
  // the run's spec, and the adapter before training exported to dir_/initial.
  void prepare(std::vector<std::string> targets) {
    const fs::path ck = dir_ / "ck";
    ASSERT_EQ(python("hf_checkpoint.py' make '" + ck.string() + "' " + kShape), 0) << log();
    const spec::HfConfig config = spec::parse_hf_config(
        report::read_whole_file((ck / "config.json").string()), (ck / "config.json").string());
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
    trainer.run(result, [&](const train::StepMeasurement& rec) {
      stepped.push_back(dir_ / (name + "_" + std::to_string(rec.step)));
      write_peft_adapter(model_, s.model, s.lora, "", stepped.back().string(), false);
      return train::AfterStep::kContinue;
    });
    EXPECT_EQ(result.steps.size(), 2u);
    EXPECT_EQ(result.optimizer_updates, 2);
    return stepped;
  }

  // One comparison: ftbench's gradients (`grads`, may be empty) and adapters after each step
  // (`stepped`), with the losses and gradient norms of `result`, against the reference's steps
  // under `s`'s optimizer settings.
  struct Check {
    fs::path grads;
    std::vector<fs::path> stepped;
    const train::TrainResult* result = nullptr;
    const spec::RunSpec* spec = nullptr;
  };
  // Its outcome: 0 within tolerance, 1 outside, 2 bad input (no result); the reference's
  // measurements (its -o file).
  struct Checked {
    int code = 2;
    nlohmann::json measured;
  };

  // The reference's check command line of `c` (named `name`: its STEP.json and result file).
  std::string check_args(const std::string& name, const Check& c) {
    nlohmann::json step;
    step["examples"] = nlohmann::json::array();
    for (int64_t i = 0; i < dataset_.size(); ++i) {
      step["examples"].push_back(
          {{"tokens", dataset_.at(i).tokens}, {"prompt_tokens", dataset_.at(i).prompt_tokens}});
    }
    step["steps"] = c.result->steps.size();
    const spec::TrainSpec& t = c.spec->train;
    step["optimizer"] = {{"lr", t.lr},
                         {"beta1", t.beta1},
                         {"beta2", t.beta2},
                         {"eps", t.eps},
                         {"weight_decay", t.weight_decay},
                         {"max_grad_norm", t.max_grad_norm}};
    step["losses"] = nlohmann::json::array();
    step["grad_norms"] = nlohmann::json::array();
    for (const train::StepMeasurement& rec : c.result->steps) {
      step["losses"].push_back(rec.loss);
      step["grad_norms"].push_back(rec.grad_norm);
    }
    const fs::path step_file = dir_ / ("step-" + name + ".json");
    const fs::path result_file = dir_ / ("result-" + name + ".json");
    std::ofstream(step_file) << step.dump();
    fs::remove(result_file);
    std::string args = " check --checkpoint '" + c.spec->model.checkpoint + "' --adapter '" +
                       (dir_ / "initial").string() + "' --step '" + step_file.string() + "' -o '" +
                       result_file.string() + "'";
    if (!c.grads.empty()) args += " --grads '" + c.grads.string() + "'";
    for (const fs::path& p : c.stepped) args += " --stepped '" + p.string() + "'";
    return args;
  }

  // The reference's verdict on every check, in order. NumPy: llama_numpy_backward.py, one
  // process per check. PEFT: peft_reference.py, all of them in one process (its checks chained
  // with "+": importing torch, transformers and peft takes longer than the checks). Both print
  // their measurements (kept in all_logs_).
  std::vector<Checked> check(const std::vector<Check>& checks) {
    std::vector<Checked> out(checks.size());
    std::vector<std::string> args;
    for (size_t i = 0; i < checks.size(); ++i)
      args.push_back(check_args(std::to_string(i), checks[i]));
    all_logs_.clear();
    if (GetParam() == Reference::kNumpy) {
      for (size_t i = 0; i < checks.size(); ++i) {
        out[i].code = python("llama_numpy_backward.py'" + args[i]);
        all_logs_ += log();
      }
    } else {
      std::string chain = "peft_reference.py'";
      for (size_t i = 0; i < checks.size(); ++i) chain += (i ? " +" : "") + args[i];
      const int code = python(chain);
      all_logs_ = log();
      EXPECT_TRUE(code == 0 || code == 1) << all_logs_;
    }
    for (size_t i = 0; i < checks.size(); ++i) {
      const fs::path result_file = dir_ / ("result-" + std::to_string(i) + ".json");
      if (!fs::exists(result_file)) continue;
      out[i].measured = nlohmann::json::parse(report::read_whole_file(result_file.string()));
      const int code = out[i].measured.value("ok", false) ? 0 : 1;
      if (GetParam() == Reference::kNumpy) {
        EXPECT_EQ(out[i].code, code) << all_logs_;  // the exit code says what the file says
      }
      out[i].code = code;
    }
    return out;
  }

  // The whole comparison for adapters on `targets`, and the sign-flip control: the gradient of
  // parameter `flip` negated must fail, and only that tensor (PEFT's `flip_module`). With
  // `step_controls`, the Trainer's steps without clipping, and without weight decay, against the
  // reference's steps with both: each must fail.
  void gradients_and_steps_match(std::vector<std::string> targets, const std::string& flip,
                                 const std::string& flip_module, bool step_controls) {
    prepare(std::move(targets));
    if (HasFatalFailure()) return;
    const double loss = write_gradients(dir_ / "grads");
    train::TrainResult result;
    const std::vector<fs::path> stepped = train(spec_, "trained", result);
    EXPECT_NEAR(result.steps.at(0).loss, loss, 1e-6);  // the Trainer's loss is the test's
    write_gradients(dir_ / "flipped", flip);
    std::vector<Check> checks = {{dir_ / "grads", stepped, &result, &spec_},
                                 {dir_ / "flipped", {}, &result, &spec_}};
    const char* kStepControls[] = {"unclipped", "no_decay"};
    std::vector<train::TrainResult> wrong_results(2);
    if (step_controls) {
      for (size_t i = 0; i < 2; ++i) {
        spec::RunSpec wrong = spec_;
        (i == 0 ? wrong.train.max_grad_norm : wrong.train.weight_decay) = 0.0;
        checks.push_back(
            {{}, train(wrong, kStepControls[i], wrong_results[i]), &wrong_results[i], &spec_});
      }
    }
    const std::vector<Checked> checked = check(checks);
    std::printf("%s", all_logs_.c_str());  // the measured differences, for the record

    for (const Checked& c : checked) ASSERT_TRUE(c.measured.is_object()) << all_logs_;
    EXPECT_EQ(checked[0].code, 0) << all_logs_;
    const nlohmann::json& measured = checked[0].measured;
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

    // Control: one adapter's gradient with its sign flipped fails, that tensor alone.
    EXPECT_EQ(checked[1].code, 1) << "one gradient's sign flipped must fail";
    EXPECT_EQ(checked[1].measured["gradients"]["failed"], nlohmann::json::array({flip_module}));
    // Controls: the steps without clipping, or without weight decay, fail from step 1 on.
    for (size_t i = 0; step_controls && i < 2; ++i) {
      EXPECT_EQ(checked[2 + i].code, 1) << "steps " << kStepControls[i] << " must fail";
      EXPECT_FALSE(checked[2 + i].measured["weights_after_step_1"]["ok"].get<bool>())
          << kStepControls[i];
    }
  }

  const FixedExamples dataset_;
  spec::RunSpec spec_;
  Llama model_{nullptr};
  std::string all_logs_;  // the reference's output of the last check()
};

TEST_P(LoraBackward, AttentionAndMlpAdaptersGradientsAndClippedAdamWStepsMatchTheReference) {
  // q and v of the fused qkv (k without an adapter), o, up of the fused gate_up, down; the
  // frozen LM head takes the chunked cross-entropy path.
  gradients_and_steps_match({"q", "v", "o", "up", "down"}, "layer1.qkv.lora_a_v",
                            "model.layers.1.self_attn.v_proj.lora_A", /*step_controls=*/true);
}

TEST_P(LoraBackward, EveryTargetWithTheLmHeadAdapterMatchesTheReference) {
  // Every target, the LM head's adapter too (the full cross-entropy path).
  gradients_and_steps_match({"q", "k", "v", "o", "gate", "up", "down", "output"},
                            "lm_head.lora_b_output", "lm_head.lora_B", /*step_controls=*/false);
}

INSTANTIATE_TEST_SUITE_P(, LoraBackward, ::testing::Values(Reference::kNumpy, Reference::kPeft),
                         [](const ::testing::TestParamInfo<Reference>& info) {
                           return info.param == Reference::kNumpy ? "Numpy" : "Peft";
                         });

}  // namespace
}  // namespace ftbench::hf
