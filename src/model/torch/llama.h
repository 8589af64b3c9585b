// Llama-style decoder with LoRA adapters: RMSNorm, RoPE (Llama 3.1 scaling), grouped-query
// causal attention, SwiGLU MLP, tied or untied embeddings, optional activation checkpointing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "model/base_gathers.h"
#include "model/torch/base_units.h"
#include "model/torch/lora_linear.h"
#include "model/torch/rms_norm.h"
#include "model/torch/rope.h"
#include "spec/run_spec.h"

namespace ftbench::model {

// What a checkpointed decoder layer recomputes in the backward (model.activation_checkpointing).
enum class Recompute {
  kNone,       // nothing: the forward's graph is kept
  kFull,       // the whole layer, from its input
  kSelective,  // the elementwise work; the GEMM and attention outputs are kept
};
// full, selective or none (spec/choices.h); throws std::invalid_argument for anything else,
// auto included (a run resolves it first: economics/plan/activation_checkpointing.h).
Recompute recompute_of(const std::string& policy);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  // `allocate_base`: false leaves the four linear weights as placeholders for a split base
  // (LoraLinearImpl); the norms are allocated either way.
  DecoderLayerImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora, at::TensorOptions options,
                   bool allocate_base = true);
  // x: [B, S, dim] -> [B, S, dim]. `segment_ids` ([B, S], optional): packed rows, attention
  // kept inside each segment (sdpa.h); `rope` then holds tables gathered at the position ids.
  at::Tensor forward(const at::Tensor& x, const RopeTables& rope,
                     const at::Tensor& segment_ids = {});
  // The composite form forward() replaced (the tests' oracle): split views of the fused
  // projections, rope.h's apply_rope, SwiGLU as silu and a product (the CPU's one-pass kernels
  // where they apply), LoraLinear::forward_unfused.
  at::Tensor forward_unfused(const at::Tensor& x, const RopeTables& rope,
                             const at::Tensor& segment_ids = {});
  // On (the default): fused_blocks.h's nodes; off: forward_unfused() and the composite norms and
  // LoRA layers.
  void set_fused(bool fused);
  void init_random(double std);
  void init_adapters();
  bool has_adapter() const;

  RMSNorm attn_norm{nullptr};
  LoraLinear qkv{nullptr};  // fused q, k, v
  LoraLinear o{nullptr};
  RMSNorm mlp_norm{nullptr};
  LoraLinear gate_up{nullptr};  // fused gate, up
  LoraLinear down{nullptr};

 private:
  int64_t n_heads_;
  int64_t n_kv_heads_;
  int64_t head_dim_;
  bool fused_ = true;
  bool gpu_kernels_ = false;
  friend class LlamaImpl;
};
TORCH_MODULE(DecoderLayer);

// The passes over a model whose frozen base is split across ranks, each gathering its units in
// an order every rank follows (gather_order()).
enum class GatherPass {
  kForward,       // loss_sum() or forward() without gradients (evaluation, logits)
  kTraining,      // loss_sum() with gradients and the backward pass after it
  kMergedExport,  // the units in the order a merged Hugging Face export writes them
};

class LlamaImpl : public torch::nn::Module {
 public:
  // Allocates every weight (uninitialised) on `device` in the spec's dtype; rotary tables
  // cover `max_positions` (the data's sequence length, not the preset's full context).
  // `shard_ranks` >= 1 lays the frozen base out in units for a split across that many ranks
  // instead (base_units()), without memory: init_random() or hf::load_hf_weights() fill it unit
  // by unit, so that the whole base is never held at once. Norms and adapters are allocated
  // either way.
  LlamaImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora, int64_t max_positions,
            at::Device device, int64_t shard_ranks = 0);

  // input_ids: [B, S] int64 -> logits [B, S, vocab] in the model dtype.
  // Packed rows (data::Padding::kPack) pass `position_ids` and `segment_ids` ([B, S] int64,
  // both or neither): rotary positions come from position_ids (restarting at every example)
  // and attention is block-diagonal causal over segment_ids. Without them: positions 0..S-1,
  // plain causal attention (the unpacked path, unchanged).
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& position_ids = {},
                     const at::Tensor& segment_ids = {});
  // Sum of token cross-entropy (fp32) over labels != -100; labels [B, S] already shifted.
  // With `loss_positions` (flat indices into B * S of the positions that carry a label), the
  // LM head and the cross-entropy run on those rows only: prompt and padding positions cost no
  // vocabulary projection, which saves time and the largest activation of the step.
  // `position_ids` and `segment_ids` as in forward().
  at::Tensor loss_sum(const at::Tensor& input_ids, const at::Tensor& labels,
                      const at::Tensor& loss_positions = {}, const at::Tensor& position_ids = {},
                      const at::Tensor& segment_ids = {});

  // Random initialisation: N(0, 0.02) for weights, ones for norms, adapters as LoRA wants.
  // Seeded by the caller through the global generator. A split base: each unit is given memory,
  // initialised, then handed to `filled` (which keeps a rank's slice and frees it), in
  // init_order(); the generator draws the same numbers as for a whole base.
  void init_random(const std::function<void(int64_t unit)>& filled = {});
  // The adapters only, as init_random() makes them, for base weights copied in from a
  // checkpoint (model/hf/torch/hf_load.h).
  // DecoderLayerImpl::set_fused for every layer, the final norm and the head alike, and the
  // loss's chunks (chunked_loss.h); off is the step as it was before the fused blocks
  // (FTBENCH_FUSED_BLOCKS=0, a benchmark aid: docs/benchmarks.md).
  void set_fused(bool fused);
  bool fused() const { return fused_; }
  // ftbench's own GPU kernels (gpu_kernels.h) where they apply, in every layer: off by default
  // (FTBENCH_GPU_KERNELS=1), as none has yet run and matched its oracle on a GPU.
  void set_gpu_kernels(bool on);
  bool gpu_kernels() const { return gpu_kernels_; }
  void init_adapters();

  // Freezes everything but the adapters; returns the trainable parameters in a fixed order.
  std::vector<at::Tensor> trainable_parameters();
  // The same, with their module paths ("layers.0.attention.q.lora_a"), the names checkpoints
  // use.
  std::vector<std::pair<std::string, at::Tensor>> trainable_named_parameters();
  void set_recompute(Recompute recompute) { recompute_ = recompute; }
  Recompute recompute() const { return recompute_; }

  // A split base (shard_ranks >= 1): the units, 0 the embedding, 1 + i block i, then the output
  // head unless it is tied to the embedding (then head_unit() is 0). Empty for a whole base.
  std::vector<BaseUnit>& base_units() { return units_; }
  int64_t head_unit() const;
  // The unit that holds `weight` (one of the module's own tensors); -1 for one in no unit (a
  // norm, an adapter, or any tensor of a whole base).
  int64_t unit_of(const at::Tensor& weight) const;
  // Whether the output head has a LoRA adapter (lora.targets names `output`).
  bool head_adapted() const;
  // A merged export writes lm_head.weight apart from the embedding: untied, or tied with an
  // adapter on the head (merging into the shared tensor would change the input embedding too).
  bool merged_head_apart() const;
  // The units in the order init_random() draws their values.
  std::vector<int64_t> init_order() const;
  // The units `pass` gathers, in order: a block twice in training when it has adapters (forward,
  // and backward: recomputed with activation checkpointing, else its saved graph run), the head
  // twice when it has one; once otherwise.
  std::vector<int64_t> gather_order(GatherPass pass) const;
  // Who makes the units whole while they compute (not owned; null: the base is whole). Every
  // pass over a split base goes through it.
  void set_base_gathers(BaseGathers* gathers) { gathers_ = gathers; }
  BaseGathers* base_gathers() const { return gathers_; }
  // A rank that stopped part-way through a training step (out of memory) makes the rest of the
  // pass's gathers and `more` whole training passes' without computing, so that its peers'
  // gathers are met. A no-op for a whole base.
  void complete_training_passes(int64_t more);
  // Takes part in a pass that another rank computes (a merged export written by rank 0): its
  // gathers, without computing. A no-op for a whole base.
  void follow_pass(GatherPass pass);

  at::Tensor embedding;  // [vocab, dim], frozen
  std::vector<DecoderLayer> layers;
  RMSNorm final_norm{nullptr};
  LoraLinear lm_head{nullptr};  // shares `embedding` as weight when tied

 private:
  at::Tensor hidden_states(const at::Tensor& input_ids, const at::Tensor& position_ids,
                           const at::Tensor& segment_ids);
  // Lays the frozen base out in units (shard_ranks >= 1).
  void make_units(int64_t shard_ranks, at::TensorOptions options);
  // The values init_random() gives unit `unit` (the adapters of its layers too).
  void init_unit_random(int64_t unit);
  bool layers_adapted() const;
  spec::ModelSpec spec_;
  RopeTables rope_;
  Recompute recompute_ = Recompute::kNone;
  bool fused_ = true;
  bool gpu_kernels_ = false;
  std::vector<BaseUnit> units_;
  BaseGathers* gathers_ = nullptr;
};
TORCH_MODULE(Llama);

}  // namespace ftbench::model
