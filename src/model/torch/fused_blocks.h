// The decoder layer's work between its GEMMs, as few passes over memory as ATen allows, on any
// device (CUDA, ROCm, CPU): torch::autograd::Function nodes built from ATen operators, whose
// backward writes a fused projection's gradient as one tensor (no split's `cat`), keeps
// dropout as a boolean mask rather than an fp32 copy of the input, and folds the LoRA scale into
// the GEMM that adds the update. Where the CPU's one-pass kernels apply (cpu_fused.h: fp32 on a
// CPU) the same nodes call them. The composite forms these replace stay as the oracle
// (LoraLinearImpl::forward_unfused, DecoderLayerImpl with fused blocks off), and the tests hold
// each node against them in fp32 on a CPU (tests/model/torch/fused_blocks_test.cpp).
#pragma once

#include <vector>

#include <ATen/ATen.h>

#include "model/torch/rope.h"

namespace ftbench::model {

// One LoRA slice of a fused projection, for the two nodes below: its place in the projection's
// packed output and in the packed [.., sum(rank)] down-projection, and its settings.
struct LoraSliceRef {
  int64_t out_offset = 0;  // first column of the slice in the packed output
  int64_t out_features = 0;
  int64_t rank_offset = 0;  // first column of its A output in the packed down-projection
  int64_t rank = 0;
  double scale = 1.0;    // alpha / rank
  double dropout = 0.0;  // p, applied when training
};

// The LoRA down-projections of every slice, [..., sum(rank)] in `adapter_dtype`: x cast to the
// adapter dtype once, then dropout(x) A_i^T per slice, one GEMM for all the slices when none
// drops out (A_i stacked). Saved for the backward: x as given (not the cast copy) and each
// slice's dropout mask (bool); the backward recomputes the cast. `lora_a[i]` is slice i's A
// [rank_i, in]. Dropout draws from the default generator of x's device, one mask per slice, as
// at::native_dropout does.
at::Tensor lora_down(const at::Tensor& x, const std::vector<at::Tensor>& lora_a,
                     const std::vector<LoraSliceRef>& slices, at::ScalarType adapter_dtype,
                     bool training);

// Adds each slice's update scale_i * a_i B_i^T into its columns of `packed` ([..., N], the base
// GEMM's output) in place and returns it: one GEMM per slice with the scale as its alpha where
// the dtypes agree (addmm_), else an fp32 product added in one pass that rounds once, as PEFT's
// fp32 update added to the bf16 result and cast back does. `a_all`: lora_down()'s output. The
// gradient of `packed` passes through untouched (one tensor, no copy); the adapters' come from
// its column slices.
at::Tensor lora_up_(const at::Tensor& packed, const at::Tensor& a_all,
                    const std::vector<at::Tensor>& lora_b, const std::vector<LoraSliceRef>& slices);

// The two LoRA nodes' backward, for selective_recompute.h's replay as well: `masks[i]` is slice
// i's dropout mask (undefined: it did not drop out), `x` lora_down()'s input as given.
struct LoraDownGrads {
  at::Tensor dx;               // x's gradient, x's dtype and shape
  std::vector<at::Tensor> da;  // each A's
};
LoraDownGrads lora_down_backward(const at::Tensor& x, const std::vector<at::Tensor>& masks,
                                 const std::vector<at::Tensor>& lora_a,
                                 const std::vector<LoraSliceRef>& slices,
                                 at::ScalarType adapter_dtype, const at::Tensor& grad_a_all);
struct LoraUpGrads {
  at::Tensor d_a_all;          // a_all's gradient
  std::vector<at::Tensor> db;  // each B's
};
LoraUpGrads lora_up_backward(const at::Tensor& a_all, const std::vector<at::Tensor>& lora_b,
                             const std::vector<LoraSliceRef>& slices,
                             const at::Tensor& grad_packed);
// 1 / (1 - p): at::native_dropout's scale of the kept elements.
double dropout_keep_scale(double p);

// The fused q/k/v projection's output [B, S, (H + 2 KV) D] taken apart for attention: q and k
// rotated (rope.h's rotate-half form), v as is, each [B, S, heads, D]; q and k new contiguous
// tensors, v a view. The backward writes the three gradients straight into one
// [B, S, (H + 2 KV) D] tensor.
struct QkvHeads {
  at::Tensor q;
  at::Tensor k;
  at::Tensor v;
};
// `gpu_kernels`: the rotary embedding through ftbench's own GPU kernel where it applies
// (gpu_kernels.h; off by default, FTBENCH_GPU_KERNELS=1).
QkvHeads split_qkv_rope(const at::Tensor& qkv, int64_t n_heads, int64_t n_kv_heads,
                        int64_t head_dim, const RopeTables& rope, bool gpu_kernels = false);

// silu(gate) * up on [gate | up] ([..., 2F]) -> [..., F], rounded as the composite form (silu,
// then the product); the gradient comes back as one [..., 2F] tensor, and only the input is
// kept (silu(gate) is recomputed in the backward rather than stored).
at::Tensor swiglu_packed(const at::Tensor& gate_up);

// Llama's RMSNorm with a frozen weight, Hugging Face's rounding order (normalised in fp32, cast to
// x's dtype, then times the weight): at::rms_norm without a weight (LibTorch 2.4+, a fused
// kernel on CUDA from 2.8), then the weight; the composite form before 2.4.
at::Tensor rms_norm_frozen(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace ftbench::model
