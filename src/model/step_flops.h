// The training FLOPs of one optimizer step under each counting, as the trainer counts them and
// the run summary turns them into MFU entries (run_summary.h).
#pragma once

namespace ftbench::model {

// Training FLOPs of one optimizer step under each counting (model::training_flops_per_token
// times the step's real tokens, micro-batch by micro-batch).
struct StepFlops {
  double lora_frozen_base = 0.0;
  double lora_frozen_base_recompute = 0.0;
  double six_n = 0.0;
  double six_n_recompute = 0.0;
  // What the hardware executes (model::FlopFormula::kExecuted): lora_frozen_base's GEMMs,
  // causal attention's half where the kernel skips the masked blocks, the recompute when on.
  double executed = 0.0;
};

}  // namespace ftbench::model
