// The memory plan (economics/plan/memory.h) applied to the run on its device: the checkpointing
// policy model.activation_checkpointing auto picks, and the predicted peak the report puts beside
// the measured one.
#pragma once

#include <string>

#include "economics/plan/memory.h"
#include "report/measurements.h"
#include "run/torch/components.h"
#include "run/torch/run_context.h"
#include "run/torch/start_checks.h"

namespace ftbench::run::detail {

// The plan's options for this run's device, LibTorch and step. `checkpointing`: the policy the
// model was built with ("" before: the spec's).
plan::MemoryOptions run_memory_options(const RunContext& context, const Components& built,
                                       const std::string& checkpointing, bool fused_blocks);

// The spec's policy, or auto's choice by the memory plan on this device (a resumed run keeps
// the choice of the run it continues).
CheckpointingPolicy resolve_checkpointing(const RunContext& context, const StartState& start,
                                          const Components& built);

// The peak the plan predicts for the run and its basis (the report's
// memory.predicted_peak_bytes and prediction_basis); the reason when the plan cannot say.
void record_memory_prediction(const RunContext& context, const Components& built,
                              const std::string& checkpointing, report::Measured& measured);

}  // namespace ftbench::run::detail
