// RMSNorm as in Llama: x / sqrt(mean(x^2) + eps) * weight, computed in fp32.
#pragma once

#include <torch/nn/module.h>

namespace ftbench::model {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, at::TensorOptions options);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

}  // namespace ftbench::model
