// What a process's training measured, step by step: filled by the trainer as it goes, so that a
// run that fails part-way still reports what it measured. These are the trainer's own types: the
// report builder (report/records.h) maps them into the report's records
// (report::StepRecord, report::Fallback), so that a change to the report's schema does not reach
// the trainer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/step_flops.h"

namespace ftbench::train {

// One optimizer step, as measured.
struct StepMeasurement {
  int64_t step = 0;           // 1-based, over the whole run (a resumed run goes on counting)
  int64_t epoch = 0;          // 1-based
  double wall_seconds = 0.0;  // host steady clock, device synchronised at both ends
  double data_wait_seconds = 0.0;
  int64_t real_tokens = 0;    // non-padding tokens fed to the model
  int64_t padded_tokens = 0;  // tokens computed including padding
  int64_t loss_tokens = 0;    // tokens the loss is taken over
  double loss = 0.0;          // mean token loss of the step
  double lr = 0.0;
  double grad_norm = 0.0;    // global L2 norm of trainable gradients before clipping
  double model_flops = 0.0;  // frozen-base LoRA count, for this step's real tokens
};

// One out-of-memory fallback: the step ran out of memory at one micro-batch split and was
// redone from its start at a smaller one, at the same effective batch.
struct MicroBatchFallback {
  int64_t step = 0;  // the optimizer step (1-based) that ran out of memory and was redone
  int64_t from_micro_batch_size = 0;
  int64_t from_grad_accum_steps = 0;
  int64_t to_micro_batch_size = 0;
  int64_t to_grad_accum_steps = 0;
  // From the failed attempt's start (the step's clock start) to the restart of the step at the
  // new split: the failed attempt, freeing its memory and rebuilding the data pipeline. In no
  // step's wall_seconds.
  double seconds_lost = 0.0;
  std::string error;  // first line of the out-of-memory error
};

struct TrainResult {
  std::vector<StepMeasurement> steps;
  std::vector<model::StepFlops> flops;  // per step, every formula
  // Out-of-memory fallbacks in order, appended as they happen (a run that then fails keeps
  // them), and the split in effect after the last one (the batcher's and the spec's before).
  std::vector<MicroBatchFallback> fallbacks;
  int64_t micro_batch_size = 0;
  int64_t grad_accum_steps = 0;
  // Updates the optimizer applied, read from its own state when the run finished (AdamW's
  // per-parameter step count, the smallest over the parameters): total_steps less fp16 steps
  // skipped for overflow. 0 until the last step finished.
  int64_t optimizer_updates = 0;
  // Data parallel: this rank's host time blocked in collectives in each of `steps`, and the
  // collectives' bytes and calls in them together (zero for one process).
  std::vector<double> collective_seconds;
  int64_t collective_bytes = 0;
  int64_t collective_calls = 0;
  // A split base: its gathers in those steps (their waits are in collective_seconds too): how
  // many, the bytes of the units they assembled, and the host time waiting for them.
  int64_t gather_calls = 0;
  int64_t gather_bytes = 0;
  double gather_seconds = 0.0;
};

}  // namespace ftbench::train
