// LibTorch's profiler (Kineto's collection: host operators with their input shapes and FLOP
// counts, and on a GPU the device's kernels and copies) around a window of training steps, as
// `ftbench run --profile-steps N[,M]` asks, with the scopes ftbench marks in its step
// (device/torch/profile_scopes.h). Torch side: built into ftbench_torch.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "report/metrics/profile_table.h"

namespace ftbench::metrics {

// Whether this LibTorch's profiler can record (false, with why, where it cannot: a build without
// the profiler's collection). Checked before a run spends time on the model.
struct ProfilerSupport {
  bool available = false;
  std::string why_not;
};
ProfilerSupport profiler_support();

// Records from the start of the window's first step to the end of its last. One at a time in a
// process (LibTorch's profiler is per process). Not thread-safe: the training thread calls it.
class StepProfiler {
 public:
  // `device_activity`: record the device's kernels and copies too (a CUDA or ROCm device).
  StepProfiler(ProfileWindow window, bool device_activity);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  const ProfileWindow& window() const { return window_; }
  bool recording() const { return recording_; }

  // Before step `step` (1-based) begins: starts recording at the window's first step.
  void step_begins(int64_t step);
  // After step `step` ended, the device synchronised: at the window's last step, stops and
  // returns the events recorded (nullopt otherwise).
  std::optional<std::vector<ProfileEvent>> step_ended(int64_t step);
  // Stops a recording the run ends in the middle of (a stop signal, an error): the events so
  // far, or nullopt when not recording.
  std::optional<std::vector<ProfileEvent>> stop();

 private:
  ProfileWindow window_;
  bool device_activity_ = false;
  bool recording_ = false;
};

}  // namespace ftbench::metrics
