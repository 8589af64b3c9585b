// What every part of one `ftbench run` process reads (RunContext: the options, the clock, the
// stop signals, the job's fingerprint and folders) and what they fill together (RunMeasurements:
// the measurements and the report builder that maps them, the phase timer, the summary's
// options, the steps measured so far). The
// driver (run_driver.h) owns both; the components, the training loop and the observers are
// handed them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "device/process_clock.h"
#include "device/torch/memory_meter.h"
#include "report/metrics/summary_options.h"
#include "report/report_builder.h"
#include "run/run_benchmark.h"
#include "run/torch/phase_timer.h"
#include "train/stop_signals.h"
#include "train/train_result.h"

namespace ftbench::run::detail {

struct RunContext {
  RunContext(const RunOptions& options, const device::ProcessClock& clock,
             const train::StopSignals& signals);

  const RunRequest& request;
  const Instrumentation& instrumentation;
  const TestHooks& test_hooks;
  const spec::RunSpec& spec;
  const device::ProcessClock& clock;
  const train::StopSignals& signals;
  const std::string spec_fingerprint;
  const std::string checkpoint_dir;  // train.checkpoint.dir
  const std::string adapter_dir;     // output.adapter ("" for none)
  const std::string merged_dir;      // output.merged ("" for none)

  // Rank 0 (or the only process): the one that writes the report, checkpoints and exports.
  bool lead() const { return request.launch.rank == 0; }
  bool distributed() const { return request.launch.distributed(); }
};

// What the phases measure, as they measure it: the measurements the report builder maps into
// the report (`measurements`, the builder's), the phase timer and the memory meter, the summary's
// options, and the steps.
struct RunMeasurements {
  explicit RunMeasurements(const device::ProcessClock& clock) : builder(clock) {}

  report::ReportBuilder builder;
  report::Measured& measurements = builder.measured();
  // Into measurements.phases, from the run's start (record_start).
  std::optional<PhaseTimer> phases;
  std::optional<device::MemoryMeter> memory;
  metrics::SummaryOptions summary;
  // Filled step by step, so that a run that fails part-way still reports what it measured.
  train::TrainResult result;
};

// The last optimizer step this process made: the last of `result`, else `first_step` - 1.
inline int64_t last_step_made(const train::TrainResult& result, int64_t first_step) {
  return result.steps.empty() ? first_step - 1 : result.steps.back().step;
}

}  // namespace ftbench::run::detail
