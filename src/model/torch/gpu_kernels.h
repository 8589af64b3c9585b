// Kernels of ftbench's own for the GPU, only where ATen has none: rotate-half RoPE, forward and
// backward, in one pass (src/model/torch/cuda/rope_kernel.cu, compiled by nvcc in a CUDA build of
// LibTorch and as HIP in a ROCm one). ATen's composite form stays the CPU implementation and the
// test oracle (tests/gpu/rope_kernel_test.cpp). Off unless FTBENCH_GPU_KERNELS=1: a kernel is
// switched on by default only after it ran and matched the oracle on a GPU, which this one has not
// yet (as of 2026-12-07).
#pragma once

#include <ATen/ATen.h>

namespace ftbench::model {

// True when this build compiled the kernel (FTBENCH_GPU_KERNELS_BUILT: a CUDA or ROCm build of
// LibTorch with the CMake option FTBENCH_GPU_KERNELS on). False in a CPU build.
bool gpu_rope_kernel_built();

// FTBENCH_GPU_KERNELS: unset or "0" off, "1" on; anything else throws std::invalid_argument
// naming the variable, what it expects and what it found. Read once by the caller that builds
// the model, not per call.
bool gpu_kernels_enabled_from_environment();

// True when gpu_rope_into() takes these tensors: the kernel is built; all four on one CUDA (or
// ROCm) device; x and out [B, S, H, D] of one shape and one dtype (fp32, bf16 or fp16), D even,
// their last dimension contiguous (stride 1), other strides free (a view of a packed q/k/v
// projection); cos and sin of one shape, dtype (fp32, or x's) and strides, their last dimension
// contiguous, either [>= S, D] (row s for position s, the same for every sample), [B, S, D]
// (gathered at per-sample positions) or [B, S, 1, D] (that, broadcast over heads). Pure: reads
// the tensors' metadata only.
bool gpu_rope_applies(const at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                      const at::Tensor& sin);

// Rotate-half rotary embedding into `out`: x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1]
// for halves 1 and 2 of D; with `transpose` its adjoint (the backward: [g1 c1 + g2 s2,
// g2 c2 - g1 s1]). Computed in fp32 and rounded once to out's dtype. `out` may be x itself but
// must not otherwise overlap it. Runs on the current stream of x's device, asynchronously; a
// failed launch throws c10::Error. Throws std::invalid_argument where gpu_rope_applies() is
// false (always in a build without the kernel).
void gpu_rope_into(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                   const at::Tensor& sin, bool transpose);

}  // namespace ftbench::model
