// ftbench's RoPE kernel (model/torch/gpu_kernels.h) against the ATen path it stands in for:
// rope.h's composite apply_rope() in fp64 on the CPU, from the same input values the kernel read,
// and for the backward (transpose) the gradient autograd takes through it. Skipped without a
// CUDA/ROCm device or in a build without the kernel.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "model/torch/gpu_kernels.h"
#include "model/torch/rope.h"

namespace ftbench {
namespace {

constexpr const char* kNotBuilt =
    "built without GPU kernels (-DFTBENCH_GPU_KERNELS=OFF, or no nvcc)";

#define FTBENCH_REQUIRE_ROPE_KERNEL()                                      \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA/ROCm device"; \
  if (!model::gpu_rope_kernel_built()) GTEST_SKIP() << kNotBuilt

constexpr int64_t kBatch = 2;
constexpr int64_t kSeq = 7;
constexpr int64_t kHeads = 3;    // q heads of the packed projection
constexpr int64_t kKvHeads = 2;  // the k heads, the slice the kernel reads

enum class TableLayout { kPositions, kGathered, kGatheredPerHead };  // [S+3, D], [B,S,D], [B,S,1,D]

struct RopeCase {
  at::ScalarType dtype;        // x and out
  at::ScalarType table_dtype;  // cos and sin
  TableLayout layout;
  int64_t head_dim;
};

std::string describe(const RopeCase& c, bool transpose) {
  const char* layouts[] = {"[S+3, D]", "[B, S, D]", "[B, S, 1, D]"};
  return std::string(c10::toString(c.dtype)) + " x, " + c10::toString(c.table_dtype) + " tables " +
         layouts[static_cast<int>(c.layout)] + ", D " + std::to_string(c.head_dim) +
         (transpose ? ", transpose" : ", forward");
}

// The model's tables (rope.h) on the device in the case's dtype and layout.
model::RopeTables device_tables(const RopeCase& c) {
  model::RopeTables t = model::make_rope_tables(kSeq + 3, c.head_dim, 10000.0, std::nullopt,
                                                at::TensorOptions().dtype(at::kFloat));
  if (c.layout != TableLayout::kPositions) {
    // Per-sample positions, as packed sequences have them.
    t = model::gather_rope_tables(t, at::randint(0, kSeq + 3, {kBatch, kSeq}, at::kLong));
  }
  if (c.layout == TableLayout::kGatheredPerHead) t = {t.cos.unsqueeze(2), t.sin.unsqueeze(2)};
  return {t.cos.to(at::kCUDA, c.table_dtype), t.sin.to(at::kCUDA, c.table_dtype)};
}

// rope.h's ATen form in fp64 on the CPU from the values the kernel read; with `transpose` the
// gradient of that form for the incoming gradient `x` (its adjoint, by autograd).
at::Tensor oracle(const at::Tensor& x, const model::RopeTables& tables, bool transpose) {
  const auto host = [](const at::Tensor& t) {
    const at::Tensor h = t.to(at::kCPU, at::kDouble).contiguous();
    return h.dim() == 4 ? h.squeeze(2) : h;  // apply_rope takes gathered tables as [B, S, D]
  };
  const model::RopeTables t{host(tables.cos), host(tables.sin)};
  const at::Tensor x64 = x.to(at::kCPU, at::kDouble).contiguous();
  if (!transpose) return model::apply_rope(x64, t);
  const at::Tensor input = at::zeros_like(x64).requires_grad_(true);
  model::apply_rope(input, t).backward(x64);
  return input.grad();
}

// The largest excess of |kernel - oracle| over `relative` |oracle| + `absolute`; <= 0 passes.
double worst_excess(const at::Tensor& kernel, const at::Tensor& reference, double relative,
                    double absolute) {
  const at::Tensor k = kernel.to(at::kCPU, at::kDouble);
  return ((k - reference).abs() - reference.abs() * relative - absolute).max().item<double>();
}

// Tolerances against the fp64 oracle. fp32: the kernel's fp32 products and sum, a few roundings
// of values below 8 (x ~ N(0, 1), |cos|, |sin| <= 1): under 1e-6. bf16 and fp16: those, then one
// rounding of the result to 8 or 11 significant bits, at most half an ulp, 2^-8 (bf16) or 2^-11
// (fp16) of the value.
double relative_tolerance(at::ScalarType dtype) {
  if (dtype == at::kBFloat16) return 1.0 / 256;
  if (dtype == at::kHalf) return 1.0 / 2048;
  return 0.0;
}
constexpr double kAbsoluteTolerance = 1e-6;

TEST(Gpu, RopeKernelMatchesTheAtenPath) {
  FTBENCH_REQUIRE_ROPE_KERNEL();
  const std::vector<RopeCase> cases = {
      {at::kFloat, at::kFloat, TableLayout::kPositions, 16},
      {at::kFloat, at::kFloat, TableLayout::kGathered, 24},  // half 12: threads beyond it idle
      {at::kFloat, at::kFloat, TableLayout::kGatheredPerHead, 600},  // half 300 > 256 threads
      {at::kBFloat16, at::kFloat, TableLayout::kPositions, 64},
      {at::kBFloat16, at::kBFloat16, TableLayout::kPositions, 128},
      {at::kBFloat16, at::kFloat, TableLayout::kGathered, 128},
      {at::kBFloat16, at::kBFloat16, TableLayout::kGatheredPerHead, 64},
      {at::kHalf, at::kFloat, TableLayout::kGathered, 32},
      {at::kHalf, at::kHalf, TableLayout::kPositions, 32},
  };
  at::manual_seed(21);
  for (const RopeCase& c : cases) {
    const int64_t d = c.head_dim;
    const int64_t width = (kHeads + 2 * kKvHeads) * d;
    const model::RopeTables tables = device_tables(c);
    const auto options = at::TensorOptions().device(at::kCUDA).dtype(c.dtype);
    for (const bool transpose : {false, true}) {
      SCOPED_TRACE(describe(c, transpose));
      // x: the k heads of a packed q/k/v projection [B, S, (H + 2 KV) D] (rows strided); for the
      // backward, a gradient arriving in attention's [B, KV, S, D] layout (S and heads swapped).
      const at::Tensor packed = at::randn({kBatch, kSeq, width}, options);
      const at::Tensor x =
          transpose ? at::randn({kBatch, kKvHeads, kSeq, d}, options).transpose(1, 2)
                    : packed.narrow(2, kHeads * d, kKvHeads * d).view({kBatch, kSeq, kKvHeads, d});
      // out: a new tensor (the forward's k), or the k slice of the packed gradient (backward).
      at::Tensor gradient_buffer = at::zeros({kBatch, kSeq, width}, options);
      at::Tensor out = transpose ? gradient_buffer.narrow(2, kHeads * d, kKvHeads * d)
                                       .view({kBatch, kSeq, kKvHeads, d})
                                 : at::empty({kBatch, kSeq, kKvHeads, d}, options);
      ASSERT_TRUE(model::gpu_rope_applies(out, x, tables.cos, tables.sin));
      model::gpu_rope_into(out, x, tables.cos, tables.sin, transpose);
      const at::Tensor reference = oracle(x, tables, transpose);
      EXPECT_LE(worst_excess(out, reference, relative_tolerance(c.dtype), kAbsoluteTolerance), 0.0);
      if (transpose) {
        // Only the k slice was written: q's and v's columns keep their zeros.
        EXPECT_EQ(gradient_buffer.narrow(2, 0, kHeads * d).abs().max().item<double>(), 0.0);
        EXPECT_EQ(gradient_buffer.narrow(2, (kHeads + kKvHeads) * d, kKvHeads * d)
                      .abs()
                      .max()
                      .item<double>(),
                  0.0);
      }
    }
  }
}

// In place (out is x) is the same result: each pair is read before it is written.
TEST(Gpu, RopeKernelInPlaceMatchesTheAtenPath) {
  FTBENCH_REQUIRE_ROPE_KERNEL();
  at::manual_seed(22);
  const RopeCase c{at::kFloat, at::kFloat, TableLayout::kPositions, 32};
  const model::RopeTables tables = device_tables(c);
  at::Tensor x = at::randn({kBatch, kSeq, kHeads, c.head_dim}, at::kCUDA);
  const at::Tensor reference = oracle(x, tables, /*transpose=*/false);
  model::gpu_rope_into(x, x, tables.cos, tables.sin, /*transpose=*/false);
  EXPECT_LE(worst_excess(x, reference, 0.0, kAbsoluteTolerance), 0.0);
}

TEST(Gpu, RopeKernelRefusesWhatItDoesNotTake) {
  FTBENCH_REQUIRE_ROPE_KERNEL();
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const at::Tensor x = at::randn({2, 5, 3, 8}, cuda);
  at::Tensor out = at::empty_like(x);
  const at::Tensor cos = at::randn({9, 8}, cuda);
  const at::Tensor sin = at::randn({9, 8}, cuda);
  ASSERT_TRUE(model::gpu_rope_applies(out, x, cos, sin));
  // Tables too short; odd D; fp64; out in another dtype than x; bf16 tables for fp32 x (tables
  // are fp32 or x's dtype); x's last dimension strided; tables on the CPU; gathered tables of
  // another S; tables per head ([B, S, H, D]).
  EXPECT_FALSE(model::gpu_rope_applies(out, x, cos.narrow(0, 0, 4), sin.narrow(0, 0, 4)));
  const at::Tensor odd = at::randn({2, 5, 3, 7}, cuda);
  at::Tensor odd_out = at::empty_like(odd);
  EXPECT_FALSE(
      model::gpu_rope_applies(odd_out, odd, at::randn({9, 7}, cuda), at::randn({9, 7}, cuda)));
  const at::Tensor x64 = x.to(at::kDouble);
  at::Tensor out64 = at::empty_like(x64);
  EXPECT_FALSE(model::gpu_rope_applies(out64, x64, cos, sin));
  const at::Tensor x_bf16 = x.to(at::kBFloat16);
  at::Tensor out_half = at::empty_like(x).to(at::kHalf);
  EXPECT_FALSE(model::gpu_rope_applies(out_half, x_bf16, cos, sin));
  EXPECT_FALSE(model::gpu_rope_applies(out, x, cos.to(at::kBFloat16), sin.to(at::kBFloat16)));
  const at::Tensor strided = at::randn({2, 5, 8, 3}, cuda).transpose(2, 3);
  EXPECT_FALSE(model::gpu_rope_applies(out, strided, cos, sin));
  EXPECT_FALSE(model::gpu_rope_applies(out, x, cos.cpu(), sin.cpu()));
  EXPECT_FALSE(
      model::gpu_rope_applies(out, x, at::randn({2, 4, 8}, cuda), at::randn({2, 4, 8}, cuda)));
  EXPECT_FALSE(model::gpu_rope_applies(out, x, at::randn({2, 5, 3, 8}, cuda),
                                       at::randn({2, 5, 3, 8}, cuda)));
  EXPECT_THROW(model::gpu_rope_into(out, strided, cos, sin, false), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench
