// The Llama decoder, its layers and per-layer activation checkpointing.
#include "model/torch/llama.h"

#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>

#include "device/torch/dtype.h"
#include "device/torch/profile_scopes.h"
#include "model/torch/chunked_loss.h"
#include "model/torch/cpu_fused.h"
#include "model/torch/fused_blocks.h"
#include "model/torch/sdpa.h"
#include "model/torch/selective_recompute.h"
#include "spec/choices.h"

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

// A unit of a split base is whole within this scope (nothing when the base is whole).
class WholeUnit {
 public:
  WholeUnit(BaseGathers* gathers, int64_t unit) : gathers_(gathers), unit_(unit) {
    if (gathers_ != nullptr) gathers_->gather(unit_);
  }
  ~WholeUnit() {
    if (gathers_ != nullptr) gathers_->release(unit_);
  }
  WholeUnit(const WholeUnit&) = delete;
  WholeUnit& operator=(const WholeUnit&) = delete;

 private:
  BaseGathers* gathers_;
  int64_t unit_;
};

// What a unit computes (a decoder layer with its rotary tables and segments, or the output
// head), carried through the autograd context.
struct UnitHandle : torch::CustomClassHolder {
  std::function<at::Tensor(const at::Tensor&)> compute;
  BaseGathers* gathers = nullptr;  // null: the base is whole
  int64_t unit = 0;
  bool recompute = true;
  // With recompute: keep the GEMM and attention outputs and recompute the rest
  // (selective_recompute.h); false: recompute the whole unit.
  bool selective = false;
  // Without recompute: the forward's own graph, from x_in (x detached) to y_in, run backward
  // when the unit's gradient arrives.
  at::Tensor x_in;
  at::Tensor y_in;
};

// One unit's forward and backward as one autograd node, for activation checkpointing and for a
// split base (the unit gathered for its forward, and again for its backward).
// - recompute (the reentrant scheme of torch.utils.checkpoint): forward runs without building a
//   graph and keeps only the input; backward re-runs the forward with the random state of the
//   first pass (so dropout masks match) and back-propagates through it, which also accumulates
//   the adapters' gradients.
// - no recompute (a split base without checkpointing): forward builds the unit's graph as plain
//   autograd would and keeps it; the weights' memory is released in between and refilled for
//   the backward (base_units.h: the saved views see the refilled buffer).
// `anchor` is a scalar that requires grad so that the output requires grad even when the input
// does not (the first layer's input comes from a frozen embedding).
class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& anchor, c10::intrusive_ptr<UnitHandle> handle) {
    (void)anchor;
    ctx->saved_data["handle"] = c10::IValue::make_capsule(handle);
    ctx->saved_data["x_requires_grad"] = x.requires_grad();
    const WholeUnit whole(handle->gathers, handle->unit);
    if (!handle->recompute) {
      handle->x_in = x.detach().requires_grad_(x.requires_grad());
      const torch::AutoGradMode grad_mode(true);
      handle->y_in = handle->compute(handle->x_in);
      return handle->y_in.detach();
    }
    at::Generator gen = at::globalContext().defaultGenerator(x.device());
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      ctx->saved_data["rng_state"] = gen.get_state();
    }
    ctx->save_for_backward({x});
    at::NoGradGuard no_grad;
    if (!handle->selective) return handle->compute(x);
    auto cache = c10::make_intrusive<SelectiveCache>();
    at::Tensor y;
    {
      const SelectiveScope scope(cache.get());
      y = handle->compute(x);
    }
    ctx->saved_data["selective"] = c10::IValue::make_capsule(cache);
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    auto handle =
        c10::static_intrusive_pointer_cast<UnitHandle>(ctx->saved_data["handle"].toCapsule());
    const bool x_requires_grad = ctx->saved_data["x_requires_grad"].toBool();
    const WholeUnit whole(handle->gathers, handle->unit);
    if (!handle->recompute) {
      const at::Tensor x = std::move(handle->x_in);
      const at::Tensor y = std::move(handle->y_in);
      if (y.requires_grad()) torch::autograd::backward({y}, {grad_outputs[0]});
      return {x_requires_grad ? x.grad() : at::Tensor(), at::Tensor(), at::Tensor()};
    }
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(x_requires_grad);
    at::Generator gen = at::globalContext().defaultGenerator(x.device());
    at::Tensor current_state;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      current_state = gen.get_state();
      gen.set_state(ctx->saved_data["rng_state"].toTensor());
    }
    c10::intrusive_ptr<SelectiveCache> cache;
    if (handle->selective) {
      cache = c10::static_intrusive_pointer_cast<SelectiveCache>(
          ctx->saved_data["selective"].toCapsule());
      cache->start_replay();
    }
    at::Tensor y;
    {
      RECORD_USER_SCOPE(device::kScopeRecompute);
      torch::AutoGradMode grad_mode(true);
      const SelectiveScope scope(cache.get());
      y = handle->compute(x);
      if (cache) cache->check_replayed();
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

Recompute recompute_of(const std::string& policy) {
  if (policy == spec::choice::checkpointing::kFull) return Recompute::kFull;
  if (policy == spec::choice::checkpointing::kSelective) return Recompute::kSelective;
  if (policy == spec::choice::checkpointing::kNone) return Recompute::kNone;
  throw std::invalid_argument(
      "model.activation_checkpointing: expected full, selective or none "
      "(auto is resolved before the model is built), found \"" +
      policy + "\"");
}

DecoderLayerImpl::DecoderLayerImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora,
                                   at::TensorOptions options, bool allocate_base)
    : n_heads_(m.n_heads), n_kv_heads_(m.n_kv_heads), head_dim_(m.dim / m.n_heads) {
  const at::ScalarType dt = options.dtype().toScalarType();
  const int64_t kv_dim = n_kv_heads_ * head_dim_;
  attn_norm = register_module("attn_norm", RMSNorm(m.dim, m.norm_eps, options));
  qkv = register_module("qkv",
                        LoraLinear(m.dim,
                                   Slices{slice("q", m.dim, lora, dt), slice("k", kv_dim, lora, dt),
                                          slice("v", kv_dim, lora, dt)},
                                   options, allocate_base));
  o = register_module(
      "o", LoraLinear(m.dim, Slices{slice("o", m.dim, lora, dt)}, options, allocate_base));
  mlp_norm = register_module("mlp_norm", RMSNorm(m.dim, m.norm_eps, options));
  gate_up = register_module("gate_up", LoraLinear(m.dim,
                                                  Slices{slice("gate", m.ffn_dim, lora, dt),
                                                         slice("up", m.ffn_dim, lora, dt)},
                                                  options, allocate_base));
  down = register_module("down", LoraLinear(m.ffn_dim, Slices{slice("down", m.dim, lora, dt)},
                                            options, allocate_base));
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

bool DecoderLayerImpl::has_adapter() const {
  return qkv->has_adapter() || o->has_adapter() || gate_up->has_adapter() || down->has_adapter();
}

void DecoderLayerImpl::set_fused(bool fused) {
  fused_ = fused;
  for (LoraLinear* linear : {&qkv, &o, &gate_up, &down}) (*linear)->set_fused(fused);
  attn_norm->set_fused(fused);
  mlp_norm->set_fused(fused);
}

at::Tensor DecoderLayerImpl::forward(const at::Tensor& x, const RopeTables& rope,
                                     const at::Tensor& segment_ids) {
  if (!fused_) return forward_unfused(x, rope, segment_ids);
  const int64_t b = x.size(0);
  const int64_t s = x.size(1);
  const QkvHeads heads = split_qkv_rope(qkv->forward_packed(attn_norm->forward(x)), n_heads_,
                                        n_kv_heads_, head_dim_, rope, gpu_kernels_);
  const at::Tensor attn =
      selective_attention(
          heads.q.transpose(1, 2), heads.k.transpose(1, 2), heads.v.transpose(1, 2),
          [&segment_ids](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
            return causal_sdpa(q, k, v, segment_ids);
          })
          .transpose(1, 2)
          .reshape({b, s, n_heads_ * head_dim_});
  const at::Tensor h = x + o->forward_packed(attn);
  const at::Tensor act = swiglu_packed(gate_up->forward_packed(mlp_norm->forward(h)));
  // Selective checkpointing: the layer's output is not read by its backward, so neither is the
  // down projection's (selective_recompute.h).
  SelectiveCache* cache = active_selective_cache();
  if (cache != nullptr && cache->mode() == SelectiveCache::Mode::kRecord) {
    cache->drop_next_output();
  }
  return h + down->forward_packed(act);
}

at::Tensor DecoderLayerImpl::forward_unfused(const at::Tensor& x, const RopeTables& rope,
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
  const at::Tensor mlp_in = mlp_norm->forward(h);
  at::Tensor act;
  if (!gate_up->has_adapter() && fused_applies(mlp_in) && fused_applies(gate_up->weight)) {
    act = fused_swiglu_packed(at::linear(mlp_in, gate_up->weight));
  } else {
    std::vector<at::Tensor> gu = gate_up->forward(mlp_in);
    act = fused_applies(gu[0]) && fused_applies(gu[1]) ? fused_swiglu(gu[0], gu[1])
                                                       : at::silu(gu[0]) * gu[1];
  }
  return h + down->forward_one(act);
}

LlamaImpl::LlamaImpl(const spec::ModelSpec& m, const spec::LoraSpec& lora, int64_t max_positions,
                     at::Device device, int64_t shard_ranks)
    : spec_(m), recompute_(recompute_of(m.activation_checkpointing)) {
  const at::TensorOptions options =
      at::TensorOptions().dtype(device::scalar_type_of(m.dtype)).device(device);
  const at::ScalarType dt = options.dtype().toScalarType();
  const bool allocate_base = shard_ranks < 1;
  for (int64_t i = 0; i < m.n_layers; ++i) {
    layers.push_back(register_module("layer" + std::to_string(i),
                                     DecoderLayer(m, lora, options, allocate_base)));
  }
  final_norm = register_module("final_norm", RMSNorm(m.dim, m.norm_eps, options));
  lm_head = register_module(
      "lm_head",
      LoraLinear(m.dim, Slices{slice("output", m.vocab_size, lora, dt)}, options, allocate_base));
  if (m.tie_embeddings) {
    embedding = lm_head->weight;  // one tensor serves both, counted once
  } else {
    embedding = register_parameter(
        "embedding",
        allocate_base ? at::empty({m.vocab_size, m.dim}, options) : at::empty({0}, options),
        /*requires_grad=*/false);
  }
  rope_ = make_rope_tables(max_positions, m.dim / m.n_heads, m.rope_theta, m.rope_scaling, options);
  if (!allocate_base) make_units(shard_ranks, options);
}

void LlamaImpl::make_units(int64_t shard_ranks, at::TensorOptions options) {
  // At most two units are whole at once (the one computing, the next one arriving), and a pass
  // has two sizes at most (the blocks; the embedding and the head): two free buffers of each
  // are kept.
  const std::shared_ptr<HostBufferPool> pool =
      options.device().is_cpu() ? std::make_shared<HostBufferPool>(2) : nullptr;
  const std::vector<int64_t> table{spec_.vocab_size, spec_.dim};
  units_.emplace_back(std::vector<at::Tensor>{embedding}, std::vector<std::vector<int64_t>>{table},
                      shard_ranks, options, pool);
  for (DecoderLayer& layer : layers) {
    std::vector<at::Tensor> weights;
    std::vector<std::vector<int64_t>> sizes;
    for (LoraLinear* linear : {&layer->qkv, &layer->o, &layer->gate_up, &layer->down}) {
      weights.push_back((*linear)->weight);
      sizes.push_back((*linear)->weight_sizes());
    }
    units_.emplace_back(std::move(weights), sizes, shard_ranks, options, pool);
  }
  if (!spec_.tie_embeddings) {
    units_.emplace_back(std::vector<at::Tensor>{lm_head->weight},
                        std::vector<std::vector<int64_t>>{lm_head->weight_sizes()}, shard_ranks,
                        options, pool);
  }
}

int64_t LlamaImpl::head_unit() const {
  return spec_.tie_embeddings ? 0 : static_cast<int64_t>(layers.size()) + 1;
}

std::vector<int64_t> LlamaImpl::init_order() const {
  // init_random()'s draws: the layers, the head (its weight and adapters), then an untied
  // embedding.
  std::vector<int64_t> order;
  for (std::size_t i = 0; i < layers.size(); ++i) order.push_back(static_cast<int64_t>(i) + 1);
  order.push_back(head_unit());
  if (!spec_.tie_embeddings) order.push_back(0);
  return order;
}

void LlamaImpl::init_unit_random(int64_t unit) {
  constexpr double kStd = 0.02;  // Llama's initializer_range
  at::NoGradGuard no_grad;
  const auto n = static_cast<int64_t>(layers.size());
  if (unit >= 1 && unit <= n) {
    layers[static_cast<std::size_t>(unit - 1)]->init_random(kStd);
  } else if (unit == head_unit()) {
    lm_head->init_random(kStd);  // tied: the embedding's tensor, and the head's adapters
  } else {
    embedding.normal_(0.0, kStd);
  }
}

void LlamaImpl::init_random(const std::function<void(int64_t unit)>& filled) {
  for (int64_t unit : init_order()) {
    if (!units_.empty()) {
      units_[static_cast<std::size_t>(unit)].allocate();
      units_[static_cast<std::size_t>(unit)].zero_gaps();
    }
    init_unit_random(unit);
    if (!units_.empty() && filled) filled(unit);
  }
}

void LlamaImpl::set_gpu_kernels(bool on) {
  gpu_kernels_ = on;
  for (DecoderLayer& layer : layers) layer->gpu_kernels_ = on;
}

void LlamaImpl::set_fused(bool fused) {
  fused_ = fused;
  for (DecoderLayer& layer : layers) layer->set_fused(fused);
  final_norm->set_fused(fused);
  lm_head->set_fused(fused);
}

void LlamaImpl::init_adapters() {
  for (DecoderLayer& layer : layers) layer->init_adapters();
  lm_head->init_adapters();
}

bool LlamaImpl::layers_adapted() const { return !layers.empty() && layers.front()->has_adapter(); }

bool LlamaImpl::head_adapted() const { return lm_head->has_adapter(); }

bool LlamaImpl::merged_head_apart() const { return !spec_.tie_embeddings || head_adapted(); }

int64_t LlamaImpl::unit_of(const at::Tensor& weight) const {
  for (std::size_t u = 0; u < units_.size(); ++u) {
    for (const at::Tensor& t : units_[u].tensors()) {
      if (t.is_same(weight)) return static_cast<int64_t>(u);
    }
  }
  return -1;
}

std::vector<int64_t> LlamaImpl::gather_order(GatherPass pass) const {
  const auto n = static_cast<int64_t>(layers.size());
  std::vector<int64_t> order{0};
  for (int64_t i = 1; i <= n; ++i) order.push_back(i);
  if (pass == GatherPass::kMergedExport) {
    if (merged_head_apart()) order.push_back(head_unit());
    return order;
  }
  order.push_back(head_unit());
  if (pass == GatherPass::kTraining) {
    if (head_adapted()) order.push_back(head_unit());
    if (layers_adapted()) {
      for (int64_t i = n; i >= 1; --i) order.push_back(i);
    }
  }
  return order;
}

void LlamaImpl::complete_training_passes(int64_t more) {
  if (gathers_ == nullptr) return;
  gathers_->complete_pass();
  for (int64_t i = 0; i < more; ++i) follow_pass(GatherPass::kTraining);
}

void LlamaImpl::follow_pass(GatherPass pass) {
  if (gathers_ == nullptr) return;
  gathers_->begin_pass(gather_order(pass));
  gathers_->complete_pass();
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
  RECORD_USER_SCOPE(device::kScopeForward);
  // A split base: every pass with gradients is a training pass (loss_sum, then backward).
  const bool grad = at::GradMode::is_enabled();
  if (gathers_ != nullptr) {
    gathers_->begin_pass(gather_order(grad ? GatherPass::kTraining : GatherPass::kForward));
  }
  // Packed rows: the rotary tables gathered once at the position ids, shared by the layers.
  const RopeTables packed_rope =
      position_ids.defined() ? gather_rope_tables(rope_, position_ids) : RopeTables{};
  const RopeTables& rope = position_ids.defined() ? packed_rope : rope_;
  at::Tensor h;
  {
    const WholeUnit whole(gathers_, 0);
    h = at::embedding(embedding, input_ids);
  }
  const bool unit_nodes =
      grad && layers_adapted() &&
      (gathers_ != nullptr || (recompute_ != Recompute::kNone && is_training()));
  const at::Tensor anchor =
      unit_nodes ? at::ones({}, h.options()).requires_grad_(true) : at::Tensor();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto unit = static_cast<int64_t>(i) + 1;
    if (!unit_nodes) {
      const WholeUnit whole(gathers_, unit);
      h = layers[i]->forward(h, rope, segment_ids);
      continue;
    }
    auto handle = c10::make_intrusive<UnitHandle>();
    DecoderLayerImpl* layer = layers[i].get();
    handle->compute = [layer, rope, segment_ids](const at::Tensor& x) {
      return layer->forward(x, rope, segment_ids);
    };
    handle->gathers = gathers_;
    handle->unit = unit;
    handle->recompute = recompute_ != Recompute::kNone;
    handle->selective = recompute_ == Recompute::kSelective;
    h = UnitFunction::apply(h, anchor, handle);
  }
  return final_norm->forward(h);
}

at::Tensor LlamaImpl::forward(const at::Tensor& input_ids, const at::Tensor& position_ids,
                              const at::Tensor& segment_ids) {
  if (gathers_ != nullptr && at::GradMode::is_enabled()) {
    throw std::logic_error(
        "LlamaImpl::forward with gradients on a split base: train through loss_sum");
  }
  const at::Tensor h = hidden_states(input_ids, position_ids, segment_ids);
  const WholeUnit whole(gathers_, head_unit());
  return lm_head->forward_one(h);
}

at::Tensor LlamaImpl::loss_sum(const at::Tensor& input_ids, const at::Tensor& labels,
                               const at::Tensor& loss_positions, const at::Tensor& position_ids,
                               const at::Tensor& segment_ids) {
  at::Tensor h = hidden_states(input_ids, position_ids, segment_ids);
  RECORD_USER_SCOPE(device::kScopeLoss);
  h = h.reshape({-1, h.size(-1)});
  at::Tensor targets = labels.reshape({-1});
  if (loss_positions.defined()) {
    h = h.index_select(0, loss_positions);
    targets = targets.index_select(0, loss_positions);
  }
  // Cross-entropy in fp32 for stability, as the reference recipes upcast the logits. A frozen
  // LM head (no LoRA on `output`): chunk by chunk, never the whole [tokens x vocabulary] logits;
  // its gradient is computed in the forward, so a split base gathers the head once.
  const bool head_frozen = !head_adapted() && !lm_head->weight.requires_grad();
  if (head_frozen) {
    const WholeUnit whole(gathers_, head_unit());
    return chunked_linear_cross_entropy(h, lm_head->weight, targets,
                                        loss_chunk_rows(lm_head->weight.size(0)), fused_);
  }
  at::Tensor logits;
  if (gathers_ != nullptr && at::GradMode::is_enabled()) {
    // The head's graph kept for its backward, the weight gathered again then.
    auto handle = c10::make_intrusive<UnitHandle>();
    LoraLinearImpl* head = lm_head.get();
    handle->compute = [head](const at::Tensor& x) { return head->forward_one(x); };
    handle->gathers = gathers_;
    handle->unit = head_unit();
    handle->recompute = false;
    logits = UnitFunction::apply(h, at::ones({}, h.options()).requires_grad_(true), handle);
  } else {
    const WholeUnit whole(gathers_, head_unit());
    logits = lm_head->forward_one(h);
  }
  return at::cross_entropy_loss(logits.to(at::kFloat), targets, /*weight=*/{}, at::Reduction::Sum,
                                /*ignore_index=*/-100);
}

}  // namespace ftbench::model
