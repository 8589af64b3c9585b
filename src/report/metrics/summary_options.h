// How a run's summary is computed (metrics::summarize_run in run_summary.h): the warm-up left out
// of the timing figures, the loss window, the MFU denominators and the steps the profiler
// recorded. The run sets them as it learns them; the report's schema is not needed for that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace ftbench::metrics {

struct SummaryOptions {
  int64_t warmup_steps = 0;  // leading steps left out of timing figures (not out of losses)
  int64_t loss_window = 1;
  std::optional<double> peak_tflops;
  std::string peak_source = "none";
  // The measured GEMM peak for the run's dtype (`ftbench run --gemm`): the second MFU
  // denominator, entries' mfu_gemm.
  std::optional<double> gemm_peak_tflops;
  std::string gemm_peak_source = "none";
  bool recompute = false;  // activation checkpointing was on: also give hardware-FLOP entries
  // Devices the job ran on (run.world_size): the steps' FLOPs are the job's, over every device,
  // so MFU is achieved / (peak x devices); peak_tflops stays one device's.
  int64_t devices = 1;
  // `ftbench run --profile-steps`: the steps (StepRecord::step) the profiler recorded, left out of
  // the timing figures as the warm-up is (summary.profiled_steps_excluded), unless that leaves
  // no step.
  std::optional<std::pair<int64_t, int64_t>> profiled_steps;
};

}  // namespace ftbench::metrics
