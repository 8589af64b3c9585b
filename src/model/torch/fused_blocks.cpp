#include "model/torch/fused_blocks.h"

#include <stdexcept>

#include <ATen/core/ivalue.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>

#include "device/torch/torch_version.h"
#include "model/torch/cpu_fused.h"
#include "model/torch/gpu_kernels.h"

namespace ftbench::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The slices of a LoRA node, carried to its backward.
struct LoraSlices : torch::CustomClassHolder {
  std::vector<LoraSliceRef> slices;
  at::ScalarType adapter_dtype = at::kFloat;
  int64_t total_rank = 0;
  bool dropout = false;  // some slice drew a mask
};

c10::intrusive_ptr<LoraSlices> slices_of(AutogradContext* ctx) {
  return c10::static_intrusive_pointer_cast<LoraSlices>(ctx->saved_data["slices"].toCapsule());
}

at::Tensor rows_of(const at::Tensor& x) { return x.reshape({-1, x.size(-1)}); }

std::vector<int64_t> with_last(at::IntArrayRef sizes, int64_t last) {
  std::vector<int64_t> out = sizes.vec();
  out.back() = last;
  return out;
}

double keep_scale(double p) { return dropout_keep_scale(p); }

class LoraDownFunction : public torch::autograd::Function<LoraDownFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList lora_a,
                            c10::intrusive_ptr<LoraSlices> plan, bool training) {
    const at::Tensor h = rows_of(x).to(plan->adapter_dtype);
    at::Tensor a_all;
    std::vector<at::Tensor> saved{x};
    bool dropout = false;
    for (const LoraSliceRef& s : plan->slices) dropout = dropout || (training && s.dropout > 0.0);
    plan->dropout = dropout;
    if (!dropout) {
      // One GEMM for every slice: the A matrices stacked.
      const at::Tensor a_cat = lora_a.size() == 1 ? lora_a[0] : at::cat(lora_a, 0);
      a_all = at::mm(h, a_cat.t());
    } else {
      a_all = at::empty({h.size(0), plan->total_rank}, h.options());
      for (std::size_t i = 0; i < plan->slices.size(); ++i) {
        const LoraSliceRef& s = plan->slices[i];
        at::Tensor out = a_all.narrow(1, s.rank_offset, s.rank);
        if (training && s.dropout > 0.0) {
          auto [dropped, mask] = at::native_dropout(h, s.dropout, /*train=*/true);
          saved.push_back(mask);
          at::mm_out(out, dropped, lora_a[i].t());
        } else {
          saved.emplace_back();
          at::mm_out(out, h, lora_a[i].t());
        }
      }
    }
    for (const at::Tensor& a : lora_a) saved.push_back(a);
    ctx->save_for_backward(saved);
    ctx->saved_data["slices"] = c10::IValue::make_capsule(plan);
    return a_all.view(with_last(x.sizes(), plan->total_rank));
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const c10::intrusive_ptr<LoraSlices> plan = slices_of(ctx);
    const auto saved = ctx->get_saved_variables();
    const std::size_t n = plan->slices.size();
    const std::size_t first_a = plan->dropout ? 1 + n : 1;
    std::vector<at::Tensor> masks(n);
    if (plan->dropout) {
      for (std::size_t i = 0; i < n; ++i) masks[i] = saved[1 + i];
    }
    std::vector<at::Tensor> a(saved.begin() + static_cast<std::ptrdiff_t>(first_a), saved.end());
    LoraDownGrads down =
        lora_down_backward(saved[0], masks, a, plan->slices, plan->adapter_dtype, grad_outputs[0]);
    tensor_list grads{down.dx};
    for (at::Tensor& g : down.da) grads.push_back(std::move(g));
    grads.emplace_back();  // plan
    grads.emplace_back();  // training
    return grads;
  }
};

class LoraUpFunction : public torch::autograd::Function<LoraUpFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& packed, const at::Tensor& a_all,
                            at::TensorList lora_b, c10::intrusive_ptr<LoraSlices> plan) {
    const at::Tensor out = rows_of(packed);
    const at::Tensor a = rows_of(a_all);
    for (std::size_t i = 0; i < plan->slices.size(); ++i) {
      const LoraSliceRef& s = plan->slices[i];
      at::Tensor cols = out.narrow(1, s.out_offset, s.out_features);
      const at::Tensor ai = a.narrow(1, s.rank_offset, s.rank);
      if (cols.scalar_type() == ai.scalar_type()) {
        cols.addmm_(ai, lora_b[i].t(), /*beta=*/1, /*alpha=*/s.scale);
      } else {
        cols.add_(at::mm(ai, lora_b[i].t()), s.scale);
      }
    }
    ctx->mark_dirty({packed});
    std::vector<at::Tensor> saved{a_all};
    for (const at::Tensor& b : lora_b) saved.push_back(b);
    ctx->save_for_backward(saved);
    ctx->saved_data["slices"] = c10::IValue::make_capsule(plan);
    return packed;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const c10::intrusive_ptr<LoraSlices> plan = slices_of(ctx);
    const auto saved = ctx->get_saved_variables();
    const std::vector<at::Tensor> b(saved.begin() + 1, saved.end());
    LoraUpGrads up = lora_up_backward(saved[0], b, plan->slices, grad_outputs[0]);
    tensor_list grads{grad_outputs[0], up.d_a_all};  // packed's passes through
    for (at::Tensor& g : up.db) grads.push_back(std::move(g));
    grads.emplace_back();  // plan
    return grads;
  }
};

// rope.h's forward into `out` ([B, S, H, D], any strides): x cos + rotate_half(x) sin, with the
// tables [S, 1, D] or [B, S, 1, D]; or with `transpose` its adjoint (the backward):
// [g1 c1 + g2 s2, g2 c2 - g1 s1] for halves 1 and 2.
void rope_into(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
               bool transpose, bool gpu_kernels) {
  // ftbench's own GPU kernel (gpu_kernels.h), when switched on and it takes these tensors.
  if (gpu_kernels && gpu_rope_applies(out, x, cos, sin)) {
    gpu_rope_into(out, x, cos, sin, transpose);
    return;
  }
  // The tables as given ([S, D]): the CPU's one-pass kernel, where it applies.
  if (cos.dim() == 2 && fused_applies(out) && fused_applies(x) && fused_applies(cos) &&
      fused_applies(sin)) {
    fused_rope_into(out, x, cos, sin, transpose);
    return;
  }
  const int64_t half = x.size(-1) / 2;
  if (cos.dim() == 2) {
    rope_into(out, x, cos.narrow(0, 0, x.size(1)).unsqueeze(1),
              sin.narrow(0, 0, x.size(1)).unsqueeze(1), transpose, /*gpu_kernels=*/false);
    return;
  }
  at::mul_out(out, x, cos);
  at::Tensor first = out.narrow(-1, 0, half);
  at::Tensor second = out.narrow(-1, half, half);
  if (!transpose) {
    first.addcmul_(x.narrow(-1, half, half), sin.narrow(-1, 0, half), -1);
    second.addcmul_(x.narrow(-1, 0, half), sin.narrow(-1, half, half));
  } else {
    first.addcmul_(x.narrow(-1, half, half), sin.narrow(-1, half, half));
    second.addcmul_(x.narrow(-1, 0, half), sin.narrow(-1, 0, half), -1);
  }
}

// The tables as rope_into() takes them: [>= S, D] as they are (rope_into narrows them); gathered
// [B, S, D] broadcast over heads, [B, S, 1, D].
std::pair<at::Tensor, at::Tensor> broadcast_tables(const RopeTables& rope) {
  if (rope.cos.dim() == 3) return {rope.cos.unsqueeze(2), rope.sin.unsqueeze(2)};
  return {rope.cos, rope.sin};
}

class QkvRopeFunction : public torch::autograd::Function<QkvRopeFunction> {
 public:
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& qkv, const at::Tensor& cos,
                             const at::Tensor& sin, int64_t n_heads, int64_t n_kv_heads,
                             int64_t head_dim, bool gpu_kernels) {
    const int64_t b = qkv.size(0);
    const int64_t s = qkv.size(1);
    const auto [c, sn] = broadcast_tables({cos, sin});
    const auto heads = [&](int64_t first, int64_t count) {
      return qkv.narrow(2, first * head_dim, count * head_dim).view({b, s, count, head_dim});
    };
    at::Tensor q = at::empty({b, s, n_heads, head_dim}, qkv.options());
    at::Tensor k = at::empty({b, s, n_kv_heads, head_dim}, qkv.options());
    rope_into(q, heads(0, n_heads), c, sn, /*transpose=*/false, gpu_kernels);
    rope_into(k, heads(n_heads, n_kv_heads), c, sn, /*transpose=*/false, gpu_kernels);
    ctx->saved_data["gpu_kernels"] = gpu_kernels;
    const at::Tensor v = heads(n_heads + n_kv_heads, n_kv_heads);
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["shape"] = std::vector<int64_t>{b, s, n_heads, n_kv_heads, head_dim};
    return {q, k, v};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const std::vector<int64_t> shape = ctx->saved_data["shape"].toIntVector();
    const int64_t b = shape[0];
    const int64_t s = shape[1];
    const int64_t h = shape[2];
    const int64_t kv = shape[3];
    const int64_t d = shape[4];
    const bool gpu_kernels = ctx->saved_data["gpu_kernels"].toBool();
    const auto [c, sn] = broadcast_tables({saved[0], saved[1]});
    const at::Tensor& any = grad_outputs[0].defined()   ? grad_outputs[0]
                            : grad_outputs[1].defined() ? grad_outputs[1]
                                                        : grad_outputs[2];
    at::Tensor dqkv = at::empty({b, s, (h + 2 * kv) * d}, any.options());
    const auto heads = [&](int64_t first, int64_t count) {
      return dqkv.narrow(2, first * d, count * d).view({b, s, count, d});
    };
    at::Tensor dq = heads(0, h);
    at::Tensor dk = heads(h, kv);
    at::Tensor dv = heads(h + kv, kv);
    if (grad_outputs[0].defined()) {
      rope_into(dq, grad_outputs[0], c, sn, /*transpose=*/true, gpu_kernels);
    } else {
      dq.zero_();
    }
    if (grad_outputs[1].defined()) {
      rope_into(dk, grad_outputs[1], c, sn, /*transpose=*/true, gpu_kernels);
    } else {
      dk.zero_();
    }
    if (grad_outputs[2].defined()) {
      dv.copy_(grad_outputs[2]);
    } else {
      dv.zero_();
    }
    return {dqkv,         at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class SwigluPackedFunction : public torch::autograd::Function<SwigluPackedFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_up) {
    const int64_t f = gate_up.size(-1) / 2;
    ctx->save_for_backward({gate_up});
    return at::silu(gate_up.narrow(-1, 0, f)) * gate_up.narrow(-1, f, f);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const at::Tensor gate_up = ctx->get_saved_variables()[0];
    const int64_t f = gate_up.size(-1) / 2;
    const at::Tensor gate = gate_up.narrow(-1, 0, f);
    const at::Tensor up = gate_up.narrow(-1, f, f);
    const at::Tensor& dy = grad_outputs[0];
    at::Tensor dgu = at::empty(gate_up.sizes(), dy.options());
    at::Tensor dgate = dgu.narrow(-1, 0, f);
    at::Tensor dup = dgu.narrow(-1, f, f);
    // As autograd through silu(gate) * up: d(up) = dy silu(gate), d(silu) = dy up, then silu's
    // own backward.
    at::mul_out(dup, dy, at::silu(gate));
    at::silu_backward_out(dgate, dy * up, gate);
    return {dgu};
  }
};

}  // namespace

double dropout_keep_scale(double p) { return p >= 1.0 ? 0.0 : 1.0 / (1.0 - p); }

// Two [tokens, in] tensors of the adapters' dtype at most: the input cast again, and one slice's
// dropped copy while the A gradients are made; then the input's gradient and one slice's term of
// it.
LoraDownGrads lora_down_backward(const at::Tensor& x, const std::vector<at::Tensor>& masks,
                                 const std::vector<at::Tensor>& lora_a,
                                 const std::vector<LoraSliceRef>& slices,
                                 at::ScalarType adapter_dtype, const at::Tensor& grad_a_all) {
  const std::size_t n = slices.size();
  bool dropout = false;
  for (const at::Tensor& m : masks) dropout = dropout || m.defined();
  const at::Tensor g = rows_of(grad_a_all);
  LoraDownGrads out;
  at::Tensor dh;
  if (!dropout) {
    const at::Tensor a_cat = lora_a.size() == 1 ? lora_a[0] : at::cat(lora_a, 0);
    {
      const at::Tensor h = rows_of(x).to(adapter_dtype);  // the cast again, not stored
      const at::Tensor da_cat = at::mm(g.t(), h);         // [sum(rank), in]
      for (const LoraSliceRef& s : slices) {
        out.da.push_back(da_cat.narrow(0, s.rank_offset, s.rank));
      }
    }
    dh = at::mm(g, a_cat);
  } else {
    {
      const at::Tensor h = rows_of(x).to(adapter_dtype);
      for (std::size_t i = 0; i < n; ++i) {
        const LoraSliceRef& s = slices[i];
        const at::Tensor& mask = masks[i];
        const at::Tensor gi = g.narrow(1, s.rank_offset, s.rank);
        out.da.push_back(mask.defined() ? at::mm(gi.t(), h * mask * keep_scale(s.dropout))
                                        : at::mm(gi.t(), h));
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const LoraSliceRef& s = slices[i];
      const at::Tensor& mask = masks[i];
      at::Tensor term = at::mm(g.narrow(1, s.rank_offset, s.rank), lora_a[i]);
      if (mask.defined()) term.mul_(mask).mul_(keep_scale(s.dropout));
      if (dh.defined()) {
        dh.add_(term);
      } else {
        dh = std::move(term);
      }
    }
  }
  out.dx = dh.to(x.scalar_type()).view(x.sizes());
  return out;
}

LoraUpGrads lora_up_backward(const at::Tensor& a_all, const std::vector<at::Tensor>& lora_b,
                             const std::vector<LoraSliceRef>& slices,
                             const at::Tensor& grad_packed) {
  const at::Tensor a = rows_of(a_all);
  const at::Tensor g = rows_of(grad_packed);
  at::Tensor da = at::empty_like(a);
  LoraUpGrads out;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const LoraSliceRef& s = slices[i];
    const at::Tensor& b = lora_b[i];
    const at::Tensor gi = g.narrow(1, s.out_offset, s.out_features).to(b.scalar_type());
    at::Tensor da_i = da.narrow(1, s.rank_offset, s.rank);
    at::mm_out(da_i, gi, b).mul_(s.scale);
    out.db.push_back(at::mm(gi.t(), a.narrow(1, s.rank_offset, s.rank)).mul_(s.scale));
  }
  out.d_a_all = da.view(a_all.sizes());
  return out;
}

at::Tensor lora_down(const at::Tensor& x, const std::vector<at::Tensor>& lora_a,
                     const std::vector<LoraSliceRef>& slices, at::ScalarType adapter_dtype,
                     bool training) {
  if (lora_a.size() != slices.size() || slices.empty()) {
    throw std::invalid_argument("lora_down: one A per slice, at least one");
  }
  auto plan = c10::make_intrusive<LoraSlices>();
  plan->slices = slices;
  plan->adapter_dtype = adapter_dtype;
  for (const LoraSliceRef& s : slices) {
    if (s.rank_offset != plan->total_rank) {
      throw std::invalid_argument("lora_down: the slices' ranks must follow one another");
    }
    plan->total_rank += s.rank;
  }
  return LoraDownFunction::apply(x, at::TensorList(lora_a), plan, training);
}

at::Tensor lora_up_(const at::Tensor& packed, const at::Tensor& a_all,
                    const std::vector<at::Tensor>& lora_b,
                    const std::vector<LoraSliceRef>& slices) {
  if (lora_b.size() != slices.size() || slices.empty()) {
    throw std::invalid_argument("lora_up_: one B per slice, at least one");
  }
  auto plan = c10::make_intrusive<LoraSlices>();
  plan->slices = slices;
  return LoraUpFunction::apply(packed, a_all, at::TensorList(lora_b), plan);
}

QkvHeads split_qkv_rope(const at::Tensor& qkv, int64_t n_heads, int64_t n_kv_heads,
                        int64_t head_dim, const RopeTables& rope, bool gpu_kernels) {
  if (qkv.dim() != 3 || qkv.size(2) != (n_heads + 2 * n_kv_heads) * head_dim || head_dim % 2 != 0) {
    throw std::invalid_argument("split_qkv_rope: expected [B, S, (H + 2 KV) D] with D even");
  }
  const tensor_list out =
      QkvRopeFunction::apply(qkv, rope.cos, rope.sin, n_heads, n_kv_heads, head_dim, gpu_kernels);
  return {out[0], out[1], out[2]};
}

at::Tensor swiglu_packed(const at::Tensor& gate_up) {
  if (gate_up.size(-1) % 2 != 0) throw std::invalid_argument("swiglu_packed: needs [..., 2F]");
  if (fused_applies(gate_up)) return fused_swiglu_packed(gate_up);
  return SwigluPackedFunction::apply(gate_up);
}

at::Tensor rms_norm_frozen(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (fused_applies(x) && fused_applies(weight) && !weight.requires_grad()) {
    return fused_rms_norm(x, weight, eps);
  }
#if FTBENCH_TORCH_AT_LEAST(2, 4)
  return weight * at::rms_norm(x, {x.size(-1)}, /*weight=*/std::nullopt, eps);
#else
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
#endif
}

}  // namespace ftbench::model
