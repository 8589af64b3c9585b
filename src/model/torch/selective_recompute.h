// Selective activation checkpointing (model.activation_checkpointing: selective): a decoder
// layer keeps its GEMM and attention outputs from the forward and recomputes only the
// elementwise work between them (the norms, the rotary embedding, SwiGLU, the residual adds, the
// dropout masks) in the backward. LibTorch's C++ API has no selective checkpoint (Python's
// torch.utils.checkpoint policies run through a dispatch mode), so the layer's own code marks its
// cache points:
// - a projection (LoraLinearImpl::forward_packed: the frozen base GEMM and its LoRA update)
//   keeps its output and the LoRA down-projection's [tokens, sum(rank)] output. On the replay
//   it returns the kept output through one node whose backward is the base GEMM's (g W) and the
//   LoRA nodes' backward (fused_blocks.h), the dropout masks drawn again from the generator state
//   of the first pass (the unit restores it, as full checkpointing does);
// - attention (causal_sdpa) keeps its own graph from the first pass: the kernel's saved tensors
//   (q and k after the rotary embedding, v, the output and its log-sum-exp for a fused kernel;
//   the probabilities for the math kernel) and its output. On the replay it returns the kept
//   output through one node whose backward runs the kept graph.
// A unit (llama.cpp's UnitFunction) records in its forward, which runs without a graph, and
// replays in its backward with the cache it recorded; the points are met in the same order both
// times (the replay checks it).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include "model/torch/fused_blocks.h"

namespace ftbench::model {

// What one cache point kept.
struct SelectiveEntry {
  at::Tensor out;    // the point's output, without a graph
  at::Tensor a_all;  // a projection's LoRA down-projection (undefined: no adapter)
  // Attention: the kept graph's output and the inputs it starts from (detached copies of q, k,
  // v's views that require grad).
  at::Tensor graph_out;
  std::vector<at::Tensor> graph_inputs;
  // An output not kept (drop_next_output()): its shape and options, for an uninitialised tensor.
  std::vector<int64_t> dropped_sizes;
  at::TensorOptions dropped_options;
};

class SelectiveCache : public torch::CustomClassHolder {
 public:
  enum class Mode { kRecord, kReplay };

  Mode mode() const { return mode_; }
  void start_replay();
  void push(SelectiveEntry entry);
  // The next point's output is not kept, only its shape: the replay gets an uninitialised tensor
  // (the layer's last projection, whose output only its residual add reads, for the layer's
  // output, whose value the backward never reads).
  void drop_next_output() { drop_next_ = true; }
  // The next entry of the replay; throws std::logic_error when the replay meets more points
  // than the record kept.
  SelectiveEntry take();
  // Throws std::logic_error unless the replay took every entry.
  void check_replayed() const;
  std::size_t size() const { return entries_.size(); }

 private:
  Mode mode_ = Mode::kRecord;
  std::vector<SelectiveEntry> entries_;
  std::size_t next_ = 0;
  bool drop_next_ = false;
};

// The cache this thread's unit computes with, or null (no selective checkpointing).
SelectiveCache* active_selective_cache();

// Makes `cache` the thread's active cache until destroyed (the previous one comes back).
class SelectiveScope {
 public:
  explicit SelectiveScope(SelectiveCache* cache);
  ~SelectiveScope();
  SelectiveScope(const SelectiveScope&) = delete;
  SelectiveScope& operator=(const SelectiveScope&) = delete;

 private:
  SelectiveCache* previous_;
};

// A projection's replay: returns `out` (the kept output of x W^T plus the LoRA update) as the
// output of one node whose backward gives x, the A and the B matrices their gradients exactly as
// the base GEMM, lora_down() and lora_up_() would. Draws the dropout masks as lora_down() does
// (one at::native_dropout per slice that drops out, in order), so the generator advances alike.
// No slices: the frozen base alone.
at::Tensor replay_projection(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& out,
                             const at::Tensor& a_all, const std::vector<at::Tensor>& lora_a,
                             const std::vector<at::Tensor>& lora_b,
                             const std::vector<LoraSliceRef>& slices, at::ScalarType adapter_dtype,
                             bool training);

// Attention as a cache point: `attention` computes the output from q, k, v. Recording: runs it
// with a graph on detached q, k, v and keeps that graph; replaying: returns the kept output as a
// node whose backward runs the kept graph back to q, k and v. Without an active cache: calls
// `attention` as it is.
at::Tensor selective_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::function<at::Tensor(const at::Tensor&, const at::Tensor&,
                                                              const at::Tensor&)>& attention);

}  // namespace ftbench::model
