// `ftbench run --profile-steps N[,M]`: LibTorch's profiler over a window of steps (rank 0's),
// started before the window's first step and written after its last, or when the run ends
// inside it (run/profile_outputs.h: the Chrome trace and the op and kernel tables); the
// profiled steps are left out of the summary's timing figures.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "report/metrics/step_profiler.h"
#include "run/torch/components.h"
#include "run/torch/run_context.h"
#include "run/torch/start_checks.h"

namespace ftbench::run::detail {

// The window against the run's `total_steps` (0: not counted yet, a data file's) and a resumed
// run's first step; BadInput otherwise.
void check_profile_window(const RunContext& context, const StartState& start, int64_t total_steps);

class StepProfile {
 public:
  // Without --profile-steps, or on a rank other than 0, it records nothing.
  StepProfile(const RunContext& context, const StartState& start, RunMeasurements& measured,
              Components& built);
  // The trainer's hook into the profiler goes with it.
  ~StepProfile();
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  // After each step: the profile is written once the window's last step ended.
  void step_ended(int64_t step);
  // The run ends (fails or stops) after `last_step`: a window being recorded is written with
  // the steps it holds.
  void end_early(int64_t last_step) noexcept;

 private:
  void write(std::vector<metrics::ProfileEvent> events, int64_t last_step) noexcept;

  const RunContext& context_;
  const StartState& start_;
  RunMeasurements& measured_;
  Components& built_;
  std::unique_ptr<metrics::StepProfiler> profiler_;
};

}  // namespace ftbench::run::detail
