// The frozen base weights of a model cut into units (the embedding, each decoder block, the output
// head), each unit's tensors laid out in one flat buffer of its own, for a run that splits the
// base across ranks (dist/sharded_base.h): a rank keeps a slice of each buffer and fills the
// whole buffer only while the unit computes.
//
// The unit's tensors are the module's own parameters, re-pointed into the buffer: every module
// that reads `layer->qkv->weight` reads the buffer. While the unit is not whole (free()), the
// buffer has no memory: its tensors keep their shapes and must not be read. A tensor's values
// live in its rows of the buffer; autograd's saved views of a weight see the buffer refilled,
// because the storage object stays the same and only its memory comes and goes.
//
//   unit of a block, 2 ranks: [qkv.weight | o.weight | gate_up.weight | down.weight | pad]
//   each tensor starts at a multiple of 64 elements; the length is a multiple of 2 (the ranks)
//   rank 0 keeps the first half, rank 1 the second.
//
// Not thread safe; the memory of one unit is held by one rank's thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace ftbench::model {

class BaseUnit {
 public:
  // Lays `tensors` (same dtype and device as `options`; their current values are dropped) out
  // with the shapes `sizes`, in one buffer of a length that `ranks` divides. The buffer starts
  // without memory (whole() is false).
  BaseUnit(std::vector<at::Tensor> tensors, const std::vector<std::vector<int64_t>>& sizes,
           int64_t ranks, at::TensorOptions options);

  // Elements of the buffer: the tensors', the alignment gaps and the padding to a multiple of
  // the ranks.
  int64_t numel() const { return numel_; }
  int64_t bytes() const;
  bool whole() const;

  // Gives the buffer memory, uninitialised: the tensors may be written and read. Throws when the
  // memory cannot be had (an out-of-memory error).
  void allocate();
  // Zeroes the alignment gaps and the padding, which belong to no tensor: for a buffer filled
  // tensor by tensor (a gather fills all of it).
  void zero_gaps();
  // Takes the memory back (a no-op when there is none).
  void free();
  // The buffer as one flat tensor of numel() elements: what a gather fills. Valid to read only
  // while whole().
  at::Tensor flat() const { return flat_; }
  const std::vector<at::Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<at::Tensor> tensors_;
  int64_t element_bytes_ = 0;
  std::vector<std::pair<int64_t, int64_t>> gaps_;  // (first element, count): zeroed on allocate
  int64_t numel_ = 0;
  at::Tensor flat_;
};

}  // namespace ftbench::model
