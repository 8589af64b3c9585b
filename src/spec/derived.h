// Quantities that follow from a spec: batch sizes and step counts, in checked arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/run_spec.h"

namespace ftbench::spec {

struct DerivedCounts {
  int64_t effective_batch = 0;          // micro_batch_size * grad_accum_steps
  int64_t micro_batches_per_epoch = 0;  // floor(num_examples / micro_batch_size)
  int64_t steps_per_epoch = 0;          // floor(micro_batches_per_epoch / grad_accum_steps)
  int64_t total_steps = 0;              // steps_per_epoch * epochs, capped by max_steps
  int64_t max_tokens_per_step = 0;      // effective_batch * seq_len (upper bound, padded)
  bool capped_by_max_steps = false;     // train.max_steps cut the epochs' steps short
};

// A count that does not fit: the key to blame and why ("4 steps per epoch x ... epochs = ...").
struct CountIssue {
  std::string key_path;
  std::string message;
};

// The problems of the counts that follow from `spec` with `micro_batches_per_epoch` micro-batches
// in an epoch (nullopt: not known yet, as for a data file before it is read; the counts that do
// not depend on it are still checked): products that do not fit in 64 bits, and more than
// kMaxTotalSteps optimizer steps (spec/limits.h). Zero steps is not a problem here (the callers
// say how many examples made them).
std::vector<CountIssue> count_issues(const RunSpec& spec,
                                     std::optional<int64_t> micro_batches_per_epoch);

// Every optimizer step sees exactly effective_batch examples: a last partial micro-batch and
// micro-batches left over after the last full accumulation are dropped each epoch, so step
// times stay comparable (documented in docs/methodology.md). Throws SpecError (file
// spec.source_path) with count_issues() when there are any.
DerivedCounts derive_counts(const RunSpec& spec);

// The same from the micro-batches an epoch actually has (packing decides them only when the
// rows are packed): steps per epoch = floor(micro_batches_per_epoch / grad_accum_steps).
DerivedCounts derive_counts_from_batches(const RunSpec& spec, int64_t micro_batches_per_epoch);

}  // namespace ftbench::spec
