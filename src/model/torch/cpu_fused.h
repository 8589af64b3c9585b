// One-pass CPU kernels, with their backward, for the elementwise parts of a decoder layer.
//
// On a CPU every elementwise ATen operator is a pass over memory, and a training step at
// cpu-bench's size ([2048 tokens x 256] activations) spends about a third of its time in them:
// RMSNorm as x * rsqrt(mean(x^2) + eps) * w is five passes forward and about eight backward,
// rotate-half RoPE five each way. These do the same arithmetic in fp32 in one pass each way,
// as torch::autograd::Function nodes; where fused_applies() is false the callers keep the
// composite ATen forms. Results match those forms to fp32 rounding (the sum of squares is
// accumulated in another order). Threads: at::parallel_for over rows.
#pragma once

#include <ATen/ATen.h>

namespace ftbench::model {

// True when the one-pass kernels take `x`: a CPU fp32 tensor whose last dimension is contiguous.
bool fused_applies(const at::Tensor& x);

// RMSNorm with a frozen weight: weight * (x * rsqrt(mean(x^2, -1) + eps)).
// x: [..., D] (fused_applies), weight: [D] fp32 CPU without gradient. Returns a contiguous
// tensor of x's shape; the gradient flows to x only.
at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// Rotate-half rotary embedding: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
// x: [B, S, H, D] (fused_applies, D even; other strides free), cos and sin: [>= S, D] fp32 CPU
// (row s for position s). Returns a contiguous [B, S, H, D] tensor.
at::Tensor fused_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// fused_rope()'s arithmetic without autograd, into `out` (any strides but 1 on D, such as a view
// of a fused projection's gradient), or with `transpose` its adjoint (the backward:
// [g1 c1 + g2 s2, g2 c2 - g1 s1]). x and out: [B, S, H, D] (fused_applies); cos, sin: [>= S, D].
void fused_rope_into(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, bool transpose);

// SwiGLU's product silu(gate) * up, gate and up of one shape (fused_applies both). The
// sigmoid comes from ATen's vectorised at::sigmoid (one pass) and is kept for the backward,
// which is then one pass without exponentials.
at::Tensor fused_swiglu(const at::Tensor& gate, const at::Tensor& up);

// The same on [gate | up] in one tensor [..., 2F] (a fused gate/up projection without adapters):
// returns [..., F], and the gradient comes back in one [..., 2F] tensor, so no split's backward
// concatenates two halves.
at::Tensor fused_swiglu_packed(const at::Tensor& gate_up);

}  // namespace ftbench::model
