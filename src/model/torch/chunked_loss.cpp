#include "model/torch/chunked_loss.h"

#include <algorithm>
#include <stdexcept>

#include <torch/autograd.h>

namespace ftbench::model {
namespace {

constexpr int64_t kIgnoreIndex = -100;

class ChunkedLinearCrossEntropy : public torch::autograd::Function<ChunkedLinearCrossEntropy> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& h,
                            const at::Tensor& weight, const at::Tensor& targets, int64_t chunk_rows,
                            bool fused) {
    const bool need_grad = h.requires_grad();
    const int64_t n = h.size(0);
    // fp32 at least: the half-precision logits are upcast, fp64 stays fp64.
    const at::ScalarType acc = h.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    at::Tensor loss = at::zeros({}, h.options().dtype(acc));
    at::Tensor grad_h = need_grad ? at::empty_like(h) : at::Tensor();
    const at::Tensor weight_t = weight.t();
    for (int64_t start = 0; start < n; start += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, n - start);
      const at::Tensor t = targets.narrow(0, start, rows);
      const at::Tensor valid = t.ne(kIgnoreIndex);
      const at::Tensor safe = at::where(valid, t, at::zeros_like(t)).unsqueeze(1);
      if (fused) {
        const at::Tensor logits = at::matmul(h.narrow(0, start, rows), weight_t);
        // bf16/fp16 logits straight into fp32 log-probabilities where the kernel takes them
        // (CUDA and ROCm); a cast first elsewhere.
        at::Tensor logp = logits.scalar_type() != acc && logits.is_cuda()
                              ? at::_log_softmax(logits, 1, /*half_to_float=*/true)
                              : at::_log_softmax(logits.to(acc), 1, /*half_to_float=*/false);
        loss.sub_((logp.gather(1, safe).squeeze(1) * valid).sum());
        if (!need_grad) continue;
        // softmax - one_hot(target); ignored rows zeroed below, in the [rows, d] gradient.
        at::Tensor g = logp.exp_();
        const at::Tensor valid_f = valid.to(acc).unsqueeze(1);
        g.scatter_add_(1, safe, -valid_f);
        at::Tensor out = grad_h.narrow(0, start, rows);
        at::mm_out(out, g.to(h.scalar_type()), weight);
        out.mul_(valid_f.to(h.scalar_type()));
        continue;
      }
      at::Tensor logits = at::matmul(h.narrow(0, start, rows), weight_t).to(acc);
      const at::Tensor lse = at::logsumexp(logits, {1}, /*keepdim=*/true);
      const at::Tensor picked = logits.gather(1, safe);
      loss.add_(((lse - picked).squeeze(1) * valid).sum());
      if (!need_grad) continue;
      // d loss / d logits = softmax - one_hot(target) on counted rows, 0 on ignored ones.
      at::Tensor g = logits.sub_(lse).exp_();
      const at::Tensor valid_f = valid.to(acc).unsqueeze(1);
      g.scatter_add_(1, safe, -valid_f);
      g.mul_(valid_f);
      grad_h.narrow(0, start, rows).copy_(at::matmul(g.to(h.scalar_type()), weight));
    }
    if (need_grad) ctx->save_for_backward({grad_h});
    return loss;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const at::Tensor grad_h = ctx->get_saved_variables()[0];
    const at::Tensor scale = grad_outputs[0].to(grad_h.scalar_type());
    return {grad_h * scale, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

int64_t loss_chunk_rows(int64_t vocab, int64_t budget_bytes) {
  constexpr int64_t kTile = 256;
  const int64_t rows = std::max<int64_t>(1, budget_bytes / (std::max<int64_t>(vocab, 1) * 4));
  return rows > kTile ? rows - rows % kTile : rows;
}

at::Tensor chunked_linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight,
                                        const at::Tensor& targets, int64_t chunk_rows, bool fused) {
  if (weight.requires_grad()) {
    throw std::invalid_argument("chunked_linear_cross_entropy: the weight must be frozen");
  }
  if (chunk_rows < 1) throw std::invalid_argument("chunked_linear_cross_entropy: chunk_rows < 1");
  return ChunkedLinearCrossEntropy::apply(h, weight, targets, chunk_rows, fused);
}

}  // namespace ftbench::model
