// RMSNorm, rotary embeddings, attention and the LoRA linear layer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include "device/torch/torch_version.h"
#if FTBENCH_TORCH_AT_LEAST(2, 5)
#include <ATen/SDPBackend.h>
#endif

#include "model/torch/cpu_fused.h"
#include "model/torch/fused_blocks.h"
#include "model/torch/lora_linear.h"
#include "model/torch/rms_norm.h"
#include "model/torch/rope.h"
#include "model/torch/sdpa.h"
#include "model/torch/selective_recompute.h"

namespace ftbench::model {
namespace {

at::Tensor expand_kv_heads(const at::Tensor& kv, int64_t n_heads) {
  const int64_t n_kv = kv.size(1);
  if (n_kv == n_heads) return kv;
  return kv.repeat_interleave(n_heads / n_kv, /*dim=*/1);
}

// Causal attention for CPU builds without a fused kernel (LibTorch before 2.2, whose math
// path computes the whole S x S score matrix with K/V heads repeated for GQA).
// - GQA without repeating K/V: the G query heads that share a K/V head are stacked along the
//   row dimension, so each batched GEMM is G times taller and K/V are never copied (nor their
//   gradients scattered back).
// - Query blocks: block i attends only to keys [0, end of block i), so scores above the
//   diagonal block are never computed, exponentiated or back-propagated.
// - Packed rows (`segment_ids` defined): block i also skips the keys before the start of the
//   example its first query belongs to (the earliest over the batch), and masks keys of other
//   examples with -inf.
// Few, large GEMMs matter on CPU: LibTorch runs a batched GEMM as one BLAS call per batch entry.
[[maybe_unused]] at::Tensor blocked_causal_attention(const at::Tensor& q, const at::Tensor& k,
                                                     const at::Tensor& v, int64_t n_blocks,
                                                     const at::Tensor& segment_ids) {
  const int64_t b = q.size(0);
  const int64_t h = q.size(1);
  const int64_t s = q.size(2);
  const int64_t d = q.size(3);
  const int64_t kv = k.size(1);
  const int64_t g = h / kv;
  const int64_t block = (s + n_blocks - 1) / n_blocks;
  const bool packed = segment_ids.defined();
  // [B, KV, G, S, D]: heads kv * g + j share K/V head kv (the repeat_interleave order).
  const at::Tensor qg = (q * (1.0 / std::sqrt(double(d)))).reshape({b, kv, g, s, d});
  std::vector<at::Tensor> outs;
  for (int64_t start = 0; start < s; start += block) {
    const int64_t len = std::min(block, s - start);
    const int64_t keys = start + len;
    // First key any query of the block can see: segments are contiguous, so the start of the
    // segment of query `start` is the number of tokens before it with a smaller id.
    const int64_t lo =
        packed && start > 0
            ? segment_ids.lt(segment_ids.narrow(1, start, 1)).sum(1).min().item<int64_t>()
            : 0;
    const at::Tensor qb = qg.narrow(3, start, len).reshape({b, kv, g * len, d});
    at::Tensor scores = at::matmul(qb, k.narrow(2, lo, keys - lo).transpose(-2, -1));
    // Row r of a block is query start + (r mod len); it sees keys 0 .. start + (r mod len).
    at::Tensor masked = at::ones({len, keys}, q.options().dtype(at::kBool))
                            .triu(start + 1)
                            .narrow(1, lo, keys - lo)
                            .repeat({g, 1});
    if (packed) {
      const at::Tensor other_example = segment_ids.narrow(1, start, len)
                                           .unsqueeze(2)
                                           .ne(segment_ids.narrow(1, lo, keys - lo).unsqueeze(1))
                                           .repeat({1, g, 1});  // [B, G * len, keys - lo]
      masked = masked.logical_or(other_example).unsqueeze(1);   // [B, 1, G * len, keys - lo]
    }
    scores.masked_fill_(masked, -std::numeric_limits<double>::infinity());
    outs.push_back(
        at::matmul(at::softmax(scores, -1), v.narrow(2, lo, keys - lo)).view({b, kv, g, len, d}));
  }
  const at::Tensor out = outs.size() == 1 ? outs.front() : at::cat(outs, 3);
  return out.reshape({b, h, s, d});
}

}  // namespace

at::Tensor packed_attention_mask(const at::Tensor& segment_ids) {
  const int64_t s = segment_ids.size(1);
  const at::Tensor causal =
      at::ones({s, s}, segment_ids.options().dtype(at::kBool)).tril();  // [S, S]
  return segment_ids.unsqueeze(2).eq(segment_ids.unsqueeze(1)).logical_and(causal).unsqueeze(1);
}

FusedSdpaPlan plan_fused_sdpa(bool masked, int64_t query_heads, int64_t kv_heads) {
  const bool gqa = kv_heads != query_heads;
  if (!gqa) return {false, false};
  // A mask with enable_gqa leaves only the math kernel (full S x S scores) on CUDA: repeat the
  // K/V heads so that the memory-efficient kernel, which takes a mask, can run.
  if (masked) return {true, false};
  return {false, true};
}

#if FTBENCH_TORCH_AT_LEAST(2, 5)
namespace {

// The op's own choice (at::_fused_sdp_choice), unmasked and causal: whether a fused kernel reads
// k and v's shared heads under enable_gqa, rather than the math kernel, which keeps the S x S
// probabilities for the backward.
bool fused_kernel_takes_gqa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  constexpr int64_t kMathBackend = 0;  // at::SDPBackend::math
  return at::_fused_sdp_choice(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
                               /*scale=*/std::nullopt, /*enable_gqa=*/true) != kMathBackend;
}

}  // namespace
#endif

at::Tensor fused_causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& segment_ids) {
  // Packed: the block-diagonal causal mask as a boolean attn_mask (true = attend), without
  // is_causal (the fused op refuses both at once). Without segments: is_causal, no mask.
#if FTBENCH_TORCH_AT_LEAST(2, 5)
  FusedSdpaPlan plan = plan_fused_sdpa(segment_ids.defined(), q.size(1), k.size(1));
  // Where no fused kernel reads shared K/V heads (LibTorch 2.6's CPU flash kernel does not), the
  // op would fall back to the math kernel, which keeps the S x S probabilities for the backward:
  // repeat the heads so that the fused kernel runs.
  if (plan.enable_gqa && !fused_kernel_takes_gqa(q, k, v)) plan = {true, false};
  const at::Tensor ke = plan.repeat_kv_heads ? expand_kv_heads(k, q.size(1)) : k;
  const at::Tensor ve = plan.repeat_kv_heads ? expand_kv_heads(v, q.size(1)) : v;
  if (segment_ids.defined()) {
    return at::scaled_dot_product_attention(q, ke, ve, packed_attention_mask(segment_ids),
                                            /*dropout_p=*/0.0, /*is_causal=*/false,
                                            /*scale=*/std::nullopt,
                                            /*enable_gqa=*/plan.enable_gqa);
  }
  return at::scaled_dot_product_attention(q, ke, ve, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true, /*scale=*/std::nullopt,
                                          /*enable_gqa=*/plan.enable_gqa);
#elif FTBENCH_TORCH_AT_LEAST(2, 0)
  const at::Tensor ke = expand_kv_heads(k, q.size(1));
  const at::Tensor ve = expand_kv_heads(v, q.size(1));
  if (segment_ids.defined()) {
    return at::scaled_dot_product_attention(q, ke, ve, packed_attention_mask(segment_ids), 0.0,
                                            false);
  }
  return at::scaled_dot_product_attention(q, ke, ve, {}, 0.0, true);
#else
  const at::Tensor ke = expand_kv_heads(k, q.size(1));
  const at::Tensor ve = expand_kv_heads(v, q.size(1));
  if (segment_ids.defined()) {
    return std::get<0>(at::_scaled_dot_product_attention(q, ke, ve,
                                                         packed_attention_mask(segment_ids), 0.0,
                                                         /*need_attn_weights=*/false,
                                                         /*is_causal=*/false));
  }
  return std::get<0>(at::_scaled_dot_product_attention(q, ke, ve, {}, 0.0,
                                                       /*need_attn_weights=*/false,
                                                       /*is_causal=*/true));
#endif
}

at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const at::Tensor& segment_ids) {
#if !FTBENCH_TORCH_AT_LEAST(2, 2)
  // Blocks of >= 64 queries: smaller GEMMs lose more to per-call overhead than they save.
  if (!q.is_cuda()) {
    return blocked_causal_attention(q, k, v, std::clamp<int64_t>(q.size(2) / 64, 1, 8),
                                    segment_ids);
  }
#endif
  return fused_causal_sdpa(q, k, v, segment_ids);
}

bool fused_sdpa_reads_shared_kv(const at::Device& device, at::ScalarType dtype, int64_t query_heads,
                                int64_t kv_heads, int64_t head_dim) {
  if (kv_heads == query_heads) return true;
#if FTBENCH_TORCH_AT_LEAST(2, 5)
  // One query and one key of the run's shape: the op's choice depends on the device, the dtype,
  // the head dimension and the heads, not on the sequence length.
  const at::TensorOptions options = at::TensorOptions().device(device).dtype(dtype);
  const at::Tensor q = at::zeros({1, query_heads, 1, head_dim}, options);
  const at::Tensor kv = at::zeros({1, kv_heads, 1, head_dim}, options);
  return fused_kernel_takes_gqa(q, kv, kv);
#else
  (void)device, (void)dtype, (void)head_dim;
  return false;
#endif
}

std::string attention_kernel_name(const at::Device& device, at::ScalarType dtype,
                                  int64_t query_heads, int64_t kv_heads, int64_t head_dim,
                                  bool packed) {
  if (blocked_attention_on(device)) return "blocked_math";
#if FTBENCH_TORCH_AT_LEAST(2, 5)
  // The call fused_causal_sdpa() makes, on a short sequence of the run's heads (the choice
  // depends on the device, the dtype, the heads, the head dimension and the mask, not on the
  // sequence length).
  constexpr int64_t kSeq = 16;
  const at::TensorOptions options = at::TensorOptions().device(device).dtype(dtype);
  const at::Tensor q = at::zeros({1, query_heads, kSeq, head_dim}, options);
  FusedSdpaPlan plan = plan_fused_sdpa(packed, query_heads, kv_heads);
  const at::Tensor kv = at::zeros({1, kv_heads, kSeq, head_dim}, options);
  if (plan.enable_gqa && !fused_kernel_takes_gqa(q, kv, kv)) plan = {true, false};
  const at::Tensor k = plan.repeat_kv_heads ? expand_kv_heads(kv, query_heads) : kv;
  // No mask for padded rows: an undefined tensor in the optional is taken for a mask (and
  // refused by LibTorch 2.15's shape check).
  const std::optional<at::Tensor> mask =
      packed ? std::optional<at::Tensor>(
                   packed_attention_mask(at::zeros({1, kSeq}, options.dtype(at::kLong))))
             : std::nullopt;
  const int64_t choice =
      at::_fused_sdp_choice(q, k, k, mask, /*dropout_p=*/0.0, /*is_causal=*/!packed,
                            /*scale=*/std::nullopt, /*enable_gqa=*/plan.enable_gqa);
  switch (static_cast<at::SDPBackend>(choice)) {
    case at::SDPBackend::math:
      return "math";
    case at::SDPBackend::flash_attention:
      return "flash_attention";
    case at::SDPBackend::efficient_attention:
      return "efficient_attention";
    case at::SDPBackend::cudnn_attention:
      return "cudnn_attention";
    case at::SDPBackend::overrideable:
      return "overrideable";
    default:
      return "unknown";
  }
#else
  // Before 2.5 the op's choice is not asked here (its signature differs from version to version).
  (void)dtype, (void)query_heads, (void)kv_heads, (void)head_dim, (void)packed;
  return "unknown";
#endif
}

bool blocked_attention_on(const at::Device& device) {
#if !FTBENCH_TORCH_AT_LEAST(2, 2)
  return device.is_cpu();
#else
  (void)device;
  return false;
#endif
}

at::Tensor causal_attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& segment_ids) {
  const int64_t s = q.size(2);
  const at::Tensor ke = expand_kv_heads(k, q.size(1));
  const at::Tensor ve = expand_kv_heads(v, q.size(1));
  at::Tensor scores = at::matmul(q, ke.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  const at::Tensor masked = segment_ids.defined()
                                ? packed_attention_mask(segment_ids).logical_not()
                                : at::ones({s, s}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(masked, -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1), ve);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, at::TensorOptions options) : eps_(eps) {
  weight = register_parameter("weight", at::ones({dim}, options), /*requires_grad=*/false);
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  if (fused_ && !weight.requires_grad()) return rms_norm_frozen(x, weight, eps_);
  if (fused_applies(x) && fused_applies(weight) && !weight.requires_grad()) {
    return fused_rms_norm(x, weight, eps_);
  }
  // In fp32 whatever the model dtype, as the reference Llama code does.
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight * normed.to(x.scalar_type());
}

at::Tensor rope_inverse_frequencies(int64_t head_dim, double theta,
                                    const std::optional<spec::RopeScaling>& scaling) {
  const int64_t half = head_dim / 2;
  at::Tensor inv = at::empty({half}, at::kDouble);
  double* p = inv.data_ptr<double>();
  for (int64_t i = 0; i < half; ++i) {
    double freq = 1.0 / std::pow(theta, double(2 * i) / double(head_dim));
    if (scaling) {
      const double old_len = double(scaling->original_max_position_embeddings);
      const double low_wavelen = old_len / scaling->low_freq_factor;
      const double high_wavelen = old_len / scaling->high_freq_factor;
      const double wavelen = 2.0 * M_PI / freq;
      if (wavelen > low_wavelen) {
        freq = freq / scaling->factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - scaling->low_freq_factor) /
                              (scaling->high_freq_factor - scaling->low_freq_factor);
        freq = (1.0 - smooth) * freq / scaling->factor + smooth * freq;
      }
    }
    p[i] = freq;
  }
  return inv;
}

RopeTables make_rope_tables(int64_t positions, int64_t head_dim, double theta,
                            const std::optional<spec::RopeScaling>& scaling,
                            at::TensorOptions options) {
  const at::Tensor inv = rope_inverse_frequencies(head_dim, theta, scaling).to(at::kFloat);
  const at::Tensor pos = at::arange(positions, at::kFloat);
  const at::Tensor angles = at::outer(pos, inv);  // [positions, head_dim / 2], fp32 as HF
  const at::Tensor full = at::cat({angles, angles}, -1);
  return {full.cos().to(options), full.sin().to(options)};
}

RopeTables gather_rope_tables(const RopeTables& tables, const at::Tensor& position_ids) {
  const at::Tensor flat = position_ids.reshape({-1});
  const int64_t b = position_ids.size(0);
  const int64_t s = position_ids.size(1);
  const int64_t d = tables.cos.size(1);
  return {tables.cos.index_select(0, flat).view({b, s, d}),
          tables.sin.index_select(0, flat).view({b, s, d})};
}

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables) {
  if (tables.cos.dim() == 2 && fused_applies(x) && fused_applies(tables.cos) &&
      fused_applies(tables.sin) && x.size(3) % 2 == 0) {
    return fused_rope(x, tables.cos, tables.sin);
  }
  const int64_t s = x.size(1);
  const int64_t half = x.size(3) / 2;
  const bool gathered = tables.cos.dim() == 3;  // [B, S, D] -> [B, S, 1, D]; else [S, 1, D]
  const at::Tensor cos =
      gathered ? tables.cos.unsqueeze(2) : tables.cos.narrow(0, 0, s).unsqueeze(1);
  const at::Tensor sin =
      gathered ? tables.sin.unsqueeze(2) : tables.sin.narrow(0, 0, s).unsqueeze(1);
  const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

LoraLinearImpl::LoraLinearImpl(int64_t in_features, std::vector<LinearSlice> slices,
                               at::TensorOptions options, bool allocate_weight)
    : in_features_(in_features), slices_(std::move(slices)) {
  for (const LinearSlice& s : slices_) out_sizes_.push_back(s.out_features);
  weight = register_parameter(
      "weight", allocate_weight ? at::empty(weight_sizes(), options) : at::empty({0}, options),
      /*requires_grad=*/false);
  for (const LinearSlice& s : slices_) {
    if (s.lora.rank > 0) {
      const at::TensorOptions lora_options = options.dtype(s.lora.dtype);
      lora_a.push_back(register_parameter("lora_a_" + s.name,
                                          at::empty({s.lora.rank, in_features}, lora_options)));
      lora_b.push_back(register_parameter("lora_b_" + s.name,
                                          at::zeros({s.out_features, s.lora.rank}, lora_options)));
      has_adapter_ = true;
    } else {
      lora_a.emplace_back();
      lora_b.emplace_back();
    }
  }
}

void LoraLinearImpl::init_random(double std) {
  {
    at::NoGradGuard no_grad;
    weight.normal_(0.0, std);
  }
  init_adapters();
}

void LoraLinearImpl::init_adapters() {
  at::NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(double(in_features_));
  for (size_t i = 0; i < slices_.size(); ++i) {
    if (!lora_a[i].defined()) continue;
    lora_a[i].uniform_(-bound, bound);
    lora_b[i].zero_();
  }
}

at::Tensor LoraLinearImpl::forward_packed(const at::Tensor& x) {
  // Selective checkpointing (selective_recompute.h): the first pass keeps the output and the
  // LoRA down-projection, the replay hands them back through one node.
  SelectiveCache* cache = active_selective_cache();
  if (cache != nullptr && cache->mode() == SelectiveCache::Mode::kReplay && !has_adapter_) {
    SelectiveEntry kept = cache->take();
    if (kept.graph_out.defined() || kept.a_all.defined()) {
      throw std::logic_error("selective recompute: a projection replayed out of order");
    }
    return replay_projection(x, weight, kept.out, {}, {}, {}, {}, at::kFloat, is_training());
  }
  if (!has_adapter_) {
    at::Tensor out = at::linear(x, weight);
    if (cache != nullptr) {
      SelectiveEntry kept;
      kept.out = out;
      cache->push(std::move(kept));
    }
    return out;
  }
  std::vector<LoraSliceRef> refs;
  std::vector<at::Tensor> a;
  std::vector<at::Tensor> b;
  int64_t out_offset = 0;
  int64_t rank_offset = 0;
  at::ScalarType adapter_dtype = at::kFloat;
  bool one_dtype = true;
  for (size_t i = 0; i < slices_.size(); ++i) {
    const LoraConfig& cfg = slices_[i].lora;
    if (lora_a[i].defined()) {
      if (!refs.empty() && cfg.dtype != adapter_dtype) one_dtype = false;
      adapter_dtype = cfg.dtype;
      refs.push_back(
          {out_offset, out_sizes_[i], rank_offset, cfg.rank, cfg.alpha / cfg.rank, cfg.dropout});
      a.push_back(lora_a[i]);
      b.push_back(lora_b[i]);
      rank_offset += cfg.rank;
    }
    out_offset += out_sizes_[i];
  }
  // addmm_ takes the scale as an fp32 scalar and refuses one fp32 cannot hold (a hostile
  // lora_alpha): the composite form then overflows to inf, which the caller reports. Slices of
  // different adapter dtypes (never from a spec: lora.dtype is one) take it too.
  bool scale_fits = true;
  for (const LoraSliceRef& r : refs) {
    scale_fits = scale_fits && std::abs(r.scale) <= std::numeric_limits<float>::max();
  }
  // (No cache point: the replay recomputes it.)
  if (!scale_fits || !one_dtype) return at::cat(forward_unfused(x), -1);
  if (cache != nullptr && cache->mode() == SelectiveCache::Mode::kReplay) {
    SelectiveEntry kept = cache->take();
    if (!kept.a_all.defined() || kept.graph_out.defined()) {
      throw std::logic_error("selective recompute: a projection replayed out of order");
    }
    return replay_projection(x, weight, kept.out, kept.a_all, a, b, refs, adapter_dtype,
                             is_training());
  }
  const at::Tensor a_all = lora_down(x, a, refs, adapter_dtype, is_training());
  at::Tensor packed = lora_up_(at::linear(x, weight), a_all, b, refs);
  if (cache != nullptr) {
    SelectiveEntry kept;
    kept.out = packed;
    kept.a_all = a_all;
    cache->push(std::move(kept));
  }
  return packed;
}

std::vector<at::Tensor> LoraLinearImpl::forward(const at::Tensor& x) {
  if (!fused_) return forward_unfused(x);
  const at::Tensor packed = forward_packed(x);
  if (slices_.size() == 1) return {packed};
  return packed.split_with_sizes(out_sizes_, -1);
}

std::vector<at::Tensor> LoraLinearImpl::forward_unfused(const at::Tensor& x) {
  const at::Tensor base = at::linear(x, weight);
  std::vector<at::Tensor> outs =
      slices_.size() == 1 ? std::vector<at::Tensor>{base} : base.split_with_sizes(out_sizes_, -1);
  if (!has_adapter_) return outs;
  for (size_t i = 0; i < slices_.size(); ++i) {
    if (!lora_a[i].defined()) continue;
    const LoraConfig& cfg = slices_[i].lora;
    at::Tensor h = x.scalar_type() == cfg.dtype ? x : x.to(cfg.dtype);
    if (cfg.dropout > 0.0 && is_training()) h = at::dropout(h, cfg.dropout, /*train=*/true);
    // addmm takes the scale as an fp32 scalar here and refuses one fp32 cannot hold (a
    // hostile lora_alpha): the composite form then overflows to inf, which the caller reports.
    const double scale = cfg.alpha / cfg.rank;
    if (fused_applies(outs[i]) && h.scalar_type() == outs[i].scalar_type() &&
        std::abs(scale) <= std::numeric_limits<float>::max()) {
      // One GEMM adds the scaled update into the base output (beta 1, alpha the scale): no
      // separate scale and add passes over [tokens x out], forward or backward.
      const std::vector<int64_t> sizes = outs[i].sizes().vec();
      const at::Tensor a = at::linear(h, lora_a[i]);
      outs[i] = at::addmm(outs[i].reshape({-1, sizes.back()}), a.reshape({-1, cfg.rank}),
                          lora_b[i].t(), /*beta=*/1, /*alpha=*/scale)
                    .view(sizes);
      continue;
    }
    at::Tensor delta = at::linear(at::linear(h, lora_a[i]), lora_b[i]) * (cfg.alpha / cfg.rank);
    if (delta.scalar_type() != outs[i].scalar_type()) delta = delta.to(outs[i].scalar_type());
    outs[i] = outs[i] + delta;
  }
  return outs;
}

std::vector<int64_t> LoraLinearImpl::weight_sizes() const {
  int64_t total_out = 0;
  for (int64_t out : out_sizes_) total_out += out;
  return {total_out, in_features_};
}

at::Tensor LoraLinearImpl::forward_one(const at::Tensor& x) { return forward(x).front(); }

at::Tensor LoraLinearImpl::merged_slice(size_t slice) const {
  at::NoGradGuard no_grad;
  int64_t first_row = 0;
  for (size_t i = 0; i < slice; ++i) first_row += out_sizes_[i];
  const at::Tensor part = weight.narrow(0, first_row, out_sizes_[slice]);
  if (!lora_a[slice].defined()) return part;
  const LoraConfig& cfg = slices_[slice].lora;
  const at::Tensor delta = at::matmul(lora_b[slice].to(at::kFloat), lora_a[slice].to(at::kFloat)) *
                           (cfg.alpha / cfg.rank);
  return (part.to(at::kFloat) + delta).to(weight.scalar_type());
}

at::Tensor LoraLinearImpl::merged_weight() const {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < slices_.size(); ++i) parts.push_back(merged_slice(i));
  return at::cat(parts, 0);
}

}  // namespace ftbench::model
