#include "economics/plan/memory.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "model/shape_math.h"
#include "spec/choices.h"
#include "util/text/units.h"

namespace ftbench::plan {
namespace {

double dtype_bytes(const std::string& dtype) { return dtype == spec::choice::dtype::kFp32 ? 4 : 2; }

bool has(const spec::LoraSpec& lora, const char* name) {
  return std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
}

// The model's shapes and the element sizes, as the terms below use them.
struct Shape {
  double d = 0, kvd = 0, f = 0, v = 0, heads = 0, kv_heads = 0, head_dim = 0, rank = 0;
  double e = 4;   // base weights and activations
  double el = 4;  // adapters
  double layers = 0;
  bool dropout = false;
};

// Bytes per token one fused linear's adapters keep: each adapted slice its input (shared by the
// slices when it needs no conversion or dropout; a copy per slice otherwise) and its rank-r
// intermediate; dropout on the CPU also keeps its mask in the input's dtype, on a GPU a byte.
double adapter_saves(const Shape& s, int adapted_slices, double in_dim, bool input_grad, bool gpu) {
  if (adapted_slices == 0) return 0.0;
  double bytes = adapted_slices * s.rank * s.el;
  if (s.dropout) {
    bytes += adapted_slices * in_dim * s.el;  // the dropped input, kept by A
    if (input_grad) bytes += adapted_slices * in_dim * (gpu ? 1.0 : s.el);  // the mask
  } else if (s.el != s.e) {
    bytes += adapted_slices * in_dim * s.el;  // the input converted to the adapters' dtype
  } else {
    bytes += in_dim * s.e;  // the input itself, shared
  }
  return bytes;
}

// Sum over query blocks of the keys each block sees (ftbench's blocked CPU attention: blocks of
// ceil(S / n) queries, n = clamp(S / 64, 1, 8); block i sees keys [0, end of block i)).
struct Blocks {
  double block = 0;    // queries per block
  double key_sum = 0;  // sum over blocks of the keys seen
  double last_keys = 0;
};
Blocks blocks_of(int64_t seq) {
  const int64_t n = std::clamp<int64_t>(seq / 64, 1, 8);
  const int64_t block = (seq + n - 1) / n;
  Blocks b;
  b.block = static_cast<double>(block);
  for (int64_t start = 0; start < seq; start += block) {
    b.key_sum += static_cast<double>(std::min(start + block, seq));
  }
  b.last_keys = static_cast<double>(seq);
  return b;
}

}  // namespace

std::string to_string(AttentionKernel kernel) {
  return std::string(text::spelling_of(kAttentionKernelSpellings, kernel));
}

namespace {

// What the terms below read from the spec and the options.
struct Job {
  Shape s;
  model::ParamCounts counts;
  int64_t seq = 0;
  double t = 0;   // tokens per micro-batch
  double nl = 0;  // tokens with a label per micro-batch
  bool packed = false;
  // model.activation_checkpointing as planned: full, selective or none.
  std::string checkpointing = spec::choice::checkpointing::kNone;
  bool tq = false, tk = false, tv = false, to = false, tg = false, tu = false, td = false;
  bool layers_adapted = false;
  bool head_adapted = false;
};

Job job_of(const spec::RunSpec& spec, const MemoryOptions& o) {
  const spec::ModelSpec& m = spec.model;
  const spec::LoraSpec& lora = spec.lora;
  Job j;
  Shape& s = j.s;
  s.d = static_cast<double>(m.dim);
  s.heads = static_cast<double>(m.n_heads);
  s.kv_heads = static_cast<double>(m.n_kv_heads);
  s.head_dim = s.d / s.heads;
  s.kvd = s.kv_heads * s.head_dim;
  s.f = static_cast<double>(m.ffn_dim);
  s.v = static_cast<double>(m.vocab_size);
  s.rank = static_cast<double>(lora.rank);
  s.layers = static_cast<double>(m.n_layers);
  s.e = dtype_bytes(m.dtype);
  s.el = lora.dtype == spec::choice::dtype::kBase ? s.e : dtype_bytes(lora.dtype);
  s.dropout = lora.dropout > 0.0;
  j.counts = model::count_parameters(m, lora);
  j.checkpointing = o.activation_checkpointing.value_or(m.activation_checkpointing);
  if (j.checkpointing == spec::choice::checkpointing::kAuto) {
    throw std::invalid_argument(
        "estimate_memory: model.activation_checkpointing auto is planned policy by policy "
        "(economics/plan/activation_checkpointing.h)");
  }
  const int64_t micro_batch =
      o.micro_batch_size > 0 ? o.micro_batch_size : spec.train.micro_batch_size;
  j.seq = spec.data.seq_len;
  j.packed = spec.data.padding == "pack";
  j.t = static_cast<double>(micro_batch) * static_cast<double>(j.seq);
  // Tokens with a label: the loss skips the prompt unless train_on_input; synthetic examples
  // are prompt_fraction prompt. A data file's share is not known before it is read: all of them.
  const bool synthetic = spec.data.source == "synthetic";
  const double loss_share = spec.data.train_on_input || !synthetic
                                ? 1.0
                                : std::clamp(1.0 - spec.data.prompt_fraction, 0.0, 1.0);
  j.nl = std::ceil(j.t * loss_share);
  j.tq = has(lora, "q");
  j.tk = has(lora, "k");
  j.tv = has(lora, "v");
  j.to = has(lora, "o");
  j.tg = has(lora, "gate");
  j.tu = has(lora, "up");
  j.td = has(lora, "down");
  j.layers_adapted = j.tq || j.tk || j.tv || j.to || j.tg || j.tu || j.td;
  j.head_adapted = has(lora, "output");
  return j;
}

// Held through the step: weights, tables, adapters and their state, micro-batches.
void add_held(MemoryEstimate& out, const Job& j, const MemoryOptions& o) {
  const Shape& s = j.s;
  const double ranks = static_cast<double>(std::max<int64_t>(1, o.shard_ranks));
  double base_bytes = static_cast<double>(j.counts.base) * s.e;
  std::string base_basis = fmt::format("{} parameters x {} bytes", j.counts.base, s.e);
  if (ranks > 1) {
    // A 1/N share of every unit, and two units whole at a time (the one computing, the next).
    const double block = static_cast<double>(j.counts.block_matmul) / s.layers * s.e;
    const double largest = std::max(block, static_cast<double>(j.counts.embedding) * s.e);
    base_bytes = base_bytes / ranks + 2.0 * largest;
    base_basis += fmt::format(" / {} ranks, + 2 whole units of {:.0f} bytes", ranks, largest);
  }
  out.held.push_back({"base weights (frozen)", base_bytes, base_basis});
  out.held.push_back(
      {"rotary tables", 2.0 * static_cast<double>(j.seq) * s.head_dim * s.e,
       fmt::format("cos and sin, {} positions x {} x {} bytes", j.seq, s.head_dim, s.e)});
  const double lora_bytes = static_cast<double>(j.counts.lora) * s.el;
  out.held.push_back(
      {"adapters", lora_bytes, fmt::format("{} parameters x {} bytes", j.counts.lora, s.el)});
  out.held.push_back({"adapter gradients", lora_bytes, "one per adapter parameter"});
  out.held.push_back(
      {"AdamW moments", 2.0 * lora_bytes, "exp_avg and exp_avg_sq per adapter parameter"});
  const double batch_bytes = (2.0 * j.t + j.nl + (j.packed ? 2.0 * j.t : 0.0)) * 8.0;
  out.held.push_back(
      {"micro-batches", batch_bytes * static_cast<double>(1 + o.prefetched_batches),
       fmt::format("ids, labels{}, loss positions in int64; {} in use + {} prefetched",
                   j.packed ? ", positions, segments" : "", 1, o.prefetched_batches)});
}

// Per token, one layer.
struct LayerBytes {
  double saved = 0;          // kept for the backward
  double mlp_transient = 0;  // alive at once during the MLP's forward, beyond `saved`
};

// Fused attention with GQA: whether the K/V heads are repeated to every query head. A mask rules
// out the GQA kernels; some devices have none.
std::optional<bool> kv_heads_repeated(const Job& j, const MemoryOptions& o) {
  if (o.attention != AttentionKernel::kFused || j.s.kv_heads == j.s.heads) return std::nullopt;
  return j.packed || !o.kernel_reads_shared_kv;
}

// Attention's inputs and outputs kept for its backward, per token; qg, kg: whether q and k
// carry a gradient.
double attention_saves(const Job& j, const MemoryOptions& o, bool qg, bool kg) {
  const Shape& s = j.s;
  double k = 0;
  if (o.attention == AttentionKernel::kFused) {
    const bool repeat = kv_heads_repeated(j, o).value_or(false);
    const double kv_each = repeat ? s.d : s.kvd;
    k += s.d * s.e + 2 * kv_each * s.e;  // q, k, v after the rotary embedding
    // An unadapted v is a view of the q/k/v projection's output and keeps all of it.
    if (!j.tv && !repeat) k += (s.d + s.kvd) * s.e;
    k += s.d * s.e + 4 * s.heads;                         // the output and its log-sum-exp (fp32)
    if (j.packed) k += static_cast<double>(j.seq) * s.e;  // [B, 1, S, S] additive mask
    return k;
  }
  const Blocks blk = blocks_of(j.seq);
  const double keys_per_query = blk.key_sum / static_cast<double>(j.seq);
  if (kg) k += s.d * s.e;                                                // q, block by block
  if (qg) k += keys_per_query * s.kvd * s.e;                             // k, per block
  k += keys_per_query * s.kvd * s.e;                                     // v, per block
  k += s.heads * blk.block * keys_per_query * s.e;                       // softmax probabilities
  const double mask = (s.heads / s.kv_heads) * blk.block * blk.key_sum;  // bool, per block
  if (qg || kg) k += j.packed ? mask / static_cast<double>(j.seq) : mask / j.t;
  return k;
}

// The fused blocks' LoRA (model/torch/fused_blocks.h) per token: the projection's input once in the
// base dtype (the cast to the adapters' dtype is recomputed in the backward), a 1-byte mask per
// slice that drops out, and the slices' rank-r outputs.
double fused_adapter_saves(const Shape& s, int adapted_slices, double in_dim) {
  if (adapted_slices == 0) return 0.0;
  double bytes = in_dim * s.e + adapted_slices * s.rank * s.el;
  if (s.dropout) bytes += adapted_slices * in_dim;
  return bytes;
}

// Attention's saved tensors under the fused blocks: q and k after the rotary embedding are new
// tensors, v a view of the q/k/v projection's output, which it keeps whole; repeated K/V heads
// are copies, and the projection's output goes.
double fused_attention_saves(const Job& j, const MemoryOptions& o, bool qg, bool kg) {
  if (o.attention != AttentionKernel::kFused) return attention_saves(j, o, qg, kg);
  const Shape& s = j.s;
  double k = s.d * s.e;  // q
  if (kv_heads_repeated(j, o).value_or(false)) {
    k += 2 * s.d * s.e;  // k and v repeated to every query head
  } else {
    k += s.kvd * s.e + (s.d + 2 * s.kvd) * s.e;  // k, and the projection's output v views
  }
  k += s.d * s.e + 4 * s.heads;                         // the output and its log-sum-exp (fp32)
  if (j.packed) k += static_cast<double>(j.seq) * s.e;  // [B, 1, S, S] mask
  return k;
}

LayerBytes layer_bytes_fused(const Job& j, const MemoryOptions& o, bool gx) {
  const Shape& s = j.s;
  LayerBytes l;
  double& k = l.saved;
  // The CPU's one-pass kernels (fp32 on a CPU): RMSNorm keeps its fp32 input, SwiGLU the sigmoid.
  const bool cpu_kernels = !o.gpu && s.e == 4;
  const double norm = o.rms_norm_kernel
                          ? s.d * s.e + 4
                          : 4 * s.d + 4 + (o.libtorch_1 && !cpu_kernels ? 4 * s.d : 0.0);
  if (gx) k += norm;
  k += fused_adapter_saves(s, int(j.tq) + int(j.tk) + int(j.tv), s.d);
  const bool qg = gx || j.tq, kg = gx || j.tk, vg = gx || j.tv;
  const bool attn_grad = qg || kg || vg;
  if (attn_grad) k += fused_attention_saves(j, o, qg, kg);
  k += fused_adapter_saves(s, int(j.to), s.d);
  // o's input is the fused kernel's output, which attention keeps.
  if (j.to && o.attention == AttentionKernel::kFused && attn_grad) k -= s.d * s.e;
  const bool hg = attn_grad || j.to;
  if (hg) k += norm;  // the MLP's RMSNorm
  k += fused_adapter_saves(s, int(j.tg) + int(j.tu), s.d);
  const bool mlp_grad = hg || j.tg || j.tu;
  // SwiGLU keeps the gate/up projection's output [gate | up] (and the CPU kernel its sigmoid).
  if (mlp_grad) k += 2 * s.f * s.e + (cpu_kernels ? 4 * s.f : 0.0);
  k += fused_adapter_saves(s, int(j.td), s.f);
  // The MLP's forward: silu(gate) * up and the down projection's output; with an adapted down,
  // its input cast to the adapters' dtype, the rank-r output and an update of the adapters' dtype.
  l.mlp_transient = s.f * s.e + s.d * s.e;
  if (j.td) {
    l.mlp_transient += s.rank * s.el;
    if (s.el != s.e) l.mlp_transient += s.f * s.el + s.d * s.el;
  }
  return l;
}

// `gx`: the layer's input carries a gradient (an adapter below it).
LayerBytes layer_bytes(const Job& j, const MemoryOptions& o, bool gx) {
  if (o.fused_blocks) return layer_bytes_fused(j, o, gx);
  const Shape& s = j.s;
  LayerBytes l;
  double& k = l.saved;
  // RMSNorm: its input in fp32 and 1/rms; on LibTorch 1.x one more [T, dim] fp32 tensor
  // (measured with the CPU counter, see methodology).
  const double norm = 4 * s.d + 4 + (o.libtorch_1 ? 4 * s.d : 0.0);
  if (gx) k += norm;
  k += adapter_saves(s, int(j.tq) + int(j.tk) + int(j.tv), s.d, gx, o.gpu);
  const bool qg = gx || j.tq, kg = gx || j.tk, vg = gx || j.tv;
  const bool attn_grad = qg || kg || vg;
  if (attn_grad) k += attention_saves(j, o, qg, kg);
  k += adapter_saves(s, int(j.to), s.d, attn_grad, o.gpu);
  // The o input shares the fused kernel's output when no conversion or dropout copies it.
  if (j.to && o.attention == AttentionKernel::kFused && attn_grad && !s.dropout && s.el == s.e) {
    k -= s.d * s.e;
  }
  const bool hg = attn_grad || j.to;
  if (hg) k += norm;  // the MLP's RMSNorm
  k += adapter_saves(s, int(j.tg) + int(j.tu), s.d, hg, o.gpu);
  const bool gate_grad = hg || j.tg, up_grad = hg || j.tu;
  // silu keeps the gate, the product keeps silu(gate) and up; an unadapted gate or up is a
  // view of the gate/up projection's output and keeps all of it.
  if (gate_grad && (!j.tg || !j.tu)) k += 2 * s.f * s.e;
  if (gate_grad && j.tg) k += s.f * s.e;
  if (gate_grad && j.tu) k += s.f * s.e;
  if (up_grad) k += s.f * s.e;
  k += adapter_saves(s, int(j.td), s.f, gate_grad || up_grad, o.gpu);
  // The MLP's forward: the product silu(gate) * up and the down projection's output, with
  // contiguous copies when gate and up are strided views of one projection.
  l.mlp_transient = s.f * s.e + s.d * s.e;
  if (!j.tg || !j.tu) l.mlp_transient += 2 * s.f * s.e;
  if (j.td) l.mlp_transient += s.rank * s.el + 2 * s.d * s.el;
  return l;
}

// Selective checkpointing (model/torch/selective_recompute.h) per token and layer: each
// projection's output in the model dtype and its LoRA down-projection ([tokens, sum(rank)] in the
// adapters' dtype), and attention's graph from the first pass (the fused kernel's q and k after the
// rotary embedding, v a view of the kept q/k/v output unless repeated, the output and its
// log-sum-exp; the blocked CPU attention's own saved tensors).
double selective_kept(const Job& j, const MemoryOptions& o) {
  const Shape& s = j.s;
  // (The down projection's output is not kept: the replay needs its shape, not its values.)
  double k = (s.d + 2 * s.kvd) * s.e + s.d * s.e + 2 * s.f * s.e;
  const int adapted =
      int(j.tq) + int(j.tk) + int(j.tv) + int(j.to) + int(j.tg) + int(j.tu) + int(j.td);
  k += adapted * s.rank * s.el;
  if (o.attention == AttentionKernel::kFused) {
    k += fused_attention_saves(j, o, true, true);
    if (!kv_heads_repeated(j, o).value_or(false)) k -= (s.d + 2 * s.kvd) * s.e;  // v: a view
  } else {
    k += attention_saves(j, o, true, true);
  }
  return k;
}

// What the replay of one layer under selective checkpointing saves for its backward, per token,
// beyond what the forward kept: the two norms' inputs, each adapted projection's input (the
// replay node keeps it for the LoRA gradients; o's is attention's kept output) and 1-byte dropout
// masks. The LoRA down-projections are the kept ones.
double replay_saved(const Job& j, const MemoryOptions& o) {
  const Shape& s = j.s;
  const bool cpu_kernels = !o.gpu && s.e == 4;
  const double norm = o.rms_norm_kernel
                          ? s.d * s.e + 4
                          : 4 * s.d + 4 + (o.libtorch_1 && !cpu_kernels ? 4 * s.d : 0.0);
  const auto inputs = [&](int adapted, double in_dim) {
    return adapted == 0 ? 0.0 : fused_adapter_saves(s, adapted, in_dim) - adapted * s.rank * s.el;
  };
  double k = 2 * norm;
  k += inputs(int(j.tq) + int(j.tk) + int(j.tv), s.d);
  if (j.to) k += inputs(1, s.d) - s.d * s.e;
  k += inputs(int(j.tg) + int(j.tu), s.d);
  k += inputs(int(j.td), s.f);
  return k;
}

struct Candidate {
  double extra;
  std::string where;
  std::string basis;
};

// Kept from the forward for the backward; returns the short-lived sets the peak may fall on.
std::vector<Candidate> add_activations(MemoryEstimate& out, const Job& j, const MemoryOptions& o) {
  const Shape& s = j.s;
  const LayerBytes first = layer_bytes(j, o, false);
  const LayerBytes rest = layer_bytes(j, o, j.layers_adapted);
  const double t = j.t;
  const bool recompute = j.checkpointing != spec::choice::checkpointing::kNone && j.layers_adapted;
  const bool selective = recompute && j.checkpointing == spec::choice::checkpointing::kSelective;
  if (recompute) {
    out.activations.push_back(
        {"layer inputs (activation checkpointing)", s.layers * t * s.d * s.e,
         fmt::format("{} layers x {} tokens x {} x {} bytes", s.layers, t, s.d, s.e)});
  }
  if (selective) {
    const double kept = selective_kept(j, o);
    out.activations.push_back(
        {"GEMM and attention outputs (selective checkpointing)", s.layers * t * kept,
         fmt::format("{} layers x {} tokens x {:.0f} bytes: the projections' outputs and LoRA "
                     "down-projections, attention's kept graph",
                     s.layers, t, kept)});
  } else if (!recompute) {
    out.activations.push_back(
        {"activations kept for backward", (first.saved + (s.layers - 1) * rest.saved) * t,
         fmt::format("{:.0f} bytes per token in the first layer, {:.0f} in each of the other {}; "
                     "{} tokens",
                     first.saved, rest.saved, s.layers - 1, t)});
  }
  const double final_norm = j.layers_adapted ? (4 * s.d + 4) * t : 0.0;
  out.activations.push_back({"final norm", final_norm, "its fp32 input and 1/rms"});
  const double nl = j.nl;
  // The chunked loss's rows per chunk (model/torch/chunked_loss.h: 256 MiB of fp32 logits, a
  // multiple of 256 rows above 256).
  double chunk = std::max(1.0, std::floor((256.0 * 1024 * 1024) / (s.v * 4)));
  if (chunk > 256) chunk -= std::fmod(chunk, 256.0);
  const double rows = j.head_adapted ? nl : std::min(nl, chunk);
  double loss_kept = 0.0;
  double loss_transient = 0.0;
  if (j.head_adapted) {
    // The head's logits are kept whole for its adapters (fp32 for the loss).
    loss_kept = nl * (s.v * s.e + s.v * 4 + s.d * s.e) + adapter_saves(s, 1, s.d, true, o.gpu) * nl;
    loss_transient = nl * s.v * 4 * 2;
  } else {
    loss_kept = nl * s.d * s.e;  // d loss / d h, computed in the forward (chunked loss)
    if (o.fused_blocks) {
      // A chunk's logits in the model dtype, their fp32 copy (not on a GPU, whose log-softmax
      // reads them as they are; none for fp32) and the fp32 log-probabilities; the rows with a
      // label.
      const double copy = o.gpu || s.e == 4 ? 0.0 : 4.0;
      loss_transient = rows * s.v * (s.e + copy + 4) + nl * s.d * s.e;
    } else {
      // A chunk's fp32 logits and logsumexp's shifted copy, and the rows with a label.
      loss_transient = rows * s.v * 8 + nl * s.d * s.e;
    }
  }
  out.activations.push_back({"loss", loss_kept,
                             j.head_adapted ? "whole logits for the adapted head"
                                            : "d loss / d h of the chunked cross-entropy"});
  std::vector<Candidate> candidates;
  if (recompute && !o.fused_blocks) {
    // The backward recomputes one layer at a time: its activations and its forward's peak, with
    // the gradient arriving at its output and the one leaving its input; the loss's and the
    // final norm's saved tensors were freed when their backward ran, before.
    candidates.push_back(
        {(rest.saved + rest.mlp_transient + 2 * s.d * s.e) * t - loss_kept - final_norm,
         "backward, a layer recomputed", "one layer's activations and its forward's temporaries"});
  } else if (recompute) {
    // Under the fused blocks the peak is SwiGLU's backward in the layer recomputed (full) or
    // replayed (selective): that layer's saved tensors but the down projection's (its node has
    // run), the gradient at the layer's output [t, dim] and SwiGLU's [t, ffn], the packed gate/up
    // gradient [t, 2 ffn] and, but for the CPU's one-pass kernel (fp32 on a CPU), two [t, ffn]
    // temporaries (silu(gate) again, the gradient times up). The loss's and the final norm's
    // saved tensors were freed before.
    const bool cpu_kernels = !o.gpu && s.e == 4;
    const double layer = selective ? replay_saved(j, o) : rest.saved;
    const double down = fused_adapter_saves(s, int(j.td), s.f) - (selective ? s.rank * s.el : 0.0);
    const double swiglu = 3 * s.f * s.e + (cpu_kernels ? 0.0 : 2 * s.f * s.e);
    const char* where =
        selective ? "backward, a layer replayed (selective)" : "backward, a layer recomputed";
    candidates.push_back(
        {(layer - (j.td ? down : 0.0) + s.d * s.e + swiglu) * t - loss_kept - final_norm, where,
         "one layer's saved tensors and SwiGLU's backward"});
    if (j.td) {
      // An adapted down projection's backward, just before: every saved tensor of the layer, the
      // gradient at its output, the input's gradient from the frozen GEMM [t, ffn] and the LoRA
      // down node's [t, ffn] temporaries of the adapters' dtype: the input cast again (none when
      // the dtypes agree), then with dropout the input masked and scaled, else its LoRA gradient.
      const double lora_temps =
          (s.dropout ? 2.0 : 1.0) * s.f * s.el + (s.el != s.e ? s.f * s.el : 0.0);
      candidates.push_back(
          {(layer + s.d * s.e + s.f * s.e + lora_temps) * t - loss_kept - final_norm, where,
           "one layer's saved tensors and the down projection's backward"});
    }
  } else {
    const double last = (j.layers_adapted ? rest : first).mlp_transient * t;
    candidates.push_back({last - final_norm - loss_kept, "forward, last layer's MLP",
                          "silu(gate) * up and the down projection's output"});
  }
  candidates.push_back({std::max(0.0, loss_transient), "loss",
                        fmt::format("{:.0f} rows of fp32 logits and their shifted copy", rows)});
  return candidates;
}

}  // namespace

MemoryEstimate estimate_memory(const spec::RunSpec& spec, const MemoryOptions& o) {
  const Job j = job_of(spec, o);
  MemoryEstimate out;
  out.tokens = static_cast<int64_t>(j.t);
  out.loss_tokens = static_cast<int64_t>(j.nl);
  out.kv_heads_repeated = kv_heads_repeated(j, o);
  add_held(out, j, o);
  const std::vector<Candidate> candidates = add_activations(out, j, o);
  for (const MemoryItem& item : out.held) out.held_bytes += item.bytes;
  for (const MemoryItem& item : out.activations) out.activation_bytes += item.bytes;
  // The peak: the largest short-lived set on top of what is kept by then.
  const auto top =
      std::max_element(candidates.begin(), candidates.end(),
                       [](const Candidate& a, const Candidate& c) { return a.extra < c.extra; });
  out.transient = {"temporaries at the peak", std::max(0.0, top->extra), top->basis};
  out.peak_at = top->where;
  out.peak_bytes = out.held_bytes + out.activation_bytes + out.transient.bytes;
  return out;
}

DeviceOverheads default_gpu_overheads() {
  DeviceOverheads o;
  o.context_bytes = 0.5e9;
  o.workspace_bytes = 0.1e9;
  o.fragmentation = 0.10;
  return o;
}

double device_bytes_needed(const MemoryEstimate& estimate, const DeviceOverheads& overheads) {
  return estimate.peak_bytes * (1.0 + overheads.fragmentation) + overheads.context_bytes +
         overheads.workspace_bytes;
}

}  // namespace ftbench::plan
