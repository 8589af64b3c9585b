// The one-pass CPU kernels against the composite ATen forms, computed in fp64 from the same fp32
// inputs: forward and gradient, on strided inputs like the model's (slices of a fused
// projection's output, gradients arriving transposed).
#include "model/torch/cpu_fused.h"

#include <optional>
#include <stdexcept>

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "model/torch/rope.h"

namespace ftbench::model {
namespace {

// fp32 against fp64 of the same inputs: a few ulps of values of order 1.
constexpr double kTolerance = 2e-5;

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// The first `n` columns of a wider buffer: last dimension contiguous, rows strided.
at::Tensor leading_slice(const at::Tensor& buffer, int64_t n) { return buffer.narrow(-1, 0, n); }

TEST(CpuFused, AppliesToFp32CpuTensorsWithAContiguousLastDimension) {
  EXPECT_TRUE(fused_applies(at::zeros({3, 4}, at::kFloat)));
  EXPECT_TRUE(fused_applies(leading_slice(at::zeros({3, 8}, at::kFloat), 4)));
  EXPECT_FALSE(fused_applies(at::zeros({3, 4}, at::kDouble)));
  EXPECT_FALSE(fused_applies(at::zeros({3, 4}, at::kFloat).t()));
  EXPECT_FALSE(fused_applies(at::Tensor()));
}

TEST(CpuFused, RmsNormMatchesTheCompositeFormAndItsGradient) {
  at::manual_seed(3);
  const int64_t d = 37;  // not a multiple of the 8 partial sums
  const at::Tensor buffer = at::randn({3, 5, d + 11}, at::kFloat).requires_grad_(true);
  const at::Tensor x = leading_slice(buffer, d);
  const at::Tensor weight = at::rand({d}, at::kFloat) + 0.5;
  const double eps = 1e-5;
  const at::Tensor y = fused_rms_norm(x, weight, eps);
  const at::Tensor g = at::randn({3, 5, d}, at::kFloat);
  y.backward(g);

  const at::Tensor xd = x.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor yd =
      weight.to(at::kDouble) * (xd * at::rsqrt(xd.pow(2).mean(-1, /*keepdim=*/true) + eps));
  yd.backward(g.to(at::kDouble));
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_LT(max_abs_diff(y, yd), kTolerance);
  EXPECT_LT(max_abs_diff(buffer.grad().narrow(-1, 0, d), xd.grad()), kTolerance);
  EXPECT_EQ(buffer.grad().narrow(-1, d, 11).abs().max().item<float>(), 0.0f);
}

TEST(CpuFused, RopeMatchesRotateHalfAndItsGradient) {
  at::manual_seed(5);
  const int64_t b = 2, s = 7, h = 3, d = 10;
  // q as the model has it: a [B, S, H * D] slice of the q|k|v projection, viewed as heads.
  const at::Tensor buffer = at::randn({b, s, h * d + 6}, at::kFloat).requires_grad_(true);
  const at::Tensor x = leading_slice(buffer, h * d).view({b, s, h, d});
  const RopeTables tables = make_rope_tables(s + 2, d, 500000.0, std::nullopt, at::kFloat);
  const at::Tensor y = fused_rope(x, tables.cos, tables.sin);
  // The gradient arrives as attention's [B, H, S, D] transposed back.
  const at::Tensor g = at::randn({b, h, s, d}, at::kFloat).transpose(1, 2);
  y.backward(g);

  const at::Tensor xd = x.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor cos = tables.cos.narrow(0, 0, s).to(at::kDouble).unsqueeze(1);
  const at::Tensor sin = tables.sin.narrow(0, 0, s).to(at::kDouble).unsqueeze(1);
  const at::Tensor rotated = at::cat({-xd.narrow(-1, d / 2, d / 2), xd.narrow(-1, 0, d / 2)}, -1);
  const at::Tensor yd = xd * cos + rotated * sin;
  yd.backward(g.to(at::kDouble));
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_LT(max_abs_diff(y, yd), kTolerance);
  EXPECT_LT(max_abs_diff(buffer.grad().narrow(-1, 0, h * d).view({b, s, h, d}), xd.grad()),
            kTolerance);
}

TEST(CpuFused, SwigluMatchesSiluTimesUpAndItsGradients) {
  at::manual_seed(7);
  const int64_t f = 13;
  // gate and up as the model has them: the two halves of one projection's output.
  const at::Tensor buffer = (at::randn({4, 9, 2 * f}, at::kFloat) * 3.0).requires_grad_(true);
  const std::vector<at::Tensor> parts = buffer.split(f, -1);
  const at::Tensor y = fused_swiglu(parts[0], parts[1]);
  const at::Tensor g = at::randn({4, 9, f}, at::kFloat);
  y.backward(g);

  const at::Tensor bd = buffer.detach().to(at::kDouble).requires_grad_(true);
  const std::vector<at::Tensor> pd = bd.split(f, -1);
  const at::Tensor yd = at::silu(pd[0]) * pd[1];
  yd.backward(g.to(at::kDouble));
  EXPECT_LT(max_abs_diff(y, yd), kTolerance);
  EXPECT_LT(max_abs_diff(buffer.grad(), bd.grad()), kTolerance);
}

TEST(CpuFused, PackedSwigluMatchesTheSplitFormAndGivesOneGradient) {
  at::manual_seed(8);
  const int64_t f = 11;
  const at::Tensor buffer = (at::randn({3, 6, 2 * f}, at::kFloat) * 3.0).requires_grad_(true);
  const at::Tensor y = fused_swiglu_packed(buffer);
  const at::Tensor g = at::randn({3, 6, f}, at::kFloat);
  y.backward(g);

  const at::Tensor bd = buffer.detach().to(at::kDouble).requires_grad_(true);
  const std::vector<at::Tensor> pd = bd.split(f, -1);
  const at::Tensor yd = at::silu(pd[0]) * pd[1];
  yd.backward(g.to(at::kDouble));
  EXPECT_EQ(y.sizes(), yd.sizes());
  EXPECT_LT(max_abs_diff(y, yd), kTolerance);
  EXPECT_LT(max_abs_diff(buffer.grad(), bd.grad()), kTolerance);
  EXPECT_THROW(fused_swiglu_packed(at::randn({2, 5})), std::invalid_argument);
}

TEST(CpuFused, RefusesWhatItDoesNotTake) {
  const at::Tensor x = at::randn({2, 4}, at::kFloat);
  EXPECT_THROW(fused_rms_norm(x.to(at::kDouble), at::ones({4}), 1e-5), std::invalid_argument);
  EXPECT_THROW(fused_rms_norm(x, at::ones({4}).requires_grad_(true), 1e-5), std::invalid_argument);
  EXPECT_THROW(fused_rms_norm(x, at::ones({3}), 1e-5), std::invalid_argument);
  const at::Tensor tables = at::ones({2, 4}, at::kFloat);
  EXPECT_THROW(fused_rope(at::randn({1, 3, 1, 4}), tables, tables), std::invalid_argument);
  EXPECT_THROW(fused_rope(at::randn({1, 2, 1, 3}), tables, tables), std::invalid_argument);
  EXPECT_THROW(fused_swiglu(x, at::randn({2, 5})), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::model
