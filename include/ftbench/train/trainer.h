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

// Called after every optimizer step, after the device synchronisation and timing. Its time is
// outside every step's wall_seconds (the next step's clock starts when it returns), so an
// evaluation pass run from it leaves the step times as they would be without it.
using StepCallback = std::function<void(const report::StepRecord&)>;

struct TrainResult {
  std::vector<report::StepRecord> steps;
  std::vector<metrics::StepFlops> flops;  // per step, every formula
};

// One validation pass (report::Evaluation without the step number).
struct EvalResult {
  double loss = 0.0;  // sum of token losses / loss_tokens; NaN when there are no loss tokens
  int64_t loss_tokens = 0;
  int64_t batches = 0;   // micro-batches run
  double seconds = 0.0;  // host steady clock, device synchronised at both ends
};

// Validation loss: forward passes only (torch::NoGradGuard, the model in eval mode so that
// adapter dropout is off, its previous mode restored afterwards) over the micro-batches of
// `batchers` in order, each in its epoch-1 order: batches 0..n-1 of the first, then of the
// second, and so on, at most `max_batches` in all (0: all). The loss is a mean over every loss
// token of the pass, not a mean of micro-batch means.
EvalResult evaluate(model::Llama& model, const std::vector<data::Batcher*>& batchers,
                    device::Backend& backend, int64_t max_batches);

// Whether a validation pass follows optimizer step `step` (1-based) of `total_steps`: every
// `every` steps when `every` > 0, and after the last step.
bool evaluation_due(int64_t step, int64_t total_steps, int64_t every);

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
