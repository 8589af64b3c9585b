// Out-of-memory fallback, the arithmetic and the test hook: how a step that ran out of memory
// is split into smaller micro-batches at the same effective batch, which error messages mean
// out of memory, and the simulated out-of-memory rule (FTBENCH_INJECT_OOM) that lets CI
// exercise the fallback on a CPU. Pure functions, no LibTorch; the trainer does the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace ftbench::train {

// How an optimizer step is split: micro_batch_size rows per forward/backward pass,
// grad_accum_steps passes per optimizer step.
struct MicroBatching {
  int64_t micro_batch_size = 1;
  int64_t grad_accum_steps = 1;
  int64_t effective_batch() const { return micro_batch_size * grad_accum_steps; }
  bool operator==(const MicroBatching& o) const {
    return micro_batch_size == o.micro_batch_size && grad_accum_steps == o.grad_accum_steps;
  }
};

// The split to fall back to after running out of memory at `current`: the largest divisor of
// the effective batch that is at most ceil(micro_batch_size / 2), with the accumulation that
// keeps the effective batch. An even micro-batch is exactly halved (4 x 4 -> 2 x 8); an odd
// one takes the nearest divisor at or below its rounded-up half (3 x 4 -> 2 x 6, 3 x 3 ->
// 1 x 9, 5 x 2 -> 2 x 5). Because the new size divides the effective batch, every step keeps
// exactly its examples (data/torch/batcher.h: micro-batch i of an epoch is rows [i*B, (i+1)*B)).
// nullopt at micro-batch 1, which cannot be split.
std::optional<MicroBatching> fallback_micro_batching(const MicroBatching& current);

// Whether a LibTorch error message says that an allocation failed: "out of memory" (CUDA, HIP,
// and other accelerators: "CUDA out of memory. Tried to allocate ...") or "can't allocate
// memory" (the CPU allocator: "DefaultCPUAllocator: can't allocate memory: ..."), or is an
// enforce message cut short before its location's "]" (LibTorch could not allocate the rest).
// Case-insensitive. Used for c10::Error values that are not typed c10::OutOfMemoryError.
bool is_out_of_memory_message(std::string_view message);

// Where a simulated out-of-memory error may be raised.
enum class OomSite {
  kForward,  // after a micro-batch's forward pass, before its backward (the graph is alive)
  kUpdate,   // in the optimizer update (AdamW step) of an optimizer step
};

// What the trainer knows at a site: compared against the rule's conditions.
struct OomSiteState {
  OomSite site = OomSite::kForward;
  int64_t step = 0;         // 1-based optimizer step
  int64_t micro_batch = 0;  // rows of the current micro-batch size
  int64_t micro_step = 0;   // kForward: 0-based micro-batch within the step
  int64_t tokens = 0;       // kForward: tokens of the micro-batch, padding included (B x S)
};

// A simulated memory limit, for tests: "cond,cond,...", every condition must hold. A condition
// is `KEY OP N` with KEY one of step, micro_batch, micro_step, tokens and OP one of >, >=, <,
// <=, =; or `at=forward` (default) / `at=update`. micro_step and tokens apply to at=forward
// only. Examples: "micro_batch>2" (a micro-batch of more than 2 rows does not fit),
// "tokens>256" (more than 256 tokens per micro-batch do not fit), "step=3,micro_batch>2,
// micro_step=1" (only the second micro-batch of step 3, while the micro-batch is over 2).
class OomInjection {
 public:
  // Throws std::invalid_argument naming the bad condition.
  static OomInjection parse(std::string_view rule);

  bool matches(const OomSiteState& state) const;
  const std::string& rule() const { return rule_; }

 private:
  struct Condition {
    std::string key;  // step, micro_batch, micro_step, tokens
    std::string op;   // >, >=, <, <=, =
    int64_t value = 0;
  };
  std::string rule_;
  OomSite site_ = OomSite::kForward;
  std::vector<Condition> conditions_;
};

// A step ran out of memory and could not be redone: fallback off, at micro-batch 1, out of
// fallbacks, or in the optimizer update. The message names the step and the micro-batch tried.
class OutOfMemoryFailure : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

}  // namespace ftbench::train
