// The chunked LM head + cross-entropy against LibTorch's own linear and cross_entropy.
#include "model/torch/chunked_loss.h"

#include <gtest/gtest.h>
#include <torch/autograd.h>

namespace ftbench::model {
namespace {

struct Case {
  at::Tensor h, weight, targets;
};

// `n` rows of width `d` over a vocabulary of `v`; every third target ignored (-100).
Case make_case(int64_t n, int64_t d, int64_t v, at::ScalarType dtype) {
  at::manual_seed(11);
  Case c;
  c.h = at::randn({n, d}, at::kDouble).to(dtype).requires_grad_(true);
  c.weight = (at::randn({v, d}, at::kDouble) * 0.3).to(dtype);
  c.targets = at::randint(v, {n}, at::kLong);
  for (int64_t i = 0; i < n; i += 3) c.targets[i] = -100;
  return c;
}

// LibTorch's path, as the model ran before: the whole logits, upcast, cross_entropy summed.
std::pair<at::Tensor, at::Tensor> reference(const Case& c) {
  const at::Tensor h = c.h.detach().clone().requires_grad_(true);
  at::Tensor logits = at::matmul(h, c.weight.t());
  if (logits.scalar_type() != at::kDouble) logits = logits.to(at::kFloat);
  const at::Tensor loss =
      at::cross_entropy_loss(logits, c.targets, {}, at::Reduction::Sum, /*ignore_index=*/-100);
  loss.backward();
  return {loss.detach(), h.grad()};
}

TEST(ChunkedLoss, MatchesCrossEntropyInFp64ForEveryChunkSize) {
  const Case c = make_case(37, 16, 50, at::kDouble);
  const auto [ref_loss, ref_grad] = reference(c);
  // fp64 stays fp64: only the summation order differs.
  for (const bool fused : {false, true}) {
    for (const int64_t chunk : {1, 5, 36, 37, 100}) {
      const at::Tensor h = c.h.detach().clone().requires_grad_(true);
      const at::Tensor loss = chunked_linear_cross_entropy(h, c.weight, c.targets, chunk, fused);
      EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), 1e-12 * ref_loss.item<double>())
          << chunk << fused;
      (loss * 2.0).backward();  // the upstream gradient scales the saved one
      EXPECT_LT((h.grad() - 2.0 * ref_grad).abs().max().item<double>(), 1e-12) << chunk << fused;
      // Ignored rows get no gradient.
      EXPECT_EQ(h.grad()[0].abs().sum().item<double>(), 0.0);
    }
  }
}

TEST(ChunkedLoss, MatchesCrossEntropyInFp32AndBf16) {
  for (const auto& [dtype, fused] :
       {std::pair{at::kFloat, false}, std::pair{at::kFloat, true}, std::pair{at::kBFloat16, false},
        std::pair{at::kBFloat16, true}}) {
    const Case c = make_case(64, 32, 300, dtype);
    const auto [ref_loss, ref_grad] = reference(c);
    const at::Tensor h = c.h.detach().clone().requires_grad_(true);
    const at::Tensor loss = chunked_linear_cross_entropy(h, c.weight, c.targets, 7, fused);
    EXPECT_EQ(loss.scalar_type(), at::kFloat);
    // fp32: summation order only. bf16: the same bf16 logits, fp32 softmax; the gradient is
    // rounded to bf16 (8 bits of mantissa) either way.
    const double loss_tol = dtype == at::kFloat ? 1e-5 : 1e-3;
    const double grad_tol = dtype == at::kFloat ? 1e-5 : 2e-2;
    EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), loss_tol * ref_loss.item<double>());
    loss.backward();
    EXPECT_EQ(h.grad().scalar_type(), dtype);
    const double scale = ref_grad.to(at::kFloat).abs().max().item<double>();
    EXPECT_LT((h.grad().to(at::kFloat) - ref_grad.to(at::kFloat)).abs().max().item<double>(),
              grad_tol * scale);
  }
}

TEST(ChunkedLoss, WithoutGradItOnlyCountsAndRefusesATrainableWeight) {
  const Case c = make_case(10, 8, 20, at::kFloat);
  at::Tensor loss;
  {
    at::NoGradGuard no_grad;
    loss = chunked_linear_cross_entropy(c.h, c.weight, c.targets, 3);
  }
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_NEAR(loss.item<double>(), reference(c).first.item<double>(), 1e-4);
  const at::Tensor trainable = c.weight.clone().requires_grad_(true);
  EXPECT_THROW(chunked_linear_cross_entropy(c.h, trainable, c.targets, 3), std::invalid_argument);
  EXPECT_THROW(chunked_linear_cross_entropy(c.h, c.weight, c.targets, 0), std::invalid_argument);
  // 256 MiB of fp32 logits over Llama 3's 128,256 entries: 523 rows, cut to a multiple of 256
  // (a whole number of GEMM tiles); fewer than 256 stay as they are.
  EXPECT_EQ(loss_chunk_rows(128256), 512);
  EXPECT_EQ(loss_chunk_rows(32000), 2048);  // 2097 rows fit
  EXPECT_EQ(loss_chunk_rows(300000), 223);  // 223 fit: under one tile
  EXPECT_EQ(loss_chunk_rows(262144), 256);  // exactly 256
  EXPECT_EQ(loss_chunk_rows(1 << 30), 1);
}

}  // namespace
}  // namespace ftbench::model
