// The fused blocks (fused_blocks.h) against the composite forms they replace (the oracle, kept as
// LoraLinearImpl::forward_unfused and DecoderLayerImpl::forward_unfused), forward and gradient:
// in fp32 and fp64 on a CPU to a stated tolerance, and in bf16 where the rounding order is the
// claim (exactly).
#include "model/torch/fused_blocks.h"

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "model/torch/llama.h"
#include "model/torch/lora_linear.h"
#include "model/torch/rope.h"
#include "spec/run_spec.h"

namespace ftbench::model {
namespace {

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// fp32 against fp32 computed in another order: a few ulps of values of order 1-10.
constexpr double kFp32Tolerance = 1e-4;

LoraLinear qkv_layer(at::ScalarType base, at::ScalarType adapters, double dropout) {
  // q and v adapted (ranks 4 and 2), k not: slices of unequal sizes and ranks.
  std::vector<LinearSlice> slices = {
      {"q", 12, {4, 8.0, dropout, adapters}}, {"k", 6, {}}, {"v", 6, {2, 3.0, dropout, adapters}}};
  LoraLinear layer(16, slices, at::TensorOptions().dtype(base));
  layer->init_random(0.2);
  at::NoGradGuard no_grad;
  for (at::Tensor& b : layer->lora_b) {
    if (b.defined()) b.normal_(0.0, 0.3);  // a trained adapter, not a fresh (zero) one
  }
  return layer;
}

struct Grads {
  at::Tensor out, x;
  std::vector<at::Tensor> a, b;
};

Grads run_layer(LoraLinear& layer, const at::Tensor& x_in, const at::Tensor& upstream, bool fused,
                uint64_t seed) {
  layer->set_fused(fused);
  for (auto& p : layer->parameters()) p.mutable_grad() = at::Tensor();
  at::manual_seed(seed);
  const at::Tensor x = x_in.detach().clone().requires_grad_(true);
  const std::vector<at::Tensor> outs = layer->forward(x);
  const at::Tensor out = at::cat(outs, -1);
  out.backward(upstream.to(out.scalar_type()));
  Grads g{out.detach(), x.grad(), {}, {}};
  for (size_t i = 0; i < layer->lora_a.size(); ++i) {
    if (!layer->lora_a[i].defined()) continue;
    g.a.push_back(layer->lora_a[i].grad().clone());
    g.b.push_back(layer->lora_b[i].grad().clone());
  }
  return g;
}

void expect_close(const Grads& f, const Grads& u, double tolerance) {
  EXPECT_LT(max_abs_diff(f.out, u.out), tolerance);
  EXPECT_LT(max_abs_diff(f.x, u.x), tolerance);
  ASSERT_EQ(f.a.size(), u.a.size());
  for (size_t i = 0; i < f.a.size(); ++i) {
    EXPECT_LT(max_abs_diff(f.a[i], u.a[i]), tolerance) << "A " << i;
    EXPECT_LT(max_abs_diff(f.b[i], u.b[i]), tolerance) << "B " << i;
  }
}

TEST(FusedBlocks, LoraMatchesTheCompositeFormWithoutDropout) {
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    LoraLinear layer = qkv_layer(dtype, dtype, 0.0);
    layer->train();
    at::manual_seed(1);
    const at::Tensor x = at::randn({3, 5, 16}, dtype);
    const at::Tensor upstream = at::randn({3, 5, 24}, dtype);
    const Grads fused = run_layer(layer, x, upstream, true, 7);
    const Grads composite = run_layer(layer, x, upstream, false, 7);
    expect_close(fused, composite, dtype == at::kDouble ? 1e-12 : kFp32Tolerance);
  }
}

// With dropout the fused node draws at::native_dropout's masks: the reference applies the same
// masks (drawn again from the same seed) to the composite arithmetic.
TEST(FusedBlocks, LoraWithDropoutIsTheCompositeFormOnItsMasks) {
  const double p = 0.25;
  LoraLinear layer = qkv_layer(at::kDouble, at::kDouble, p);
  layer->train();
  at::manual_seed(2);
  const at::Tensor x = at::randn({4, 16}, at::kDouble);
  const at::Tensor upstream = at::randn({4, 24}, at::kDouble);
  const Grads fused = run_layer(layer, x, upstream, true, 11);

  at::manual_seed(11);
  const at::Tensor mask_q = std::get<1>(at::native_dropout(x, p, true));
  const at::Tensor mask_v = std::get<1>(at::native_dropout(x, p, true));
  const at::Tensor xr = x.clone().requires_grad_(true);
  const at::Tensor a_q = layer->lora_a[0].detach().clone().requires_grad_(true);
  const at::Tensor b_q = layer->lora_b[0].detach().clone().requires_grad_(true);
  const at::Tensor a_v = layer->lora_a[2].detach().clone().requires_grad_(true);
  const at::Tensor b_v = layer->lora_b[2].detach().clone().requires_grad_(true);
  const at::Tensor base = at::linear(xr, layer->weight);
  const double keep = 1.0 / (1.0 - p);
  const at::Tensor q =
      base.narrow(1, 0, 12) + at::linear(at::linear(xr * mask_q * keep, a_q), b_q) * (8.0 / 4);
  const at::Tensor v =
      base.narrow(1, 18, 6) + at::linear(at::linear(xr * mask_v * keep, a_v), b_v) * (3.0 / 2);
  const at::Tensor out = at::cat({q, base.narrow(1, 12, 6), v}, 1);
  out.backward(upstream);
  EXPECT_LT(max_abs_diff(fused.out, out), 1e-12);
  EXPECT_LT(max_abs_diff(fused.x, xr.grad()), 1e-12);
  EXPECT_LT(max_abs_diff(fused.a[0], a_q.grad()), 1e-12);
  EXPECT_LT(max_abs_diff(fused.b[0], b_q.grad()), 1e-12);
  EXPECT_LT(max_abs_diff(fused.a[1], a_v.grad()), 1e-12);
  EXPECT_LT(max_abs_diff(fused.b[1], b_v.grad()), 1e-12);
  // Some rows were dropped: the masks are not all ones.
  EXPECT_LT(mask_q.to(at::kDouble).mean().item<double>(), 1.0);
}

// A bf16 base with fp32 adapters: the update is added in fp32 and rounded once, as PEFT's
// result + (fp32 update) -> cast back rounds; the composite form rounds the update first.
TEST(FusedBlocks, LoraOnABf16BaseRoundsOnceAsPeftDoes) {
  LoraLinear layer = qkv_layer(at::kBFloat16, at::kFloat, 0.0);
  layer->train();
  at::manual_seed(3);
  const at::Tensor x = at::randn({64, 16}, at::kFloat).to(at::kBFloat16);
  const Grads fused = run_layer(layer, x, at::randn({64, 24}), true, 5);
  // PEFT: result (bf16) + lora_B(lora_A(x.float())) * scaling, in fp32, cast to bf16.
  const at::Tensor base = at::linear(x, layer->weight);
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor q = (base.narrow(1, 0, 12).to(at::kFloat) +
                        at::linear(at::linear(xf, layer->lora_a[0]), layer->lora_b[0]) * 2.0)
                           .to(at::kBFloat16);
  const at::Tensor v = (base.narrow(1, 18, 6).to(at::kFloat) +
                        at::linear(at::linear(xf, layer->lora_a[2]), layer->lora_b[2]) * 1.5)
                           .to(at::kBFloat16);
  const at::Tensor peft = at::cat({q, base.narrow(1, 12, 6), v}, 1).detach();
  // The same roundings up to fp32 association of the update (scale in the GEMM): at most a
  // handful of elements one bf16 step apart.
  const double mismatched = fused.out.ne(peft).to(at::kDouble).mean().item<double>();
  EXPECT_LT(mismatched, 0.01);
  EXPECT_LE(max_abs_diff(fused.out, peft), 0.0625);  // one bf16 step at |x| < 16
}

TEST(FusedBlocks, QkvRopeMatchesTheSplitAndApplyRopeForms) {
  const int64_t b = 2, s = 6, h = 4, kv = 2, d = 8;
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (const bool gathered : {false, true}) {
      RopeTables tables =
          make_rope_tables(16, d, 10000.0, std::nullopt, at::TensorOptions().dtype(dtype));
      if (gathered) {
        const at::Tensor positions =
            at::tensor({0, 1, 2, 0, 1, 2, 5, 4, 3, 2, 1, 0}, at::kLong).view({b, s});
        tables = gather_rope_tables(tables, positions);
      }
      at::manual_seed(4);
      const at::Tensor qkv = at::randn({b, s, (h + 2 * kv) * d}, dtype);
      const at::Tensor gq = at::randn({b, s, h, d}, dtype);
      const at::Tensor gk = at::randn({b, s, kv, d}, dtype);
      const at::Tensor gv = at::randn({b, s, kv, d}, dtype);

      const at::Tensor x1 = qkv.clone().requires_grad_(true);
      const QkvHeads f = split_qkv_rope(x1, h, kv, d, tables);
      torch::autograd::backward({f.q, f.k, f.v}, {gq, gk, gv});

      const at::Tensor x2 = qkv.clone().requires_grad_(true);
      const std::vector<at::Tensor> parts = x2.split_with_sizes({h * d, kv * d, kv * d}, -1);
      const at::Tensor q = apply_rope(parts[0].view({b, s, h, d}), tables);
      const at::Tensor k = apply_rope(parts[1].view({b, s, kv, d}), tables);
      const at::Tensor v = parts[2].view({b, s, kv, d});
      torch::autograd::backward({q, k, v}, {gq, gk, gv});

      const double tol = dtype == at::kDouble ? 1e-12 : 1e-5;
      EXPECT_LT(max_abs_diff(f.q, q), tol) << gathered;
      EXPECT_LT(max_abs_diff(f.k, k), tol) << gathered;
      EXPECT_EQ(max_abs_diff(f.v, v), 0.0);
      EXPECT_LT(max_abs_diff(x1.grad(), x2.grad()), tol) << gathered;
    }
  }
}

TEST(FusedBlocks, SwigluPackedIsSiluTimesUpBitForBitInBf16) {
  at::manual_seed(6);
  const at::Tensor gu = at::randn({5, 2 * 24}, at::kFloat).to(at::kBFloat16);
  const at::Tensor dy = at::randn({5, 24}, at::kFloat).to(at::kBFloat16);
  const at::Tensor x1 = gu.clone().requires_grad_(true);
  const at::Tensor y1 = swiglu_packed(x1);
  y1.backward(dy);
  const at::Tensor x2 = gu.clone().requires_grad_(true);
  const at::Tensor y2 = at::silu(x2.narrow(-1, 0, 24)) * x2.narrow(-1, 24, 24);
  y2.backward(dy);
  EXPECT_TRUE(at::equal(y1, y2));
  EXPECT_TRUE(at::equal(x1.grad(), x2.grad()));
}

TEST(FusedBlocks, RmsNormKeepsHuggingFacesRoundingOrder) {
  at::manual_seed(8);
  for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kDouble}) {
    const at::Tensor x0 = at::randn({6, 64}, at::kFloat).to(dtype);
    const at::Tensor weight = (at::rand({64}, at::kFloat) * 2).to(dtype);
    const at::Tensor g = at::randn({6, 64}, at::kFloat).to(dtype);
    const double eps = 1e-5;
    const at::Tensor x1 = x0.clone().requires_grad_(true);
    const at::Tensor y1 = rms_norm_frozen(x1, weight, eps);
    y1.backward(g);
    // Hugging Face's LlamaRMSNorm.
    const at::Tensor x2 = x0.clone().requires_grad_(true);
    const at::Tensor xf = x2.to(at::kFloat);
    const at::Tensor y2 = weight * (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(dtype);
    y2.backward(g);
    if (dtype == at::kDouble) {
      EXPECT_LT(max_abs_diff(y1, y2), 1e-6);  // HF's form rounds through fp32
      EXPECT_LT(max_abs_diff(x1.grad(), x2.grad()), 1e-5);
    } else {
      EXPECT_TRUE(at::equal(y1, y2)) << dtype;
      EXPECT_TRUE(at::equal(x1.grad(), x2.grad())) << dtype;
    }
  }
}

spec::ModelSpec layer_spec() {
  spec::ModelSpec m;
  m.dim = 32;
  m.n_layers = 1;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.ffn_dim = 48;
  m.vocab_size = 64;
  m.norm_eps = 1e-5;
  return m;
}

// The whole decoder layer, every projection adapted, fused against composite in fp32.
TEST(FusedBlocks, ADecoderLayerMatchesItsCompositeForm) {
  const spec::ModelSpec m = layer_spec();
  spec::LoraSpec lora;
  lora.rank = 4;
  lora.alpha = 8;
  lora.dropout = 0.0;
  lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  for (const bool packed : {false, true}) {
    DecoderLayer layer(m, lora, at::TensorOptions().dtype(at::kFloat));
    at::manual_seed(9);
    layer->init_random(0.1);
    {
      at::NoGradGuard no_grad;
      for (auto& p : layer->named_parameters()) {
        if (p.key().find("lora_b") != std::string::npos) p.value().normal_(0.0, 0.1);
      }
    }
    layer->train();
    RopeTables rope = make_rope_tables(16, 8, 10000.0, std::nullopt, at::TensorOptions());
    at::Tensor segments;
    if (packed) {
      const at::Tensor positions =
          at::tensor({0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, at::kLong).view({2, 8});
      rope = gather_rope_tables(rope, positions);
      segments =
          at::tensor({0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}, at::kLong).view({2, 8});
    }
    const at::Tensor x0 = at::randn({2, 8, 32});
    const at::Tensor g = at::randn({2, 8, 32});
    std::vector<std::vector<at::Tensor>> grads(2);
    std::vector<at::Tensor> outs(2);
    for (const bool fused : {true, false}) {
      layer->set_fused(fused);
      for (auto& p : layer->parameters()) p.mutable_grad() = at::Tensor();
      const at::Tensor x = x0.clone().requires_grad_(true);
      const at::Tensor y = layer->forward(x, rope, segments);
      y.backward(g);
      outs[fused] = y.detach();
      grads[fused].push_back(x.grad());
      for (auto& p : layer->named_parameters()) {
        if (p.key().find("lora_") != std::string::npos) grads[fused].push_back(p.value().grad());
      }
    }
    EXPECT_LT(max_abs_diff(outs[0], outs[1]), kFp32Tolerance) << packed;
    ASSERT_EQ(grads[0].size(), grads[1].size());
    ASSERT_EQ(grads[0].size(), 1u + 14u);  // x, then A and B of seven projections
    for (size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_LT(max_abs_diff(grads[0][i], grads[1][i]), kFp32Tolerance) << packed << " " << i;
    }
  }
}

}  // namespace
}  // namespace ftbench::model
