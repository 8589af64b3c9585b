// The training loop: gradient accumulation, clipping, AdamW over the adapters, LR schedule,
// and one StepRecord per optimizer step.
#pragma once

#include <functional>
#include <vector>

#include "ftbench/data/batcher.h"
#include "ftbench/device/backend.h"
#include "ftbench/metrics/run_summary.h"
#include "ftbench/model/llama.h"
#include "ftbench/report/report.h"
#include "ftbench/spec/run_spec.h"

namespace ftbench::train {

// Called after every optimizer step, after the device synchronisation and timing.
using StepCallback = std::function<void(const report::StepRecord&)>;

struct TrainResult {
  std::vector<report::StepRecord> steps;
  std::vector<metrics::StepFlops> flops;  // per step, every formula
};

class Trainer {
 public:
  // The objects must outlive the trainer. The model's adapters must be initialised.
  Trainer(const spec::RunSpec& spec, model::Llama& model, data::Batcher& batcher,
          device::Backend& backend);

  // Runs spec.train's optimizer steps (derive_counts().total_steps), appending one record per
  // finished step to `result` as it goes, so a step that throws (out of memory, a callback)
  // leaves the earlier ones there. Timing of a step: host steady clock from the end of the
  // previous step (device synchronised) to the end of this one (device synchronised), so
  // nothing queued is missed or double counted.
  void run(TrainResult& result, const StepCallback& on_step);

 private:
  const spec::RunSpec& spec_;
  model::Llama& model_;
  data::Batcher& batcher_;
  device::Backend& backend_;
};

}  // namespace ftbench::train
