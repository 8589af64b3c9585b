// The Llama decoder, its layers and per-layer activation checkpointing.
#include "ftbench/model/llama.h"

#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>

#include "ftbench/device/dtype.h"
#include "ftbench/model/chunked_loss.h"
#include "ftbench/model/sdpa.h"
#include "ftbench/spec/choices.h"

namespace ftbench::model {
namespace {

using Slices = std::vector<LinearSlice>;

bool has_target(const spec::LoraSpec& lora, const std::string& name) {
  for (const std::string& t : lora.targets) {
    if (t == name) return true;
  }
  return false;
}

LinearSlice slice(const std::string& name, int64_t out, const spec::LoraSpec& lora,
                  at::ScalarType base_dtype) {
  LinearSlice s;
  s.name = name;
  s.out_features = out;
  if (has_target(lora, name)) {
    s.lora.rank = lora.rank;
    s.lora.alpha = lora.alpha;
    s.lora.dropout = lora.dropout;
    s.lora.dtype =
        lora.dtype == spec::choice::dtype::kBase ? base_dtype : device::scalar_type_of(lora.dtype);
  }
  return s;
}

// Carries a layer, its rotary tables and the packed rows' segments through the autograd
// context.
struct LayerHandle : torch::CustomClassHolder {
  DecoderLayerImpl* layer = nullptr;
  RopeTables rope;         // held by value: packed rows' gathered tables outlive the forward
  at::Tensor segment_ids;  // undefined unless packed
};

// Recompute-in-backward for one decoder layer (the reentrant scheme of
// torch.utils.checkpoint): forward runs without building a graph and keeps only the layer
// input; backward re-runs the forward with the random state of the first pass (so dropout
// masks match) and back-propagates through it, which also accumulates the adapters' gradients.
// `anchor` is a scalar that requires grad so that the output requires grad even when the input
// does not (the first layer's input comes from a frozen embedding).
class CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& anchor, c10::intrusive_ptr<LayerHandle> handle) {
    (void)anchor;
    at::Generator gen = at::globalContext().defaultGenerator(x.device());
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      ctx->saved_data["rng_state"] = gen.get_state();
    }
    ctx->saved_data["handle"] = c10::IValue::make_capsule(handle);
    ctx->saved_data["x_requires_grad"] = x.requires_grad();
    ctx->save_for_backward({x});
    at::NoGradGuard no_grad;
    return handle->layer->forward(x, handle->rope, handle->segment_ids);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    auto handle =
        c10::static_intrusive_pointer_cast<LayerHandle>(ctx->saved_data["handle"].toCapsule());
    const bool x_requires_grad = ctx->saved_data["x_requires_grad"].toBool();
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(x_requires_grad);

    at::Generator gen = at::globalContext().defaultGenerator(x.device());
    at::Tensor current_state;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      current_state = gen.get_state();
      gen.set_state(ctx->saved_data["rng_state"].toTensor());
    }
    at::Tensor y;
    {
      torch::AutoGradMode grad_mode(true);
      y = handle->layer->forward(x, handle->rope, handle->segment_ids);
    }
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(current_state);
    }
    if (y.requires_grad()) torch::autograd::backward({y}, {grad_outputs[0]});
    at::Tensor grad_x = x_requires_grad ? x.grad() : at::Tensor();
    return {grad_x, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

DecoderLayerImpl::DecoderLayerImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora,
                                   at::TensorOptions options)
    : n_heads_(m.n_heads), n_kv_heads_(m.n_kv_heads), head_dim_(m.dim / m.n_heads) {
  const at::ScalarType dt = options.dtype().toScalarType();
  const int64_t kv_dim = n_kv_heads_ * head_dim_;
  attn_norm = register_module("attn_norm", RMSNorm(m.dim, m.norm_eps, options));
  qkv = register_module("qkv",
                        LoraLinear(m.dim,
                                   Slices{slice("q", m.dim, lora, dt), slice("k", kv_dim, lora, dt),
                                          slice("v", kv_dim, lora, dt)},
                                   options));
  o = register_module("o", LoraLinear(m.dim, Slices{slice("o", m.dim, lora, dt)}, options));
  mlp_norm = register_module("mlp_norm", RMSNorm(m.dim, m.norm_eps, options));
  gate_up = register_module("gate_up", LoraLinear(m.dim,
                                                  Slices{slice("gate", m.ffn_dim, lora, dt),
                                                         slice("up", m.ffn_dim, lora, dt)},
                                                  options));
  down = register_module("down",
                         LoraLinear(m.ffn_dim, Slices{slice("down", m.dim, lora, dt)}, options));
}

void DecoderLayerImpl::init_random(double std) {
  qkv->init_random(std);
  o->init_random(std);
  gate_up->init_random(std);
  down->init_random(std);
}

void DecoderLayerImpl::init_adapters() {
  qkv->init_adapters();
  o->init_adapters();
  gate_up->init_adapters();
  down->init_adapters();
}

at::Tensor DecoderLayerImpl::forward(const at::Tensor& x, const RopeTables& rope,
                                     const at::Tensor& segment_ids) {
  const int64_t b = x.size(0);
  const int64_t s = x.size(1);
  std::vector<at::Tensor> qkv_out = qkv->forward(attn_norm->forward(x));
  const at::Tensor q =
      apply_rope(qkv_out[0].view({b, s, n_heads_, head_dim_}), rope).transpose(1, 2);
  const at::Tensor k =
      apply_rope(qkv_out[1].view({b, s, n_kv_heads_, head_dim_}), rope).transpose(1, 2);
  const at::Tensor v = qkv_out[2].view({b, s, n_kv_heads_, head_dim_}).transpose(1, 2);
  const at::Tensor attn =
      causal_sdpa(q, k, v, segment_ids).transpose(1, 2).reshape({b, s, n_heads_ * head_dim_});
  const at::Tensor h = x + o->forward_one(attn);
  std::vector<at::Tensor> gu = gate_up->forward(mlp_norm->forward(h));
  return h + down->forward_one(at::silu(gu[0]) * gu[1]);
}

LlamaImpl::LlamaImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora, int64_t max_positions,
                     at::Device device)
    : spec_(m), checkpointing_(m.activation_checkpointing) {
  const at::TensorOptions options =
      at::TensorOptions().dtype(device::scalar_type_of(m.dtype)).device(device);
  const at::ScalarType dt = options.dtype().toScalarType();
  for (int64_t i = 0; i < m.n_layers; ++i) {
    layers.push_back(register_module("layer" + std::to_string(i), DecoderLayer(m, lora, options)));
  }
  final_norm = register_module("final_norm", RMSNorm(m.dim, m.norm_eps, options));
  lm_head = register_module(
      "lm_head", LoraLinear(m.dim, Slices{slice("output", m.vocab_size, lora, dt)}, options));
  if (m.tie_embeddings) {
    embedding = lm_head->weight;  // one tensor serves both, counted once
  } else {
    embedding = register_parameter("embedding", at::empty({m.vocab_size, m.dim}, options),
                                   /*requires_grad=*/false);
  }
  rope_ = make_rope_tables(max_positions, m.dim / m.n_heads, m.rope_theta, m.rope_scaling, options);
}

void LlamaImpl::init_random() {
  constexpr double kStd = 0.02;  // Llama's initializer_range
  at::NoGradGuard no_grad;
  for (DecoderLayer& layer : layers) layer->init_random(kStd);
  lm_head->init_random(kStd);
  if (!spec_.tie_embeddings) embedding.normal_(0.0, kStd);
}

void LlamaImpl::init_adapters() {
  for (DecoderLayer& layer : layers) layer->init_adapters();
  lm_head->init_adapters();
}

std::vector<at::Tensor> LlamaImpl::trainable_parameters() {
  std::vector<at::Tensor> out;
  for (auto& [name, tensor] : trainable_named_parameters()) out.push_back(tensor);
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> LlamaImpl::trainable_named_parameters() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto& p : named_parameters(/*recurse=*/true)) {
    const bool is_adapter = p.key().find("lora_") != std::string::npos;
    p.value().set_requires_grad(is_adapter);
    if (is_adapter) out.emplace_back(p.key(), p.value());
  }
  return out;
}

at::Tensor LlamaImpl::hidden_states(const at::Tensor& input_ids, const at::Tensor& position_ids,
                                    const at::Tensor& segment_ids) {
  if (position_ids.defined() != segment_ids.defined()) {
    throw std::invalid_argument("packed rows need both position_ids and segment_ids");
  }
  // Packed rows: the rotary tables gathered once at the position ids, shared by the layers.
  const RopeTables packed_rope =
      position_ids.defined() ? gather_rope_tables(rope_, position_ids) : RopeTables{};
  const RopeTables& rope = position_ids.defined() ? packed_rope : rope_;
  at::Tensor h = at::embedding(embedding, input_ids);
  if (checkpointing_ && is_training() && at::GradMode::is_enabled()) {
    const at::Tensor anchor = at::ones({}, h.options()).requires_grad_(true);
    for (DecoderLayer& layer : layers) {
      auto handle = c10::make_intrusive<LayerHandle>();
      handle->layer = layer.get();
      handle->rope = rope;
      handle->segment_ids = segment_ids;
      h = CheckpointedLayer::apply(h, anchor, handle);
    }
  } else {
    for (DecoderLayer& layer : layers) h = layer->forward(h, rope, segment_ids);
  }
  return final_norm->forward(h);
}

at::Tensor LlamaImpl::forward(const at::Tensor& input_ids, const at::Tensor& position_ids,
                              const at::Tensor& segment_ids) {
  return lm_head->forward_one(hidden_states(input_ids, position_ids, segment_ids));
}

at::Tensor LlamaImpl::loss_sum(const at::Tensor& input_ids, const at::Tensor& labels,
                               const at::Tensor& loss_positions, const at::Tensor& position_ids,
                               const at::Tensor& segment_ids) {
  at::Tensor h = hidden_states(input_ids, position_ids, segment_ids);
  h = h.reshape({-1, h.size(-1)});
  at::Tensor targets = labels.reshape({-1});
  if (loss_positions.defined()) {
    h = h.index_select(0, loss_positions);
    targets = targets.index_select(0, loss_positions);
  }
  // Cross-entropy in fp32 for stability, as the reference recipes upcast the logits. A frozen
  // LM head (no LoRA on `output`): chunk by chunk, never the whole [tokens x vocabulary] logits.
  const bool head_frozen = !lm_head->lora_a.front().defined() && !lm_head->weight.requires_grad();
  if (head_frozen) {
    return chunked_linear_cross_entropy(h, lm_head->weight, targets,
                                        loss_chunk_rows(lm_head->weight.size(0)));
  }
  const at::Tensor logits = lm_head->forward_one(h);
  return at::cross_entropy_loss(logits.to(at::kFloat), targets, /*weight=*/{}, at::Reduction::Sum,
                                /*ignore_index=*/-100);
}

}  // namespace ftbench::model
