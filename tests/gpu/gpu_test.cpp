// Tests that need a CUDA or ROCm device (ctest label `gpu`): each compares what runs on the GPU
// with the CPU path or a reference, and is skipped where LibTorch sees no GPU (CPU CI).
#include <cmath>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "../model/torch/small_model.h"
#include "model/torch/chunked_loss.h"
#include "model/torch/llama.h"
#include "model/torch/sdpa.h"
#include "train/torch/adamw.h"

namespace ftbench {
namespace {

using model::testing::max_abs_diff;

#define FTBENCH_REQUIRE_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA/ROCm device"

// The fused AdamW kernel (LibTorch >= 2.1) against the CPU _foreach path: the same update up to
// the kernels' arithmetic order in fp32.
TEST(Gpu, AdamWOnTheDeviceMatchesTheCpuPath) {
  FTBENCH_REQUIRE_GPU();
  const train::AdamWOptions o{1e-2, 0.9, 0.999, 1e-8, 0.01};
  at::manual_seed(5);
  std::vector<at::Tensor> cpu = {at::randn({64, 16}).requires_grad_(true),
                                 at::randn({16, 128}).requires_grad_(true)};
  std::vector<at::Tensor> gpu;
  for (const at::Tensor& p : cpu) gpu.push_back(p.detach().cuda().requires_grad_(true));
  train::AdamW on_cpu(cpu, o);
  train::AdamW on_gpu(gpu, o);
#if FTBENCH_TORCH_AT_LEAST(2, 1)
  EXPECT_EQ(on_gpu.implementation(), "fused");
#endif
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < cpu.size(); ++i) {
      const at::Tensor g = at::randn_like(cpu[i]);
      cpu[i].mutable_grad() = g;
      gpu[i].mutable_grad() = g.cuda();
    }
    on_cpu.step();
    on_gpu.step();
  }
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_LT(max_abs_diff(cpu[i], gpu[i].cpu()), 1e-5) << i;
  }
}

// The chunked LM head + cross-entropy in bf16 on the device against fp64 on the host.
TEST(Gpu, ChunkedLossInBf16MatchesFp64) {
  FTBENCH_REQUIRE_GPU();
  at::manual_seed(6);
  const at::Tensor h = at::randn({300, 64}, at::kDouble);
  const at::Tensor w = at::randn({1000, 64}, at::kDouble) * 0.2;
  const at::Tensor t = at::randint(1000, {300}, at::kLong);
  const at::Tensor h64 = h.clone().requires_grad_(true);
  const at::Tensor ref =
      at::cross_entropy_loss(at::matmul(h64, w.t()), t, {}, at::Reduction::Sum, -100);
  ref.backward();
  const at::Tensor hd = h.to(at::kCUDA, at::kBFloat16).requires_grad_(true);
  const at::Tensor loss =
      model::chunked_linear_cross_entropy(hd, w.to(at::kCUDA, at::kBFloat16), t.cuda(), 64);
  loss.backward();
  // bf16 inputs (8-bit mantissa): a few parts in a thousand.
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 5e-3 * ref.item<double>());
  const double scale = h64.grad().abs().max().item<double>();
  EXPECT_LT(max_abs_diff(hd.grad().cpu(), h64.grad()), 3e-2 * scale);
}

// A small Llama's loss and adapter gradients on the device equal the CPU's in fp32 (fused SDPA
// on the device, the blocked or fused CPU path on the host), plain and packed.
TEST(Gpu, SmallLlamaMatchesTheCpu) {
  FTBENCH_REQUIRE_GPU();
  spec::LoraSpec lora = model::testing::all_targets(2);
  lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  const at::Tensor ids = at::randint(0, 50, {2, 12}, at::kLong);
  const at::Tensor segments =
      at::cat({at::zeros({2, 5}, at::kLong), at::ones({2, 7}, at::kLong)}, 1);
  const at::Tensor positions =
      at::cat({at::arange(5, at::kLong), at::arange(7, at::kLong)}).unsqueeze(0).repeat({2, 1});
  for (const bool packed : {false, true}) {
    double losses[2];
    std::vector<at::Tensor> grads[2];
    at::manual_seed(13);
    model::Llama host(model::testing::small_model(), lora, 16, at::kCPU);
    host->init_random();
    for (int run = 0; run < 2; ++run) {
      const at::Device device = run == 0 ? at::Device(at::kCPU) : at::Device(at::kCUDA);
      // The same weights on both: the host model's, copied.
      model::Llama m(model::testing::small_model(), lora, 16, device);
      {
        at::NoGradGuard no_grad;
        const auto from = host->named_parameters();
        for (auto& p : m->named_parameters()) p.value().copy_(from[p.key()]);
      }
      std::vector<at::Tensor> params = m->trainable_parameters();
      const at::Tensor d_ids = ids.to(device);
      const at::Tensor loss =
          packed ? m->loss_sum(d_ids, d_ids, {}, positions.to(device), segments.to(device))
                 : m->loss_sum(d_ids, d_ids);
      loss.backward();
      losses[run] = loss.item<double>();
      for (const at::Tensor& p : params) grads[run].push_back(p.grad().cpu());
    }
    EXPECT_NEAR(losses[0], losses[1], 1e-4 * std::abs(losses[0])) << "packed " << packed;
    for (size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_LT(max_abs_diff(grads[0][i], grads[1][i]), 1e-4) << "packed " << packed << " " << i;
    }
  }
}

}  // namespace
}  // namespace ftbench
