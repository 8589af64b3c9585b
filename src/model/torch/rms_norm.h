// RMSNorm as in Llama: x / sqrt(mean(x^2) + eps) * weight, computed in fp32.
#pragma once

#include <torch/nn/module.h>

namespace ftbench::model {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, at::TensorOptions options);
  at::Tensor forward(const at::Tensor& x);
  // Off: the composite form (the CPU's one-pass kernel where it applies, else eight ATen ops);
  // on (the default): fused_blocks.h's rms_norm_frozen.
  void set_fused(bool fused) { fused_ = fused; }
  at::Tensor weight;

 private:
  double eps_;
  bool fused_ = true;
};
TORCH_MODULE(RMSNorm);

}  // namespace ftbench::model
