#include "model/torch/selective_recompute.h"

#include <stdexcept>
#include <string>
#include <utility>

#include <ATen/core/ivalue.h>
#include <torch/autograd.h>
#include <torch/utils.h>

namespace ftbench::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

thread_local SelectiveCache* active_cache = nullptr;

at::Tensor rows_of(const at::Tensor& x) { return x.reshape({-1, x.size(-1)}); }

// A replayed projection's settings and kept tensors, carried to its backward.
struct ReplayPlan : torch::CustomClassHolder {
  std::vector<LoraSliceRef> slices;
  at::ScalarType adapter_dtype = at::kFloat;
  at::Tensor out;
  at::Tensor a_all;
};

class ReplayProjectionFunction : public torch::autograd::Function<ReplayProjectionFunction> {
 public:
  // Inputs: x, the weight (frozen), the A then the B matrices.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            at::TensorList adapters, c10::intrusive_ptr<ReplayPlan> plan,
                            bool training) {
    // x only for the LoRA gradients: the frozen base's is g W.
    std::vector<at::Tensor> saved{plan->slices.empty() ? at::Tensor() : x, weight, plan->a_all};
    // The masks lora_down() drew on the first pass: the same draws from the restored generator
    // state (at::native_dropout, one per slice that drops out, in order).
    at::Tensor h;
    for (const LoraSliceRef& s : plan->slices) {
      if (training && s.dropout > 0.0) {
        if (!h.defined()) h = rows_of(x).to(plan->adapter_dtype);
        saved.push_back(std::get<1>(at::native_dropout(h, s.dropout, /*train=*/true)));
      } else {
        saved.emplace_back();
      }
    }
    for (const at::Tensor& t : adapters) saved.push_back(t);
    ctx->save_for_backward(saved);
    ctx->saved_data["plan"] = c10::IValue::make_capsule(plan);
    at::Tensor out = std::move(plan->out);
    plan->out = at::Tensor();
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto plan =
        c10::static_intrusive_pointer_cast<ReplayPlan>(ctx->saved_data["plan"].toCapsule());
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& a_all = saved[2];
    const std::size_t n = plan->slices.size();
    const std::vector<at::Tensor> masks(saved.begin() + 3, saved.begin() + 3 + n);
    const std::vector<at::Tensor> a(saved.begin() + 3 + n, saved.begin() + 3 + 2 * n);
    const std::vector<at::Tensor> b(saved.begin() + 3 + 2 * n, saved.end());
    const at::Tensor& g = grad_outputs[0];
    // The frozen base GEMM's: g W, as at::linear's backward makes it.
    at::Tensor dx = at::matmul(g, weight);
    tensor_list grads{dx, at::Tensor()};
    if (n > 0) {
      LoraUpGrads up = lora_up_backward(a_all, b, plan->slices, g);
      LoraDownGrads down =
          lora_down_backward(x, masks, a, plan->slices, plan->adapter_dtype, up.d_a_all);
      dx.add_(down.dx);
      for (at::Tensor& t : down.da) grads.push_back(std::move(t));
      for (at::Tensor& t : up.db) grads.push_back(std::move(t));
    }
    grads.emplace_back();  // plan
    grads.emplace_back();  // training
    return grads;
  }
};

// The kept attention graph of one layer, carried to its replay node's backward.
struct AttentionGraph : torch::CustomClassHolder {
  at::Tensor out;  // the graph's
  std::vector<at::Tensor> inputs;
  at::Tensor kept;  // its value, without a graph: the replay node's output
};

class ReplayAttentionFunction : public torch::autograd::Function<ReplayAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, c10::intrusive_ptr<AttentionGraph> graph) {
    (void)q, (void)k, (void)v;
    at::Tensor out = std::move(graph->kept);
    graph->kept = at::Tensor();
    ctx->saved_data["graph"] = c10::IValue::make_capsule(std::move(graph));
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto graph =
        c10::static_intrusive_pointer_cast<AttentionGraph>(ctx->saved_data["graph"].toCapsule());
    tensor_list grads = torch::autograd::grad({graph->out}, graph->inputs, {grad_outputs[0]},
                                              /*retain_graph=*/false, /*create_graph=*/false,
                                              /*allow_unused=*/true);
    graph->out = at::Tensor();
    graph->inputs.clear();
    grads.emplace_back();  // graph
    return grads;
  }
};

}  // namespace

void SelectiveCache::start_replay() {
  mode_ = Mode::kReplay;
  next_ = 0;
}

void SelectiveCache::push(SelectiveEntry entry) {
  if (drop_next_ && entry.out.defined() && !entry.graph_out.defined()) {
    entry.dropped_sizes = entry.out.sizes().vec();
    entry.dropped_options = entry.out.options();
    entry.out = at::Tensor();
  }
  drop_next_ = false;
  entries_.push_back(std::move(entry));
}

SelectiveEntry SelectiveCache::take() {
  if (mode_ != Mode::kReplay || next_ >= entries_.size()) {
    throw std::logic_error("selective recompute: the replay met more cache points (" +
                           std::to_string(next_ + 1) + ") than the forward kept (" +
                           std::to_string(entries_.size()) + ")");
  }
  SelectiveEntry entry = std::move(entries_[next_++]);
  if (!entry.out.defined() && !entry.dropped_sizes.empty()) {
    entry.out = at::empty(entry.dropped_sizes, entry.dropped_options);
  }
  return entry;
}

void SelectiveCache::check_replayed() const {
  if (next_ != entries_.size()) {
    throw std::logic_error("selective recompute: the replay met " + std::to_string(next_) +
                           " cache points, the forward kept " + std::to_string(entries_.size()));
  }
}

SelectiveCache* active_selective_cache() { return active_cache; }

SelectiveScope::SelectiveScope(SelectiveCache* cache) : previous_(active_cache) {
  active_cache = cache;
}

SelectiveScope::~SelectiveScope() { active_cache = previous_; }

at::Tensor replay_projection(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& out,
                             const at::Tensor& a_all, const std::vector<at::Tensor>& lora_a,
                             const std::vector<at::Tensor>& lora_b,
                             const std::vector<LoraSliceRef>& slices, at::ScalarType adapter_dtype,
                             bool training) {
  if (lora_a.size() != slices.size() || lora_b.size() != slices.size() ||
      a_all.defined() != !slices.empty()) {
    throw std::invalid_argument(
        "replay_projection: one A and one B per slice, and a_all with them");
  }
  auto plan = c10::make_intrusive<ReplayPlan>();
  plan->slices = slices;
  plan->adapter_dtype = adapter_dtype;
  plan->out = out;
  plan->a_all = a_all.defined() ? a_all : at::empty({0}, out.options());
  std::vector<at::Tensor> adapters = lora_a;
  adapters.insert(adapters.end(), lora_b.begin(), lora_b.end());
  return ReplayProjectionFunction::apply(x, weight, at::TensorList(adapters), plan, training);
}

at::Tensor selective_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::function<at::Tensor(const at::Tensor&, const at::Tensor&,
                                                              const at::Tensor&)>& attention) {
  SelectiveCache* cache = active_selective_cache();
  if (cache == nullptr) return attention(q, k, v);
  if (cache->mode() == SelectiveCache::Mode::kRecord) {
    SelectiveEntry entry;
    for (const at::Tensor* t : {&q, &k, &v}) {
      entry.graph_inputs.push_back(t->detach().requires_grad_(true));
    }
    {
      const torch::AutoGradMode grad_mode(true);
      entry.graph_out =
          attention(entry.graph_inputs[0], entry.graph_inputs[1], entry.graph_inputs[2]);
    }
    entry.out = entry.graph_out.detach();
    at::Tensor out = entry.out;
    cache->push(std::move(entry));
    return out;
  }
  SelectiveEntry entry = cache->take();
  if (!entry.graph_out.defined()) {
    throw std::logic_error("selective recompute: attention replayed where a projection was kept");
  }
  auto graph = c10::make_intrusive<AttentionGraph>();
  graph->out = std::move(entry.graph_out);
  graph->inputs = std::move(entry.graph_inputs);
  graph->kept = std::move(entry.out);
  return ReplayAttentionFunction::apply(q, k, v, graph);
}

}  // namespace ftbench::model
