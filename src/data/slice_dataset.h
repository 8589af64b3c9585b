// A part of another data set, without copying it.
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace ftbench::data {

// A contiguous run of another data set's examples: the validation examples a last partial
// micro-batch would leave out, batched on their own.
class SliceDataset final : public Dataset {
 public:
  SliceDataset(const Dataset& base, int64_t first, int64_t count)
      : base_(base), first_(first), count_(count) {}
  int64_t size() const override { return count_; }
  const Example& at(int64_t index) const override { return base_.at(first_ + index); }
  std::string description() const override { return base_.description(); }

 private:
  const Dataset& base_;
  int64_t first_;
  int64_t count_;
};

}  // namespace ftbench::data
