// Llama-style decoder with LoRA adapters: RMSNorm, RoPE (Llama 3.1 scaling), grouped-query
// causal attention, SwiGLU MLP, tied or untied embeddings, optional activation checkpointing.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "ftbench/model/lora_linear.h"
#include "ftbench/model/rms_norm.h"
#include "ftbench/model/rope.h"
#include "ftbench/spec/run_spec.h"

namespace ftbench::model {

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora, at::TensorOptions options);
  // x: [B, S, dim] -> [B, S, dim]. `segment_ids` ([B, S], optional): packed rows, attention
  // kept inside each segment (sdpa.h); `rope` then holds tables gathered at the position ids.
  at::Tensor forward(const at::Tensor& x, const RopeTables& rope,
                     const at::Tensor& segment_ids = {});
  void init_random(double std);
  void init_adapters();

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
};
TORCH_MODULE(DecoderLayer);

class LlamaImpl : public torch::nn::Module {
 public:
  // Allocates every weight (uninitialised) on `device` in the spec's dtype; rotary tables
  // cover `max_positions` (the data's sequence length, not the preset's full context).
  LlamaImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora, int64_t max_positions,
            at::Device device);

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
  // Seeded by the caller through the global generator.
  void init_random();
  // The adapters only, as init_random() makes them, for base weights copied in from a
  // checkpoint (hf/hf_load.h).
  void init_adapters();

  // Freezes everything but the adapters; returns the trainable parameters in a fixed order.
  std::vector<at::Tensor> trainable_parameters();
  // The same, with their module paths ("layers.0.attention.q.lora_a"), the names checkpoints
  // use.
  std::vector<std::pair<std::string, at::Tensor>> trainable_named_parameters();
  void set_activation_checkpointing(bool on) { checkpointing_ = on; }

  at::Tensor embedding;  // [vocab, dim], frozen
  std::vector<DecoderLayer> layers;
  RMSNorm final_norm{nullptr};
  LoraLinear lm_head{nullptr};  // shares `embedding` as weight when tied

 private:
  at::Tensor hidden_states(const at::Tensor& input_ids, const at::Tensor& position_ids,
                           const at::Tensor& segment_ids);
  spec::ModelSpec spec_;
  RopeTables rope_;
  bool checkpointing_ = false;
};
TORCH_MODULE(Llama);

}  // namespace ftbench::model
