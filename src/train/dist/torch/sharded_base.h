// A frozen base split across the ranks of a group (distributed.shard_base): each rank keeps one
// slice of every unit's buffer (model/torch/base_units.h) and gathers a unit whole only while it
// computes, as FSDP does for the frozen weights of a LoRA run: gathered for the forward, again
// for the backward, released after each; the adapters stay whole on every rank and their
// gradients are summed as in plain data parallel. The next unit of a pass is gathered while the
// current one computes (Gloo's thread on CPU, NCCL's stream on GPUs), so at most two units are
// whole at once.
//
//   2 blocks, 2 ranks, one micro-batch of a training step, untied frozen head, adapters on the
//   blocks: gathers embedding, block 0, block 1, head, block 1, block 0: two per block.
//
// Every rank of the group must make the same passes (model::BaseGathers): a gather out of the
// pass's order is refused (std::logic_error) rather than left to meet another rank's gather of
// another unit. Not thread safe: one thread at a time (the autograd engine's included).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "model/base_gathers.h"
#include "model/torch/base_units.h"
#include "train/dist/torch/communicator.h"

namespace ftbench::dist {

class ShardedBase final : public model::BaseGathers {
 public:
  // Splits `units` (laid out for group.size() ranks; they outlive this) over `group` (outlives
  // this): rank r keeps elements [r x n/size, (r + 1) x n/size) of each unit's buffer.
  ShardedBase(Communicator& group, std::vector<model::BaseUnit>& units);
  ~ShardedBase() override;  // waits for gathers still running
  ShardedBase(const ShardedBase&) = delete;
  ShardedBase& operator=(const ShardedBase&) = delete;

  // Unit `unit` was just filled whole (every rank with the same values: initialised from the
  // same seed or read from the same checkpoint): keeps this rank's slice and frees the rest.
  void keep_shard(int64_t unit);

  void begin_pass(const std::vector<int64_t>& order) override;
  void gather(int64_t unit) override;
  void release(int64_t unit) noexcept override;
  // A failure here (out of memory again, a peer gone) throws CollectiveError: the ranks can no
  // longer be kept in step.
  void complete_pass() override;

  // calls: gathers made; bytes: whole units assembled (this rank's memory after each gather);
  // blocked_seconds: host time waiting for gathers to arrive (what the prefetch did not hide).
  const CollectiveStats& stats() const { return stats_; }
  // Bytes of the slices this rank keeps, every unit together.
  int64_t shard_bytes() const;
  int64_t ranks() const { return group_.size(); }
  // A testing aid: called before a unit is given memory for a gather, and may throw as an
  // allocation that runs out of memory would (tests/train/dist/torch/sharded_base_test.cpp).
  void set_before_allocate(std::function<void(int64_t unit)> check) {
    before_allocate_ = std::move(check);
  }

 private:
  enum class State { kEmpty, kInFlight, kWhole };
  // Gives unit `unit` memory and starts its gather (a no-op unless it is empty).
  void start(int64_t unit);
  // Waits for unit `unit`'s gather (started if need be), counting the wait.
  void finish(int64_t unit);
  std::size_t index(int64_t unit) const;

  Communicator& group_;
  std::vector<model::BaseUnit>& units_;
  std::vector<at::Tensor> shards_;  // this rank's slice of each unit
  std::vector<State> states_;
  std::vector<std::unique_ptr<PendingGather>> pending_;
  std::vector<int64_t> order_;  // the pass in progress
  std::size_t next_ = 0;        // its next unit
  CollectiveStats stats_;
  std::function<void(int64_t unit)> before_allocate_;
};

}  // namespace ftbench::dist
