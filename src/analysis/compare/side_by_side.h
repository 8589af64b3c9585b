// The figures of several reports side by side, each set against the first (the baseline).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "economics/cost/billing.h"
#include "economics/cost/estimate.h"
#include "report/report.h"
#include "util/stats/mann_whitney.h"

namespace ftbench::compare {

// Largest gap between two smoothed loss curves. Smoothing: trailing mean over the last `window`
// finite losses up to each step (fewer at the start). Compared at the step numbers both runs
// reached, after `skip_steps`; steps whose loss is not finite in either run are left out.
struct LossGap {
  double max_abs_gap = 0.0;
  int64_t at_step = 0;  // 0 when no step was compared
  int64_t steps_compared = 0;
};
LossGap loss_curve_gap(const std::vector<report::StepRecord>& a,
                       const std::vector<report::StepRecord>& b, int64_t window,
                       int64_t skip_steps);

// The trailing-mean smoothing used above, exposed for tests: out[i] = mean of the finite losses
// among steps[max(0, i - window + 1) .. i]; NaN where none is finite.
std::vector<double> smooth_losses(const std::vector<report::StepRecord>& steps, int64_t window);

// One report's column.
struct Column {
  std::string label;   // "A", "B", ...
  std::string source;  // the file it was read from
  std::string run_name;
  std::string gpu;      // environment.device.name
  std::string backend;  // environment.device.backend
  int64_t gpus = 1;
  cost::RunTimes times;
  double step_p50_seconds = 0.0;  // summary.step_seconds (measured steps, after warm-up)
  double step_p90_seconds = 0.0;
  int64_t measured_steps = 0;
  std::optional<double> mfu;  // first entry of summary.mfu
  std::string mfu_formula;
  // The measured GEMM peak for the run's dtype (summary.mfu.gemm_peak_tflops, since 1.2), and
  // the first entry's MFU against it; unset when the report carries none.
  std::optional<double> gemm_peak_tflops;
  std::optional<double> mfu_gemm;
  std::optional<int64_t> peak_memory_bytes;
  std::string peak_memory_kind;  // "allocated (device)" or "RSS (host)"
  // The memory plan's prediction the report carries (schema 1.10) and its error against the
  // measured tensor peak (predicted / measured - 1); unset when either is missing.
  std::optional<int64_t> predicted_peak_bytes;
  std::optional<double> prediction_error;
  // GPU board energy (report energy, since 1.6); unset figures: energy_reason says why.
  std::optional<double> energy_joules;
  std::optional<double> energy_joules_per_million_tokens;
  std::optional<double> energy_mean_watts;
  std::string energy_method;
  std::string energy_reason;
  std::string energy_scope;  // report::energy_scope: "" when it covers the whole run
  double final_loss = 0.0;   // summary.loss.mean_last (NaN when not finite)
  int64_t loss_window = 0;

  std::optional<cost::Rate> rate;
  std::optional<cost::Cost> cost;

  // Against the baseline (unset in the baseline's own column).
  std::optional<double> run_time_ratio;    // this run_seconds / baseline run_seconds
  std::optional<double> throughput_ratio;  // this tokens/s / baseline tokens/s
  std::optional<double> step_p50_change;   // (this p50 - baseline p50) / baseline p50
  std::optional<double> cost_ratio;        // this billed cost / baseline billed cost
  // this energy per 1M tokens / baseline's; unset unless both measured it.
  std::optional<double> energy_per_token_ratio;
  // The hourly rate per GPU at which this run would cost what the baseline cost, under this
  // run's billing rules.
  std::optional<double> break_even_usd_per_gpu_hour;
  std::optional<stats::MannWhitneyResult> step_test;  // measured step times vs baseline
  // Against a baseline on another number of the same devices: throughput_ratio x base gpus /
  // gpus, the share of linear speed-up kept. `scaling` says which kind: "strong" (the same job,
  // the same effective batch, spread over more devices) or "weak" (the same batch per device);
  // both unset for reports on other devices, the same device count, or neither batch kept.
  std::optional<double> scaling_efficiency;
  std::string scaling;
  // How the run's ranks share a host's cores (CPU: ranks x intra-op threads beyond its logical
  // cores) or a device: "2 ranks x 2 threads on the 2 logical cores of one host"; "" when they
  // do not, or the report does not say.
  std::string shared_cores;
  // Why there is no scaling figure against a baseline on another number of the same devices:
  // "ranks share cores: ..." when this run's ranks got fewer cores each than the baseline's
  // (docs/cost-and-compare.md); "" otherwise.
  std::string scaling_caveat;
  // report::warmup_caveat(): the timed steps include the cold warm-up ("" when they do not).
  std::string warmup_caveat;
  std::optional<LossGap> loss_gap;
};

struct SideBySideOptions {
  // One per report, or empty: costs are then left out.
  std::vector<std::optional<cost::Rate>> rates;
  // Loss curves are compared after this many steps; nullopt: the larger of the reports'
  // lr warm-up steps and timing warm-up steps.
  std::optional<int64_t> loss_skip_steps;
  // Smoothing window; nullopt: the baseline's train.loss_window.
  std::optional<int64_t> loss_window;
  std::vector<std::string> sources;  // file names, one per report (may be empty)
};

std::vector<Column> side_by_side(const std::vector<report::Report>& reports,
                                 const SideBySideOptions& options);

}  // namespace ftbench::compare
