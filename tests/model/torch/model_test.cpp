// Numerical tests of the model against direct formulas, with stated tolerances.
#include <cmath>

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "device/torch/torch_version.h"
#include "model/torch/llama.h"
#include "model/torch/lora_linear.h"
#include "model/torch/rope.h"
#include "model/torch/sdpa.h"
#include "small_model.h"

namespace ftbench::model {
namespace {

using testing::all_targets;
using testing::max_abs_diff;
using testing::small_model;

TEST(LoraLinear, ZeroBEqualsTheBaseLayer) {
  at::manual_seed(0);
  LinearSlice q{"q", 12, {4, 8.0, 0.0, at::kFloat}};
  LinearSlice k{"k", 6, {}};
  LoraLinear layer(10, std::vector<LinearSlice>{q, k}, at::TensorOptions().dtype(at::kFloat));
  layer->init_random(0.5);
  const at::Tensor x = at::randn({3, 5, 10});
  const std::vector<at::Tensor> out = layer->forward(x);
  const at::Tensor base = at::matmul(x, layer->weight.t());
  EXPECT_EQ(max_abs_diff(at::cat(out, -1), base), 0.0);
}

TEST(LoraLinear, MergedWeightMatchesTheAdapterPath) {
  at::manual_seed(1);
  LinearSlice a{"gate", 7, {3, 6.0, 0.0, at::kFloat}};
  LinearSlice b{"up", 5, {2, 16.0, 0.0, at::kFloat}};
  LoraLinear layer(9, std::vector<LinearSlice>{a, b}, at::TensorOptions().dtype(at::kFloat));
  layer->init_random(0.3);
  {
    at::NoGradGuard no_grad;
    for (at::Tensor& lb : layer->lora_b) lb.normal_(0.0, 0.5);  // non-zero B
  }
  const at::Tensor x = at::randn({4, 9});
  const at::Tensor adapter_path = at::cat(layer->forward(x), -1);
  const at::Tensor merged = at::matmul(x, layer->merged_weight().t());
  // Tolerance: fp32 sums of 9-term products, both ~1e-7 relative.
  EXPECT_LT(max_abs_diff(adapter_path, merged), 1e-5);
  EXPECT_GT(max_abs_diff(adapter_path, at::matmul(x, layer->weight.t())), 1e-2);
}

TEST(Rope, MatchesTheDirectFormula) {
  const int64_t d = 8;
  const int64_t s = 6;
  const double theta = 10000.0;
  const RopeTables t = make_rope_tables(s, d, theta, std::nullopt, at::kDouble);
  const at::Tensor x = at::randn({1, s, 1, d}, at::kDouble);
  const at::Tensor y = apply_rope(x, t);
  // Rotation of the pairs (j, j + d/2) by angle p * theta^(-2j/d).
  for (int64_t p = 0; p < s; ++p) {
    for (int64_t j = 0; j < d / 2; ++j) {
      const double angle = double(p) * std::pow(theta, -2.0 * double(j) / double(d));
      const double x1 = x[0][p][0][j].item<double>();
      const double x2 = x[0][p][0][j + d / 2].item<double>();
      // Tables are computed in fp32 (as in the reference implementation): tolerance 1e-5.
      EXPECT_NEAR(y[0][p][0][j].item<double>(), x1 * std::cos(angle) - x2 * std::sin(angle), 1e-5);
      EXPECT_NEAR(y[0][p][0][j + d / 2].item<double>(), x2 * std::cos(angle) + x1 * std::sin(angle),
                  1e-5);
    }
  }
}

TEST(Rope, Llama31ScalingOfInverseFrequencies) {
  spec::RopeScaling sc;  // factor 8, low 1, high 4, original 8192
  const at::Tensor plain = rope_inverse_frequencies(128, 500000.0, std::nullopt);
  const at::Tensor scaled = rope_inverse_frequencies(128, 500000.0, sc);
  for (int64_t i = 0; i < 64; ++i) {
    const double f = plain[i].item<double>();
    const double wavelen = 2.0 * M_PI / f;
    double expected = f;
    if (wavelen > 8192.0) {
      expected = f / 8.0;
    } else if (wavelen >= 2048.0) {
      const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
      expected = (1 - smooth) * f / 8.0 + smooth * f;
    }
    EXPECT_DOUBLE_EQ(scaled[i].item<double>(), expected) << "i=" << i;
  }
  // High frequencies unchanged, the lowest divided by the factor.
  EXPECT_DOUBLE_EQ(scaled[0].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(scaled[63].item<double>(), plain[63].item<double>() / 8.0);
}

TEST(Attention, FusedMatchesTheReferenceWithGqa) {
  at::manual_seed(2);
  const at::Tensor q = at::randn({2, 4, 7, 8});
  const at::Tensor k = at::randn({2, 2, 7, 8});
  const at::Tensor v = at::randn({2, 2, 7, 8});
  EXPECT_LT(max_abs_diff(causal_sdpa(q, k, v), causal_attention_reference(q, k, v)), 1e-5);
}

// The report's execution.attention_kernel, asked of LibTorch for padded rows (no mask: the op
// must be given none, not an undefined one, which LibTorch 2.15 takes for a mask and refuses) and
// for packed rows (a boolean mask). On a CPU from 2.5: the flash kernel or the math one; before:
// ftbench's blocked attention (< 2.2) or "unknown".
TEST(Attention, TheKernelNameIsAskedWithAndWithoutAMask) {
  const at::Device cpu(at::kCPU);
  for (const bool packed : {false, true}) {
    for (const auto& [heads, kv_heads] : std::vector<std::pair<int64_t, int64_t>>{{4, 2}, {4, 4}}) {
      std::string name;
      ASSERT_NO_THROW(name = attention_kernel_name(cpu, at::kFloat, heads, kv_heads, 16, packed))
          << packed << " " << heads << "/" << kv_heads;
#if FTBENCH_TORCH_AT_LEAST(2, 5)
      EXPECT_TRUE(name == "flash_attention" || name == "math") << name;
#elif FTBENCH_TORCH_AT_LEAST(2, 2)
      EXPECT_EQ(name, "unknown");
#else
      EXPECT_EQ(name, "blocked_math");
#endif
    }
  }
}

TEST(Attention, GqaWithAsManyKvHeadsIsMultiHeadAttention) {
  at::manual_seed(3);
  const at::Tensor q = at::randn({1, 3, 5, 4}, at::kDouble);
  const at::Tensor k = at::randn({1, 3, 5, 4}, at::kDouble);
  const at::Tensor v = at::randn({1, 3, 5, 4}, at::kDouble);
  // Plain multi-head attention written out head by head.
  for (int64_t h = 0; h < 3; ++h) {
    const at::Tensor qh = q[0][h];
    const at::Tensor scores = at::matmul(qh, k[0][h].t()) / 2.0;  // sqrt(4)
    const at::Tensor mask = at::ones({5, 5}, at::kBool).triu(1);
    const at::Tensor p = at::softmax(scores.masked_fill(mask, -INFINITY), -1);
    const at::Tensor expected = at::matmul(p, v[0][h]);
    EXPECT_LT(max_abs_diff(causal_sdpa(q, k, v)[0][h], expected), 1e-12);
  }
}

TEST(Llama, CausalFutureTokensLeaveEarlierLogitsUnchanged) {
  at::manual_seed(4);
  Llama model(small_model(), all_targets(4), 16, at::kCPU);
  model->init_random();
  model->eval();
  at::NoGradGuard no_grad;
  const at::Tensor ids = at::randint(0, 50, {2, 12}, at::kLong);
  at::Tensor changed = ids.clone();
  changed.narrow(1, 8, 4).random_(0, 50);
  const at::Tensor a = model->forward(ids);
  const at::Tensor b = model->forward(changed);
  EXPECT_LT(max_abs_diff(a.narrow(1, 0, 8), b.narrow(1, 0, 8)), 1e-6);
  EXPECT_GT(max_abs_diff(a.narrow(1, 8, 4), b.narrow(1, 8, 4)), 1e-4);
}

TEST(Llama, OnlyLoraParametersGetGradients) {
  at::manual_seed(5);
  spec::LoraSpec lora = all_targets(2);
  lora.targets = {"q", "v", "down"};
  Llama model(small_model(), lora, 16, at::kCPU);
  model->init_random();
  const std::vector<at::Tensor> trainable = model->trainable_parameters();
  EXPECT_EQ(trainable.size(), 2u * 3u * 2u);  // A and B, 3 targets, 2 layers
  model->train();
  const at::Tensor ids = at::randint(0, 50, {2, 10}, at::kLong);
  model->loss_sum(ids, ids).backward();
  for (const auto& p : model->named_parameters()) {
    const bool adapter = p.key().find("lora_") != std::string::npos;
    EXPECT_EQ(p.value().requires_grad(), adapter) << p.key();
    if (adapter) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
    } else {
      EXPECT_FALSE(p.value().grad().defined()) << p.key();
    }
  }
  // B starts at zero, so A's gradient is zero on the first step; B's is not.
  for (const auto& p : model->named_parameters()) {
    if (p.key().find("lora_b") != std::string::npos) {
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
    }
  }
}

// Every policy (model.activation_checkpointing) trains the same: the same loss and gradients as
// no checkpointing, with dropout on every projection (the recompute must draw the same masks),
// on padded and on packed rows (segments, gathered rotary tables). Selective keeps the GEMM and
// attention outputs and replays the rest through its own nodes (selective_recompute.h), so its
// gradients are summed in another order: within 1e-6 of none's.
TEST(Llama, EveryCheckpointingPolicyGivesTheSameLossAndGradients) {
  spec::LoraSpec lora = all_targets(3);
  lora.dropout = 0.1;
  const at::Tensor ids = at::randint(0, 50, {2, 9}, at::kLong);
  const at::Tensor positions = at::tensor({0, 1, 2, 3, 0, 1, 2, 0, 1}, at::kLong).repeat({2, 1});
  const at::Tensor segments = at::tensor({0, 0, 0, 0, 1, 1, 1, 2, 2}, at::kLong).repeat({2, 1});
  for (const bool packed : {false, true}) {
    const std::vector<std::string> policies = {"none", "full", "selective"};
    std::vector<std::vector<at::Tensor>> grads(policies.size());
    std::vector<double> losses(policies.size());
    for (std::size_t run = 0; run < policies.size(); ++run) {
      at::manual_seed(6);
      spec::ModelSpec m = small_model();
      m.activation_checkpointing = policies[run];
      Llama model(m, lora, 16, at::kCPU);
      model->init_random();
      std::vector<at::Tensor> params = model->trainable_parameters();
      {
        at::NoGradGuard no_grad;  // non-zero B so every adapter gets a gradient
        for (auto& p : model->named_parameters()) {
          if (p.key().find("lora_b") != std::string::npos) p.value().normal_(0.0, 0.1);
        }
      }
      model->train();
      at::manual_seed(7);
      const at::Tensor loss =
          packed ? model->loss_sum(ids, ids, {}, positions, segments) : model->loss_sum(ids, ids);
      loss.backward();
      losses[run] = loss.item<double>();
      for (const at::Tensor& p : params) grads[run].push_back(p.grad().clone());
    }
    for (std::size_t run = 1; run < policies.size(); ++run) {
      const std::string what = policies[run] + (packed ? ", packed" : "");
      EXPECT_DOUBLE_EQ(losses[0], losses[run]) << what;
      ASSERT_EQ(grads[0].size(), grads[run].size()) << what;
      for (size_t i = 0; i < grads[0].size(); ++i) {
        EXPECT_LT(max_abs_diff(grads[0][i], grads[run][i]), 1e-6) << what << ", parameter " << i;
        EXPECT_GT(grads[run][i].abs().sum().item<double>(), 0.0) << what << ", parameter " << i;
      }
    }
  }
}

TEST(Llama, AutoIsResolvedBeforeTheModelIsBuilt) {
  spec::ModelSpec m = small_model();
  m.activation_checkpointing = "auto";
  try {
    Llama model(m, all_targets(2), 16, at::kCPU);
    FAIL() << "built a model with auto";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "model.activation_checkpointing: expected full, selective or none (auto is "
                 "resolved before the model is built), found \"auto\"");
  }
}

TEST(Llama, TiedEmbeddingsShareOneTensor) {
  spec::ModelSpec m = small_model();
  m.tie_embeddings = true;
  Llama model(m, all_targets(2), 16, at::kCPU);
  EXPECT_TRUE(model->embedding.is_same(model->lm_head->weight));
  int64_t base = 0;
  for (const auto& p : model->named_parameters()) {
    if (p.key().find("lora_") == std::string::npos) base += p.value().numel();
  }
  // 2 layers x (qkv 32*(32+16+16) + o 32*32 + gate_up 32*96 + down 48*32 + norms 64) + final
  // norm 32 + one shared 50x32 table.
  EXPECT_EQ(base, 2 * (32 * 64 + 32 * 32 + 32 * 96 + 48 * 32 + 64) + 32 + 50 * 32);
}

TEST(Llama, Bf16ModelRunsForwardAndBackward) {
  at::manual_seed(8);
  spec::ModelSpec m = small_model();
  m.dtype = "bf16";
  Llama model(m, all_targets(2), 16, at::kCPU);
  model->init_random();
  const std::vector<at::Tensor> params = model->trainable_parameters();
  EXPECT_EQ(model->layers[0]->qkv->weight.scalar_type(), at::kBFloat16);
  EXPECT_EQ(params[0].scalar_type(), at::kFloat);  // adapters in fp32 by default
  const at::Tensor ids = at::randint(0, 50, {2, 8}, at::kLong);
  const at::Tensor loss = model->loss_sum(ids, ids);
  EXPECT_EQ(loss.scalar_type(), at::kFloat);
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  EXPECT_EQ(params[1].grad().scalar_type(), at::kFloat);
}

TEST(Llama, LossOnLabelPositionsOnlyEqualsTheFullLoss) {
  at::manual_seed(9);
  Llama model(small_model(), all_targets(2), 16, at::kCPU);
  model->init_random();
  model->eval();
  const at::Tensor ids = at::randint(0, 50, {2, 10}, at::kLong);
  at::Tensor labels = at::full({2, 10}, -100, at::kLong);
  labels.narrow(1, 4, 5).copy_(ids.narrow(1, 5, 5));
  const at::Tensor positions = labels.reshape({-1}).ne(-100).nonzero().reshape({-1});
  ASSERT_EQ(positions.numel(), 10);
  const double full = model->loss_sum(ids, labels).item<double>();
  const double selected = model->loss_sum(ids, labels, positions).item<double>();
  // Same rows, same fp32 arithmetic per row: equal up to summation order.
  EXPECT_NEAR(full, selected, 1e-5 * std::abs(full));
}

// Without LoRA on `output` the LM head is frozen and loss_sum takes the chunked path
// (model/torch/chunked_loss.h): its loss and adapter gradients equal cross_entropy over the whole
// logits of forward(), up to fp32 summation order.
TEST(Llama, FrozenHeadChunkedLossMatchesCrossEntropyOverTheLogits) {
  spec::LoraSpec lora = all_targets(2);
  lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  const at::Tensor ids = at::randint(0, 50, {3, 11}, at::kLong);
  at::Tensor labels = ids.roll(-1, 1).clone();
  labels.select(1, 10).fill_(-100);
  labels.narrow(1, 0, 3).fill_(-100);  // a masked prompt
  std::vector<at::Tensor> grads[2];
  double losses[2];
  for (int run = 0; run < 2; ++run) {
    at::manual_seed(12);
    Llama model(small_model(), lora, 16, at::kCPU);
    model->init_random();
    std::vector<at::Tensor> params = model->trainable_parameters();
    {
      at::NoGradGuard no_grad;
      for (auto& p : model->named_parameters()) {
        if (p.key().find("lora_b") != std::string::npos) p.value().normal_(0.0, 0.1);
      }
    }
    ASSERT_FALSE(model->lm_head->weight.requires_grad());
    const at::Tensor loss =
        run == 0 ? model->loss_sum(ids, labels)
                 : at::cross_entropy_loss(model->forward(ids).reshape({-1, 50}).to(at::kFloat),
                                          labels.reshape({-1}), {}, at::Reduction::Sum, -100);
    loss.backward();
    losses[run] = loss.item<double>();
    for (const at::Tensor& p : params) grads[run].push_back(p.grad().clone());
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-6 * std::abs(losses[1]));
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_LT(max_abs_diff(grads[0][i], grads[1][i]), 1e-6) << "parameter " << i;
  }
}

TEST(Attention, LongSequencesMatchTheReference) {
  // 200 positions: several query blocks on the CPU path, with a short last block.
  at::manual_seed(10);
  const at::Tensor q = at::randn({1, 4, 200, 16}, at::kDouble);
  const at::Tensor k = at::randn({1, 2, 200, 16}, at::kDouble);
  const at::Tensor v = at::randn({1, 2, 200, 16}, at::kDouble);
  EXPECT_LT(max_abs_diff(causal_sdpa(q, k, v), causal_attention_reference(q, k, v)), 1e-12);
  const at::Tensor qg = q.clone().requires_grad_(true);
  const at::Tensor qr = q.clone().requires_grad_(true);
  causal_sdpa(qg, k, v).sum().backward();
  causal_attention_reference(qr, k, v).sum().backward();
  EXPECT_LT(max_abs_diff(qg.grad(), qr.grad()), 1e-12);
}

}  // namespace
}  // namespace ftbench::model
