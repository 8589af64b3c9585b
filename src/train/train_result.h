// What a process's training measured, step by step: filled by the trainer as it goes, so that a
// run that fails part-way still reports what it measured; read by the run's recorder.
#pragma once

#include <cstdint>
#include <vector>

#include "metrics/run_summary.h"
#include "report/report.h"

namespace ftbench::train {

struct TrainResult {
  std::vector<report::StepRecord> steps;
  std::vector<metrics::StepFlops> flops;  // per step, every formula
  // Out-of-memory fallbacks in order, appended as they happen (a run that then fails keeps
  // them), and the split in effect after the last one (the batcher's and the spec's before).
  std::vector<report::Fallback> fallbacks;
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
