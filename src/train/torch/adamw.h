// AdamW over the adapters, with its state in plain tensors (checkpointable by name, the same on
// every LibTorch version) and the fastest update the LibTorch at hand has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace ftbench::train {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// Decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW without amsgrad:
//   p   <- p * (1 - lr * weight_decay)
//   m   <- beta1 * m + (1 - beta1) * g
//   v   <- beta2 * v + (1 - beta2) * g * g
//   p   <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Implementations, chosen once:
// - "fused": at::_fused_adamw_ (one kernel for every tensor) on CUDA/ROCm with LibTorch >= 2.1;
// - "foreach": the _foreach_ ops, one multi-tensor launch per operation; on CPU the same element
//   operations in the same order as torch::optim::AdamW, so the results are bit for bit equal.
class AdamW {
 public:
  // `params`: the trainable tensors, all on one device, floating point; their grads may be
  // undefined (those are left alone in a step, as torch::optim does).
  AdamW(std::vector<at::Tensor> params, AdamWOptions options);

  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }
  // One update of every parameter that has a gradient; their step counts go up by one.
  void step();
  // Gradients set to none (not zeroed).
  void zero_grad();

  const std::string& implementation() const { return implementation_; }
  // The state, in parameter order (exp_avg = m, exp_avg_sq = v, and the updates each parameter
  // has had: t above, counted per parameter as torch.optim does, so a parameter without a
  // gradient in some step keeps its own count). Writable so that a checkpoint can restore it;
  // the tensors must keep their shapes, dtypes and devices.
  std::vector<at::Tensor>& exp_avg() { return exp_avg_; }
  std::vector<at::Tensor>& exp_avg_sq() { return exp_avg_sq_; }
  const std::vector<int64_t>& param_steps() const { return param_steps_; }
  void set_param_steps(const std::vector<int64_t>& steps);

 private:
  std::vector<at::Tensor> params_;
  AdamWOptions options_;
  std::vector<at::Tensor> exp_avg_;
  std::vector<at::Tensor> exp_avg_sq_;
  std::vector<int64_t> param_steps_;
  std::vector<at::Tensor> state_steps_;  // "fused": the same counts as fp32 device scalars
  std::string implementation_;
};

}  // namespace ftbench::train
