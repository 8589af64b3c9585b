// Causal scaled-dot-product attention that compiles against LibTorch 1.13 and 2.x.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#define FTBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||          \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace ftbench::model {

// q: [B, H, S, D], k and v: [B, KV, S, D] with H % KV == 0. Causal, default scale
// 1/sqrt(D), no dropout. Uses the fused op of the LibTorch version (at::scaled_dot_product_
// attention with enable_gqa from 2.5, at::_scaled_dot_product_attention on 1.13); before 2.5
// the K/V heads are repeated to match the query heads.
at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// The direct formula softmax(q k^T / sqrt(D) + causal mask) v with GQA expansion, for tests.
at::Tensor causal_attention_reference(const at::Tensor& q, const at::Tensor& k,
                                      const at::Tensor& v);

}  // namespace ftbench::model
