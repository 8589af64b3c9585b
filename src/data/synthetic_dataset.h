// A deterministic instruction-like data set generated from the spec's data section.
//
// Each example is "### Instruction: Repeat the words ... ### Response:" followed by the same
// words again: a copy task that a small model learns, so loss falls. Lengths follow the
// spec's distribution exactly (in tokens, BOS and EOS included). Generation depends only on
// (seed, index), through a portable generator, so every machine sees the same tokens.
#pragma once

#include <memory>

#include "data/dataset.h"
#include "data/tokenizer.h"
#include "spec/run_spec.h"

namespace ftbench::data {

class SyntheticDataset final : public Dataset {
 public:
  SyntheticDataset(const spec::DataSpec& spec, const Tokenizer& tokenizer);
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  const Example& at(int64_t index) const override { return examples_.at(index); }
  std::string description() const override { return description_; }

 private:
  std::vector<Example> examples_;
  std::string description_;
};

// The length in tokens of example `index` under `spec` (BOS and EOS included).
int64_t synthetic_example_length(const spec::DataSpec& spec, int64_t index);

}  // namespace ftbench::data
