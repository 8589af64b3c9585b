// A frozen linear layer with optional LoRA adapters, possibly fused over several outputs.
//
// The base weight [sum(out_i), in] is frozen; one GEMM computes every slice (e.g. q, k and v
// of a block in one call), then each slice that has an adapter adds
// (alpha / rank) * B(A(dropout(x))), computed in the adapter dtype. A is Kaiming-uniform
// (bound 1/sqrt(in), as PEFT), B is zero, so a fresh adapter leaves the output unchanged.
#pragma once

#include <string>
#include <vector>

#include <torch/nn/module.h>

namespace ftbench::model {

struct LoraConfig {
  int64_t rank = 0;  // 0: no adapter on this slice
  double alpha = 0.0;
  double dropout = 0.0;
  at::ScalarType dtype = at::kFloat;
};

struct LinearSlice {
  std::string name;  // q, k, v, o, gate, up, down, output
  int64_t out_features = 0;
  LoraConfig lora;
};

class LoraLinearImpl : public torch::nn::Module {
 public:
  // Weights are allocated uninitialised in `options` (dtype and device of the base); call
  // init_random() or copy real weights in. Without `allocate_weight` the base weight is an empty
  // placeholder of weight_sizes() for a split base to lay out (base_units.h); the adapters are
  // allocated either way.
  LoraLinearImpl(int64_t in_features, std::vector<LinearSlice> slices, at::TensorOptions options,
                 bool allocate_weight = true);

  // Every slice's output side by side, [..., sum(out_i)], in slice order: the base GEMM, then the
  // adapters' updates added into their columns in place (fused_blocks.h: lora_down, lora_up_),
  // so that the backward hands the projection one gradient tensor.
  at::Tensor forward_packed(const at::Tensor& x);
  // x: [..., in]. One tensor per slice: [..., out_i] (views of forward_packed()'s).
  std::vector<at::Tensor> forward(const at::Tensor& x);
  // Single-slice convenience.
  at::Tensor forward_one(const at::Tensor& x);
  // The composite form forward() replaced, kept as the tests' oracle: per slice, x cast to the
  // adapter dtype, dropout, two GEMMs, the scale and the add (one addmm where the dtypes are
  // fp32 on a CPU), the outputs split views of the base GEMM's.
  std::vector<at::Tensor> forward_unfused(const at::Tensor& x);
  // Off: forward() is forward_unfused() (the oracle, and the before of docs/benchmarks.md's
  // counts); on (the default): the fused path.
  void set_fused(bool fused) { fused_ = fused; }
  bool fused() const { return fused_; }

  // Base weight ~ N(0, std^2); adapters A Kaiming-uniform, B zero.
  void init_random(double std);
  // The adapters only (A Kaiming-uniform, B zero), for base weights loaded from a checkpoint.
  void init_adapters();

  // W + (alpha/rank) * B A per slice, as one [sum(out_i), in] tensor in the base dtype.
  at::Tensor merged_weight() const;
  // Slice `slice`'s rows of merged_weight(), computed alone (a merged export holds one slice at a
  // time): a new tensor where the slice has an adapter, else a view of the base weight's rows.
  at::Tensor merged_slice(size_t slice) const;

  const std::vector<LinearSlice>& slices() const { return slices_; }
  // [sum(out_i), in]: the base weight's shape.
  std::vector<int64_t> weight_sizes() const;
  bool has_adapter() const { return has_adapter_; }
  at::Tensor weight;               // frozen base, [sum(out_i), in]
  std::vector<at::Tensor> lora_a;  // per slice: [rank, in] or undefined
  std::vector<at::Tensor> lora_b;  // per slice: [out_i, rank] or undefined

 private:
  int64_t in_features_;
  std::vector<LinearSlice> slices_;
  std::vector<int64_t> out_sizes_;
  bool has_adapter_ = false;
  bool fused_ = true;
};
TORCH_MODULE(LoraLinear);

}  // namespace ftbench::model
