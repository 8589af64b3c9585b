// Causal scaled-dot-product attention that compiles against LibTorch 1.13 and 2.x.
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "device/torch/torch_version.h"

namespace ftbench::model {

// q: [B, H, S, D], k and v: [B, KV, S, D] with H % KV == 0. Causal, default scale
// 1/sqrt(D), no dropout. Uses the fused op of the LibTorch version (at::scaled_dot_product_
// attention with enable_gqa from 2.5, at::_scaled_dot_product_attention on 1.13); before 2.5
// the K/V heads are repeated to match the query heads.
//
// `segment_ids` (optional, [B, S] int64, non-decreasing along each row, on q's device): packed
// sequences. Query i then attends to key j only if j <= i and segment_ids[i] == segment_ids[j]
// (a block-diagonal causal mask). Without it the plain causal path runs, unchanged.
at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const at::Tensor& segment_ids = {});

// How the fused op (LibTorch 2.5+) is called for `query_heads` query and `kv_heads` K/V heads,
// with or without a mask (packed sequences). enable_gqa lets a kernel read the shared K/V heads
// without copies, but on CUDA a mask together with enable_gqa rules out the flash and
// memory-efficient kernels (PyTorch's sdp_utils: flash takes no mask, the memory-efficient
// kernel no GQA), leaving the math kernel, which materialises S x S scores. So: no GQA: neither;
// GQA without a mask: enable_gqa; GQA with a mask: repeat the K/V heads, enable_gqa off.
// fused_causal_sdpa() also repeats them where the op itself would pick the math kernel for
// enable_gqa (at::_fused_sdp_choice: the CPU's flash kernel in LibTorch 2.6 takes no GQA).
struct FusedSdpaPlan {
  bool repeat_kv_heads = false;
  bool enable_gqa = false;
};
FusedSdpaPlan plan_fused_sdpa(bool masked, int64_t query_heads, int64_t kv_heads);

// The fused op of the LibTorch version whatever the device (causal_sdpa's non-CPU path), so
// that tests reach it on a CPU build too.
at::Tensor fused_causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& segment_ids = {});

// Whether the fused op reads `kv_heads` shared K/V heads for `query_heads` query heads on
// `device` in `dtype` without repeating them (unmasked, as fused_causal_sdpa() calls it): true
// without GQA; with GQA, true where the op's own choice (at::_fused_sdp_choice) for enable_gqa is
// a fused kernel, false before LibTorch 2.5 and where it is the math kernel (LibTorch 2.6's CPU
// flash kernel takes no GQA; 2.15's does). What the memory plan needs to know
// (economics/plan/memory.h).
bool fused_sdpa_reads_shared_kv(const at::Device& device, at::ScalarType dtype, int64_t query_heads,
                                int64_t kv_heads, int64_t head_dim);

// Whether causal_sdpa() runs ftbench's blocked attention on `device` (a CPU before LibTorch 2.2)
// rather than the fused op: what the memory plan needs to know (economics/plan/memory.h).
bool blocked_attention_on(const at::Device& device);

// The attention kernel causal_sdpa() runs on `device` in `dtype` for these heads, with or without
// packed sequences (`packed`: a mask): LibTorch's own dispatch choice (at::_fused_sdp_choice,
// LibTorch 2.5+) for the call fused_causal_sdpa() makes, as SDPBackend names it:
// "flash_attention", "efficient_attention", "cudnn_attention", "math", "overrideable";
// "blocked_math" for ftbench's blocked attention (a CPU before LibTorch 2.2); "unknown" where this
// LibTorch cannot say (2.2 to 2.4, or a choice it does not name).
std::string attention_kernel_name(const at::Device& device, at::ScalarType dtype,
                                  int64_t query_heads, int64_t kv_heads, int64_t head_dim,
                                  bool packed);

// [B, 1, S, S] bool, true where query i may attend to key j: j <= i, same segment.
at::Tensor packed_attention_mask(const at::Tensor& segment_ids);

// The direct formula softmax(q k^T / sqrt(D) + causal mask) v with GQA expansion, for tests;
// with `segment_ids`, the block-diagonal causal mask of packed_attention_mask.
at::Tensor causal_attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& segment_ids = {});

}  // namespace ftbench::model
