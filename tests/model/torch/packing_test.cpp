// Packed sequences: block-diagonal causal attention and restarting positions must make a packed
// row compute exactly what its examples compute one by one.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "model/torch/llama.h"
#include "model/torch/sdpa.h"
#include "small_model.h"

namespace ftbench::model {
namespace {

using testing::all_targets;
using testing::max_abs_diff;
using testing::small_model;

// Segment ids [rows, S] from per-row segment lengths (the last segment may be padding).
at::Tensor segments(const std::vector<std::vector<int64_t>>& lengths) {
  std::vector<at::Tensor> rows;
  for (const auto& row : lengths) {
    std::vector<at::Tensor> parts;
    for (size_t i = 0; i < row.size(); ++i) {
      parts.push_back(at::full({row[i]}, static_cast<int64_t>(i), at::kLong));
    }
    rows.push_back(at::cat(parts));
  }
  return at::stack(rows);
}

at::Tensor positions(const std::vector<std::vector<int64_t>>& lengths) {
  std::vector<at::Tensor> rows;
  for (const auto& row : lengths) {
    std::vector<at::Tensor> parts;
    for (int64_t n : row) parts.push_back(at::arange(n, at::kLong));
    rows.push_back(at::cat(parts));
  }
  return at::stack(rows);
}

// 200 positions (several query blocks on the CPU path), two rows packed differently.
const std::vector<std::vector<int64_t>> kLengths = {{70, 50, 45, 35}, {1, 120, 64, 15}};

// LibTorch 2.5+ on a GPU: enable_gqa together with a mask leaves only the math kernel, so a
// masked (packed) call repeats the K/V heads instead; unmasked GQA keeps enable_gqa.
TEST(PackedAttention, AMaskedGqaCallRepeatsTheKvHeadsRatherThanEnableGqa) {
  const FusedSdpaPlan masked = plan_fused_sdpa(/*masked=*/true, 32, 8);
  EXPECT_TRUE(masked.repeat_kv_heads);
  EXPECT_FALSE(masked.enable_gqa);
  const FusedSdpaPlan causal = plan_fused_sdpa(/*masked=*/false, 32, 8);
  EXPECT_FALSE(causal.repeat_kv_heads);
  EXPECT_TRUE(causal.enable_gqa);
  for (bool mask : {false, true}) {
    const FusedSdpaPlan mha = plan_fused_sdpa(mask, 32, 32);
    EXPECT_FALSE(mha.repeat_kv_heads);
    EXPECT_FALSE(mha.enable_gqa);
  }
}

// What the memory plan takes from the op's own choice: the CPU's flash kernel reads shared K/V
// heads in LibTorch 2.15 (CI's PyPI job) and not in 2.6 (Debian 13); before 2.5 there is no
// enable_gqa. Without GQA there is nothing to repeat.
TEST(PackedAttention, SharedKvHeadsAreReadWhereTheCpuKernelTakesThem) {
  const at::Device cpu(at::kCPU);
  EXPECT_TRUE(fused_sdpa_reads_shared_kv(cpu, at::kFloat, 4, 4, 16));
  const bool gqa = fused_sdpa_reads_shared_kv(cpu, at::kFloat, 4, 2, 16);
#if FTBENCH_TORCH_AT_LEAST(2, 15)
  EXPECT_TRUE(gqa);
#elif FTBENCH_TORCH_AT_LEAST(2, 6) && !FTBENCH_TORCH_AT_LEAST(2, 7)
  EXPECT_FALSE(gqa);
#elif !FTBENCH_TORCH_AT_LEAST(2, 5)
  EXPECT_FALSE(gqa);
#else
  (void)gqa;  // 2.5, 2.7 to 2.14: not checked on a CPU build
#endif
}

TEST(PackedAttention, MatchesTheMaskedReference) {
  at::manual_seed(20);
  const at::Tensor q = at::randn({2, 4, 200, 16}, at::kDouble);
  const at::Tensor k = at::randn({2, 2, 200, 16}, at::kDouble);
  const at::Tensor v = at::randn({2, 2, 200, 16}, at::kDouble);
  const at::Tensor seg = segments(kLengths);
  const at::Tensor expected = causal_attention_reference(q, k, v, seg);
  // fp64, same sums in another order: 1e-12.
  EXPECT_LT(max_abs_diff(causal_sdpa(q, k, v, seg), expected), 1e-12);
  EXPECT_LT(max_abs_diff(fused_causal_sdpa(q, k, v, seg), expected), 1e-12);
  // Unpacked calls of the fused op still take the plain causal path.
  EXPECT_LT(max_abs_diff(fused_causal_sdpa(q, k, v), causal_attention_reference(q, k, v)), 1e-12);
  for (int path = 0; path < 2; ++path) {
    const at::Tensor qg = q.clone().requires_grad_(true);
    const at::Tensor kg = k.clone().requires_grad_(true);
    const at::Tensor qr = q.clone().requires_grad_(true);
    const at::Tensor kr = k.clone().requires_grad_(true);
    const at::Tensor w = at::randn({2, 4, 200, 16}, at::kDouble);
    const at::Tensor out =
        path == 0 ? causal_sdpa(qg, kg, v, seg) : fused_causal_sdpa(qg, kg, v, seg);
    (out * w).sum().backward();
    (causal_attention_reference(qr, kr, v, seg) * w).sum().backward();
    EXPECT_LT(max_abs_diff(qg.grad(), qr.grad()), 1e-12) << "path " << path;
    EXPECT_LT(max_abs_diff(kg.grad(), kr.grad()), 1e-12) << "path " << path;
  }
}

// The mask the fused path hands to LibTorch (and the masked reference uses), against one built
// element by element from the segment lengths alone: query i of a row sees key j exactly when
// j <= i and both lie in the same segment.
TEST(PackedAttention, TheMaskIsBuiltFromTheSegmentBoundaries) {
  const at::Tensor mask = packed_attention_mask(segments(kLengths));
  ASSERT_EQ(mask.sizes(), (at::IntArrayRef{2, 1, 200, 200}));
  ASSERT_EQ(mask.scalar_type(), at::kBool);
  at::Tensor expected = at::zeros({2, 1, 200, 200}, at::kBool);
  auto e = expected.accessor<bool, 4>();
  for (int64_t r = 0; r < 2; ++r) {
    int64_t start = 0;
    for (int64_t n : kLengths[static_cast<size_t>(r)]) {
      for (int64_t i = start; i < start + n; ++i) {
        for (int64_t j = start; j <= i; ++j) e[r][0][i][j] = true;
      }
      start += n;
    }
  }
  EXPECT_TRUE(mask.equal(expected));
  // Spot checks: the first token of a segment sees only itself; the last of row 0's first
  // segment (69) sees 0 .. 69 and not 70; 70 sees only 70.
  EXPECT_EQ(mask[0][0][69].sum().item<int64_t>(), 70);
  EXPECT_FALSE(mask[0][0][70][69].item<bool>());
  EXPECT_EQ(mask[0][0][70].sum().item<int64_t>(), 1);
  EXPECT_EQ(mask[1][0][0].sum().item<int64_t>(), 1);  // a segment of one token
}

// Both paths, the CPU's blocked one and the fused op with the packed mask, against the plain
// causal attention of each segment alone (no segment ids, no packed mask: an independent
// construction).
TEST(PackedAttention, EachSegmentEqualsItsOwnCausalAttention) {
  at::manual_seed(21);
  const at::Tensor q = at::randn({2, 4, 200, 16}, at::kDouble);
  const at::Tensor k = at::randn({2, 2, 200, 16}, at::kDouble);
  const at::Tensor v = at::randn({2, 2, 200, 16}, at::kDouble);
  for (int path = 0; path < 2; ++path) {
    const at::Tensor packed = path == 0 ? causal_sdpa(q, k, v, segments(kLengths))
                                        : fused_causal_sdpa(q, k, v, segments(kLengths));
    for (int64_t r = 0; r < 2; ++r) {
      int64_t off = 0;
      for (int64_t n : kLengths[static_cast<size_t>(r)]) {
        auto piece = [&](const at::Tensor& t) { return t.narrow(0, r, 1).narrow(2, off, n); };
        const at::Tensor alone = causal_attention_reference(piece(q), piece(k), piece(v));
        EXPECT_LT(max_abs_diff(piece(packed), alone), 1e-12)
            << "path " << path << " row " << r << " offset " << off;
        off += n;
      }
    }
  }
}

// A packed row [A | B | padding] against A and B run alone: logits, loss and adapter
// gradients, with and without activation checkpointing.
TEST(PackedLlama, PackedRowEqualsItsExamplesRunSeparately) {
  const int64_t na = 9;
  const int64_t nb = 7;
  const int64_t s = 20;  // 4 padding tokens
  const at::Tensor a = at::randint(1, 50, {1, na}, at::kLong);
  const at::Tensor b = at::randint(1, 50, {1, nb}, at::kLong);
  const at::Tensor ids = at::cat({a, b, at::zeros({1, s - na - nb}, at::kLong)}, 1);
  const std::vector<std::vector<int64_t>> lengths = {{na, nb, s - na - nb}};
  const at::Tensor pos = positions(lengths);
  const at::Tensor seg = segments(lengths);
  // Labels inside each example only; the boundaries and the padding carry -100.
  auto shifted = [](const at::Tensor& x) {
    at::Tensor l = at::full_like(x, -100);
    l.narrow(1, 0, x.size(1) - 1).copy_(x.narrow(1, 1, x.size(1) - 1));
    return l;
  };
  const at::Tensor labels =
      at::cat({shifted(a), shifted(b), at::full({1, s - na - nb}, -100, at::kLong)}, 1);
  for (int checkpointing = 0; checkpointing < 2; ++checkpointing) {
    at::manual_seed(22);
    spec::ModelSpec m = small_model();
    m.activation_checkpointing = checkpointing == 1 ? "full" : "none";
    Llama model(m, all_targets(3), s, at::kCPU);
    model->init_random();
    std::vector<at::Tensor> params = model->trainable_parameters();
    {
      at::NoGradGuard no_grad;  // non-zero B so that every adapter gets a gradient
      for (auto& p : model->named_parameters()) {
        if (p.key().find("lora_b") != std::string::npos) p.value().normal_(0.0, 0.1);
      }
    }
    model->train();  // dropout 0: deterministic; checkpointing is active in training mode only
    {
      at::NoGradGuard no_grad;
      const at::Tensor packed = model->forward(ids, pos, seg);
      // fp32, the same per-token arithmetic with other GEMM shapes: 1e-5.
      EXPECT_LT(max_abs_diff(packed.narrow(1, 0, na), model->forward(a)), 1e-5);
      EXPECT_LT(max_abs_diff(packed.narrow(1, na, nb), model->forward(b)), 1e-5);
      // Without the mask the second example would see the first: the test can fail.
      EXPECT_GT(max_abs_diff(model->forward(ids).narrow(1, na, nb), model->forward(b)), 1e-3);
    }
    const at::Tensor packed_loss = model->loss_sum(ids, labels, {}, pos, seg);
    packed_loss.backward();
    std::vector<at::Tensor> packed_grads;
    for (at::Tensor& p : params) {
      packed_grads.push_back(p.grad().clone());
      p.grad().zero_();
    }
    const at::Tensor separate_loss =
        model->loss_sum(a, shifted(a)) + model->loss_sum(b, shifted(b));
    separate_loss.backward();
    // Loss: a sum of 14 fp32 token losses (~4 each): relative 1e-5.
    const double l1 = packed_loss.item<double>();
    const double l2 = separate_loss.item<double>();
    EXPECT_NEAR(l1, l2, 1e-5 * std::abs(l2)) << "checkpointing " << checkpointing;
    for (size_t i = 0; i < params.size(); ++i) {
      // Gradients are O(0.1-1); fp32 with summation in another order: 1e-5.
      EXPECT_LT(max_abs_diff(packed_grads[i], params[i].grad()), 1e-5)
          << "parameter " << i << " checkpointing " << checkpointing;
    }
    // Selecting the loss positions gives the same loss on a packed row.
    const at::Tensor loss_positions = labels.reshape({-1}).ne(-100).nonzero().reshape({-1});
    at::NoGradGuard no_grad;
    EXPECT_NEAR(model->loss_sum(ids, labels, loss_positions, pos, seg).item<double>(), l1,
                1e-5 * std::abs(l1));
  }
}

TEST(PackedLlama, DeterministicAndUnpackedPathUnchanged) {
  at::manual_seed(23);
  Llama model(small_model(), all_targets(2), 32, at::kCPU);
  model->init_random();
  model->eval();
  at::NoGradGuard no_grad;
  const at::Tensor ids = at::randint(0, 50, {2, 32}, at::kLong);
  const std::vector<std::vector<int64_t>> lengths = {{10, 12, 10}, {32}};
  const at::Tensor pos = positions(lengths);
  const at::Tensor seg = segments(lengths);
  const at::Tensor x = model->forward(ids, pos, seg);
  EXPECT_TRUE(x.equal(model->forward(ids, pos, seg)));  // bit-identical on repeat
  // One segment per row with positions 0..S-1 is the unpacked computation (the path differs:
  // masked vs causal-only attention, so up to rounding).
  const at::Tensor one = segments({{32}, {32}});
  const at::Tensor pos_one = positions({{32}, {32}});
  EXPECT_LT(max_abs_diff(model->forward(ids, pos_one, one), model->forward(ids)), 1e-5);
  // The second row is a single example: same logits as unpacked.
  EXPECT_LT(max_abs_diff(x.narrow(0, 1, 1), model->forward(ids.narrow(0, 1, 1))), 1e-5);
  EXPECT_THROW(model->forward(ids, pos, {}), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::model
