// The frozen base weights of a model cut into units (the embedding, each decoder block, the output
// head), each unit's tensors laid out in one flat buffer of its own, for a run that splits the
// base across ranks (train/dist/torch/sharded_base.h): a rank keeps a slice of each buffer and
// fills the whole buffer only while the unit computes.
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

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

namespace ftbench::model {

// The host memory of a model's split units, kept for the next gather as LibTorch's caching
// allocator keeps GPU memory: a unit gathered and released once per pass would otherwise either
// stay on the C library's heap for good (a block under its mmap threshold, which ftbench raises
// to 32 MiB: device/host_allocator.h), so that splitting saves no resident memory, or be mapped
// and unmapped each time (page faults, zeroing and TLB shootdowns: 5x slower gathers measured on
// the 2-core VM). At most `keep` free buffers of each size are kept; the rest go back to the
// kernel. Buffers outlive the pool safely (they are unmapped when freed after it). Thread safe.
class HostBufferPool : public std::enable_shared_from_this<HostBufferPool> {
 public:
  explicit HostBufferPool(std::size_t keep) : keep_(keep) {}
  ~HostBufferPool();
  HostBufferPool(const HostBufferPool&) = delete;
  HostBufferPool& operator=(const HostBufferPool&) = delete;

  // A buffer of `bytes` (page aligned), from the free ones or newly mapped. Throws
  // c10::OutOfMemoryError when it cannot be mapped.
  at::DataPtr take(std::size_t bytes);
  // Bytes mapped and not in use, kept for reuse.
  std::size_t free_bytes() const;

 private:
  friend struct PooledBuffer;
  // A buffer given back: kept when fewer than keep_ of its size are, else unmapped.
  void give_back(void* address, std::size_t bytes);

  const std::size_t keep_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
};

class BaseUnit {
 public:
  // Lays `tensors` (same dtype and device as `options`; their current values are dropped) out
  // with the shapes `sizes`, in one buffer of a length that `ranks` divides. The buffer starts
  // without memory (whole() is false).
  // On the host, the buffer's memory comes from `host_pool` (shared by the model's units).
  BaseUnit(std::vector<at::Tensor> tensors, const std::vector<std::vector<int64_t>>& sizes,
           int64_t ranks, at::TensorOptions options,
           std::shared_ptr<HostBufferPool> host_pool = nullptr);

  // Elements of the buffer: the tensors', the alignment gaps and the padding to a multiple of
  // the ranks.
  int64_t numel() const { return numel_; }
  int64_t bytes() const;
  bool whole() const;

  // Gives the buffer memory, uninitialised: the tensors may be written and read. Throws when the
  // memory cannot be had (an out-of-memory error). On the host it comes from the host pool, on a
  // GPU from the caching allocator.
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
  std::vector<std::pair<int64_t, int64_t>> gaps_;  // (first element, count): see zero_gaps()
  int64_t numel_ = 0;
  at::Tensor flat_;
  std::shared_ptr<HostBufferPool> host_pool_;
};

}  // namespace ftbench::model
