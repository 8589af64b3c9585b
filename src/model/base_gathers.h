// How a model whose frozen base is split across ranks (base_units.h) has each unit whole while
// it computes. The model says at the start of a pass which units it will ask for, in order;
// then asks for each (gather) and gives it back (release) in that order. Every rank of the group
// makes the same passes, so the gathers of all ranks meet in the same order; the implementation
// (train/dist/torch/sharded_base.h) may start the next unit's gather before the current one
// computes.
//
// A pass of one micro-batch in training, 2 blocks with adapters, untied head without one:
//   embedding, block 0, block 1, head (forward), block 1, block 0 (backward)
#pragma once

#include <cstdint>
#include <vector>

namespace ftbench::model {

class BaseGathers {
 public:
  virtual ~BaseGathers() = default;
  // A pass over the model begins; `order` lists the units it will gather, in order. The pass
  // before must be complete.
  virtual void begin_pass(const std::vector<int64_t>& order) = 0;
  // Unit `unit` is whole until release(unit); it must be the pass's next unit. Blocks until it
  // is there; throws when the gather fails.
  virtual void gather(int64_t unit) = 0;
  // The unit's whole weights are no longer needed (it keeps its own slice). Never throws.
  virtual void release(int64_t unit) noexcept = 0;
  // Makes what is left of the pass's gathers without computing (each released at once): a rank
  // that stopped part-way (out of memory) keeps meeting its peers' gathers. A no-op when the
  // pass is complete.
  virtual void complete_pass() = 0;
};

}  // namespace ftbench::model
