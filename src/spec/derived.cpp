#include "ftbench/spec/derived.h"

#include <algorithm>

namespace ftbench::spec {

DerivedCounts derive_counts(const RunSpec& spec) {
  const TrainSpec& t = spec.train;
  return derive_counts_from_batches(
      spec, t.micro_batch_size > 0 ? spec.data.num_examples / t.micro_batch_size : 0);
}

DerivedCounts derive_counts_from_batches(const RunSpec& spec, int64_t micro_batches_per_epoch) {
  DerivedCounts d;
  const TrainSpec& t = spec.train;
  d.effective_batch = t.micro_batch_size * t.grad_accum_steps;
  d.micro_batches_per_epoch = micro_batches_per_epoch;
  d.steps_per_epoch = t.grad_accum_steps > 0 ? d.micro_batches_per_epoch / t.grad_accum_steps : 0;
  d.total_steps = d.steps_per_epoch * t.epochs;
  if (t.max_steps > 0) d.total_steps = std::min(d.total_steps, t.max_steps);
  d.max_tokens_per_step = d.effective_batch * spec.data.seq_len;
  return d;
}

}  // namespace ftbench::spec
