// The run summary computed from raw step records. Pure, so every figure can be recomputed
// from the report by hand (docs/report-schema.md, docs/methodology.md).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/step_flops.h"
#include "report/metrics/summary_options.h"
#include "report/report.h"

namespace ftbench::metrics {

// The steps left out of timing figures as the warm-up: the first `warmup_steps` of each segment
// (true), or none when that leaves no step.
std::vector<bool> warmup_mask(const std::vector<report::StepRecord>& steps, int64_t warmup_steps);

// Adds to `excluded` the steps numbered first..last (StepRecord::step) that it leaves in, unless
// that would leave no step in; returns how many it added.
int64_t exclude_profiled_steps(const std::vector<report::StepRecord>& steps,
                               std::pair<int64_t, int64_t> profiled, std::vector<bool>& excluded);

// The steps a report's summary left out of its timing figures: the warm-up its summary left out
// (the spec's train.timing_warmup_steps per segment, none when summary.warmup_steps_excluded is
// 0, and the first summary.warmup_steps_excluded steps when the two disagree: a report edited by
// hand), and the profiled steps (profile.first_step to profile.last_step) when
// summary.profiled_steps_excluded is not 0.
std::vector<bool> warmup_mask(const report::Report& report);

// Timing figures use the steps after the warm-up, which is left out of each segment (the first
// warmup_steps steps of every process of a resumed run); if no step is left, they use every
// step and warmup_steps_excluded says 0.
report::Summary summarize_run(const std::vector<report::StepRecord>& steps,
                              const std::vector<model::StepFlops>& flops,
                              const SummaryOptions& options);

// The summary that `report`'s own steps give, for the reader to hold the report's against
// (report/report_consistency.cpp) and for tests that edit steps: report.summary with every
// figure the steps determine recomputed as summarize_run computes it, over the steps that
// warmup_mask(report) leaves in. Kept as found: the warm-up count (the mask is the summary's),
// the peaks and their sources, the entries' formulas and, but for the frozen-base LoRA count
// that the steps record (model_flops), their flops_per_step; summary.loss.window clamped to
// 1..steps as the run clamps it. MFU is over report.world_size devices.
report::Summary summary_of_steps(const report::Report& report);

}  // namespace ftbench::metrics
