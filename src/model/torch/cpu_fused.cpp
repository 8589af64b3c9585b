#include "model/torch/cpu_fused.h"

#include <cmath>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/autograd.h>

namespace ftbench::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Rows of a few hundred to a few thousand floats: enough per task to amortise the dispatch.
constexpr int64_t kGrainRows = 16;

// [rows, D] with a contiguous last dimension: a view where the leading dimensions merge,
// else a copy.
at::Tensor as_rows(const at::Tensor& x) {
  at::Tensor rows = x.reshape({-1, x.size(-1)});
  return rows.stride(1) == 1 ? rows : rows.contiguous();
}

float sum_of_squares(const float* x, int64_t n) {
  // Eight partial sums: a dependency chain per lane, not one for the whole row.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += x[j + l] * x[j + l];
  }
  float total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; j < n; ++j) total += x[j] * x[j];
  return total;
}

class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            double eps) {
    const at::Tensor xr = as_rows(x);
    const int64_t rows = xr.size(0);
    const int64_t d = xr.size(1);
    at::Tensor y = at::empty({rows, d}, x.options());
    at::Tensor rstd = at::empty({rows}, x.options());
    const float* xp = xr.data_ptr<float>();
    const int64_t x_stride = xr.stride(0);
    const float* wp = weight.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* rp = rstd.data_ptr<float>();
    const float epsf = static_cast<float>(eps);
    at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xrow = xp + r * x_stride;
        float* yrow = yp + r * d;
        const float inv = 1.0f / std::sqrt(sum_of_squares(xrow, d) / float(d) + epsf);
        rp[r] = inv;
        for (int64_t j = 0; j < d; ++j) yrow[j] = wp[j] * (xrow[j] * inv);
      }
    });
    ctx->save_for_backward({xr, weight, rstd});
    return y.view(x.sizes());
  }

  // y_j = w_j x_j r, r = (sum(x^2) / D + eps)^(-1/2), so with g = dL/dy:
  // dx_k = r w_k g_k - (r^3 / D) x_k sum_j(g_j w_j x_j).
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& xr = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor g = as_rows(grad_outputs[0]);
    const int64_t rows = xr.size(0);
    const int64_t d = xr.size(1);
    at::Tensor dx = at::empty({rows, d}, xr.options());
    const float* xp = xr.data_ptr<float>();
    const int64_t x_stride = xr.stride(0);
    const float* gp = g.data_ptr<float>();
    const int64_t g_stride = g.stride(0);
    const float* wp = weight.data_ptr<float>();
    const float* rp = rstd.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xrow = xp + r * x_stride;
        const float* grow = gp + r * g_stride;
        float* dxrow = dxp + r * d;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + 8 <= d; j += 8) {
          for (int l = 0; l < 8; ++l) acc[l] += grow[j + l] * wp[j + l] * xrow[j + l];
        }
        float dot =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; j < d; ++j) dot += grow[j] * wp[j] * xrow[j];
        const float inv = rp[r];
        const float c = inv * inv * inv * dot / float(d);
        for (int64_t k = 0; k < d; ++k) dxrow[k] = inv * wp[k] * grow[k] - c * xrow[k];
      }
    });
    return {dx.view(grad_outputs[0].sizes()), at::Tensor(), at::Tensor()};
  }
};

// out[b, s, h, :] = x * cos[s] + rotate_half(x) * sin[s], or with `transpose` the adjoint:
// x * cos[s] + rotate_half^T(x * sin[s]), rotate_half^T(y) = [y2, -y1] (the backward).
// x and out: [B, S, H, D] with stride 1 on D (out may be a view into a larger tensor).
void rope_kernel(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, at::Tensor& out,
                 bool transpose) {
  const int64_t b = x.size(0);
  const int64_t s = x.size(1);
  const int64_t h = x.size(2);
  const int64_t d = x.size(3);
  const int64_t half = d / 2;
  const int64_t sb = x.stride(0);
  const int64_t ss = x.stride(1);
  const int64_t sh = x.stride(2);
  const float* xp = x.data_ptr<float>();
  const float* cp = cos.data_ptr<float>();
  const float* snp = sin.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t ob = out.stride(0);
  const int64_t os = out.stride(1);
  const int64_t oh = out.stride(2);
  at::parallel_for(0, b * s, kGrainRows, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t bi = row / s;
      const int64_t si = row % s;
      const float* c = cp + si * d;
      const float* sn = snp + si * d;
      for (int64_t hi = 0; hi < h; ++hi) {
        const float* xr = xp + bi * sb + si * ss + hi * sh;
        float* o = op + bi * ob + si * os + hi * oh;
        if (!transpose) {
          for (int64_t j = 0; j < half; ++j) o[j] = xr[j] * c[j] - xr[j + half] * sn[j];
          for (int64_t j = half; j < d; ++j) o[j] = xr[j] * c[j] + xr[j - half] * sn[j];
        } else {
          for (int64_t j = 0; j < half; ++j) {
            o[j] = xr[j] * c[j] + xr[j + half] * sn[j + half];
          }
          for (int64_t j = half; j < d; ++j) o[j] = xr[j] * c[j] - xr[j - half] * sn[j - half];
        }
      }
    }
  });
}

at::Tensor last_dim_contiguous(const at::Tensor& x) {
  return x.stride(-1) == 1 ? x : x.contiguous();
}

class RopeFunction : public torch::autograd::Function<RopeFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin) {
    const at::Tensor c = cos.narrow(0, 0, x.size(1)).contiguous();
    const at::Tensor sn = sin.narrow(0, 0, x.size(1)).contiguous();
    at::Tensor out = at::empty(x.sizes(), x.options());
    rope_kernel(last_dim_contiguous(x), c, sn, out, /*transpose=*/false);
    ctx->save_for_backward({c, sn});
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor g = last_dim_contiguous(grad_outputs[0]);
    at::Tensor dx = at::empty(g.sizes(), g.options());
    rope_kernel(g, saved[0], saved[1], dx, /*transpose=*/true);
    return {dx, at::Tensor(), at::Tensor()};
  }
};

// Rows of gate and up: `rows` rows of `f` floats, row r at data + r * stride.
struct RowsView {
  const float* data;
  int64_t stride;
};
struct MutableRowsView {
  float* data;
  int64_t stride;
};

// y = gate * s * up with s = sigmoid(gate), s given (contiguous [rows, f]).
void swiglu_forward_kernel(RowsView gate, RowsView up, const float* sig, MutableRowsView y,
                           int64_t rows, int64_t f) {
  at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* gr = gate.data + r * gate.stride;
      const float* ur = up.data + r * up.stride;
      const float* sr = sig + r * f;
      float* yr = y.data + r * y.stride;
      for (int64_t j = 0; j < f; ++j) yr[j] = (gr[j] * sr[j]) * ur[j];
    }
  });
}

// dgate = dy * up * s * (1 + gate * (1 - s)), dup = dy * gate * s
// (silu'(x) = s (1 + x (1 - s)), as ATen's silu_backward).
void swiglu_backward_kernel(RowsView gate, RowsView up, const float* sig, RowsView dy,
                            MutableRowsView dgate, MutableRowsView dup, int64_t rows, int64_t f) {
  at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* gr = gate.data + r * gate.stride;
      const float* ur = up.data + r * up.stride;
      const float* sr = sig + r * f;
      const float* dyr = dy.data + r * dy.stride;
      float* dgr = dgate.data + r * dgate.stride;
      float* dur = dup.data + r * dup.stride;
      for (int64_t j = 0; j < f; ++j) {
        const float s = sr[j];
        dur[j] = dyr[j] * (gr[j] * s);
        dgr[j] = (dyr[j] * ur[j]) * (s * (1.0f + gr[j] * (1.0f - s)));
      }
    }
  });
}

// silu(gate) * up for gate and up given apart.
class SwigluFunction : public torch::autograd::Function<SwigluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    const at::Tensor g = as_rows(gate);
    const at::Tensor u = as_rows(up);
    const at::Tensor sig = at::sigmoid(g);  // contiguous [rows, F]
    const int64_t rows = g.size(0);
    const int64_t f = g.size(1);
    at::Tensor y = at::empty({rows, f}, gate.options());
    swiglu_forward_kernel({g.data_ptr<float>(), g.stride(0)}, {u.data_ptr<float>(), u.stride(0)},
                          sig.data_ptr<float>(), {y.data_ptr<float>(), f}, rows, f);
    ctx->save_for_backward({g, u, sig});
    return y.view(gate.sizes());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = saved[0];
    const at::Tensor& u = saved[1];
    const at::Tensor& sig = saved[2];
    const at::Tensor dy = as_rows(grad_outputs[0]);
    const int64_t rows = g.size(0);
    const int64_t f = g.size(1);
    at::Tensor dg = at::empty({rows, f}, g.options());
    at::Tensor du = at::empty({rows, f}, g.options());
    swiglu_backward_kernel({g.data_ptr<float>(), g.stride(0)}, {u.data_ptr<float>(), u.stride(0)},
                           sig.data_ptr<float>(), {dy.data_ptr<float>(), dy.stride(0)},
                           {dg.data_ptr<float>(), f}, {du.data_ptr<float>(), f}, rows, f);
    const at::IntArrayRef sizes = grad_outputs[0].sizes();
    return {dg.view(sizes), du.view(sizes)};
  }
};

// silu(gate) * up with [gate | up] side by side in one tensor: the gradient is written into one
// tensor of that layout, so no split's backward has to concatenate the two halves.
class PackedSwigluFunction : public torch::autograd::Function<PackedSwigluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_up) {
    const at::Tensor gu = as_rows(gate_up);
    const int64_t rows = gu.size(0);
    const int64_t f = gu.size(1) / 2;
    const at::Tensor sig = at::sigmoid(gu.narrow(1, 0, f));  // contiguous [rows, F]
    at::Tensor y = at::empty({rows, f}, gu.options());
    const float* base = gu.data_ptr<float>();
    swiglu_forward_kernel({base, gu.stride(0)}, {base + f, gu.stride(0)}, sig.data_ptr<float>(),
                          {y.data_ptr<float>(), f}, rows, f);
    ctx->save_for_backward({gu, sig});
    std::vector<int64_t> sizes = gate_up.sizes().vec();
    sizes.back() = f;
    return y.view(sizes);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& gu = saved[0];
    const at::Tensor& sig = saved[1];
    const at::Tensor dy = as_rows(grad_outputs[0]);
    const int64_t rows = gu.size(0);
    const int64_t f = gu.size(1) / 2;
    at::Tensor dgu = at::empty({rows, 2 * f}, gu.options());
    const float* base = gu.data_ptr<float>();
    float* dbase = dgu.data_ptr<float>();
    swiglu_backward_kernel({base, gu.stride(0)}, {base + f, gu.stride(0)}, sig.data_ptr<float>(),
                           {dy.data_ptr<float>(), dy.stride(0)}, {dbase, 2 * f}, {dbase + f, 2 * f},
                           rows, f);
    std::vector<int64_t> sizes = grad_outputs[0].sizes().vec();
    sizes.back() = 2 * f;
    return {dgu.view(sizes)};
  }
};

}  // namespace

bool fused_applies(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1 &&
         x.layout() == at::kStrided && x.stride(-1) == 1;
}

at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (!fused_applies(x) || !weight.device().is_cpu() || weight.scalar_type() != at::kFloat ||
      weight.requires_grad() || weight.numel() != x.size(-1)) {
    throw std::invalid_argument(
        "fused_rms_norm: needs fp32 CPU x [..., D] and a frozen weight [D]");
  }
  return RmsNormFunction::apply(x, weight.contiguous(), eps);
}

at::Tensor fused_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  if (!fused_applies(x) || x.dim() != 4 || x.size(3) % 2 != 0 || cos.dim() != 2 ||
      cos.size(0) < x.size(1) || cos.size(1) != x.size(3) || !fused_applies(cos) ||
      !fused_applies(sin) || sin.sizes() != cos.sizes()) {
    throw std::invalid_argument("fused_rope: needs fp32 CPU x [B, S, H, D] and tables [>= S, D]");
  }
  return RopeFunction::apply(x, cos, sin);
}

void fused_rope_into(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, bool transpose) {
  if (!fused_applies(x) || !fused_applies(out) || x.dim() != 4 || out.sizes() != x.sizes() ||
      x.size(3) % 2 != 0 || cos.dim() != 2 || cos.size(0) < x.size(1) || cos.size(1) != x.size(3) ||
      !fused_applies(cos) || !fused_applies(sin) || sin.sizes() != cos.sizes()) {
    throw std::invalid_argument(
        "fused_rope_into: needs fp32 CPU x and out [B, S, H, D] and tables [>= S, D]");
  }
  rope_kernel(x, cos.narrow(0, 0, x.size(1)).contiguous(), sin.narrow(0, 0, x.size(1)).contiguous(),
              out, transpose);
}

at::Tensor fused_swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (!fused_applies(gate) || !fused_applies(up) || gate.sizes() != up.sizes()) {
    throw std::invalid_argument("fused_swiglu: needs fp32 CPU gate and up of one shape");
  }
  return SwigluFunction::apply(gate, up);
}

at::Tensor fused_swiglu_packed(const at::Tensor& gate_up) {
  if (!fused_applies(gate_up) || gate_up.size(-1) % 2 != 0) {
    throw std::invalid_argument("fused_swiglu_packed: needs fp32 CPU [..., 2F]");
  }
  return PackedSwigluFunction::apply(gate_up);
}

}  // namespace ftbench::model
