// The report's records of what was measured: the one place where the measuring modules' own
// types (train's steps and fallbacks, device's facts, memory and energy readings, and the run's
// measurements, measurements.h) become the report's (report/report.h), so that a change to the
// schema stays here and in the report module. The run's report builder (report_builder.h) and its
// assembly (run/torch/report_assembly.h) build the report from these, and the gemm sweep its
// result's environment (bench/torch/gemm.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/energy_sampler.h"
#include "device/facts.h"
#include "device/memory_reading.h"
#include "model/step_flops.h"
#include "report/measurements.h"
#include "report/report.h"
#include "train/train_result.h"

namespace ftbench::report {

// A step as the report records it, with the segment (the process) that ran it.
report::StepRecord step_record(const train::StepMeasurement& step, int64_t segment);
report::Fallback fallback_record(const train::MicroBatchFallback& fallback);
// Back, for a resumed run's trainer: the fallbacks its checkpoint's report records.
train::MicroBatchFallback fallback_from_report(const report::Fallback& fallback);

report::HostInfo host_record(const device::HostFacts& host);
report::DeviceInfo device_record(const device::DeviceFacts& device);
report::SoftwareInfo software_record(const device::SoftwareFacts& software);
// The environment section: host, device, software and the allow-listed variables set.
report::Environment environment_record(const device::EnvironmentFacts& environment);

// A phase's memory.
report::PhaseMemory phase_memory_record(const device::MemoryReading& reading);
// The run's memory: the largest peak of each kind any phase measured
// (metrics::memory_peaks_over_phases), the host's peak resident size over the whole run, and the
// device's counters.
report::Memory run_memory_record(const std::vector<TimedPhase>& phases,
                                 std::optional<int64_t> run_peak_rss_bytes,
                                 const device::DeviceMemoryCounters& counters);

// The energy of a segment's steps from what its meter read (metrics::summarize_energy), or why
// none was measured.
report::Energy energy_record(const device::EnergyReadings& readings, int64_t segment,
                             const std::vector<report::StepRecord>& steps);

// What the run measured (measurements.h), each as the report records it.
report::Phase phase_record(const TimedPhase& phase);
report::Evaluation evaluation_record(const EvaluationPass& pass);
report::CheckpointSave checkpoint_record(const CheckpointWrite& write);
report::ExportRecord export_record(const ExportWrite& write);
report::InputFile input_file_record(const FileRead& file);
// The data section: the data set's counts and fingerprint, its statistics (a data file's reader
// counts, the lengths, the share of tokens without loss), the validation set and the files read.
report::DataInfo data_record(const DataRead& data);
report::WeightsInfo weights_record(const WeightsRead& weights);
report::CheckpointingChoice checkpointing_choice_record(const CheckpointingNeeds& needs);
// Back, for a resumed run: auto's choice as the checkpoint's report records it.
CheckpointingNeeds checkpointing_needs_from_report(const report::CheckpointingChoice& choice);
report::Execution execution_record(const ExecutionChoices& execution);
// Back, for a resumed run: how the checkpoint's run ran its steps.
ExecutionChoices execution_from_report(const report::Execution& execution);
// The profile's record: the window, the totals, the scopes, the first 12 ops by self time and
// the attention ops that ran.
report::Profile profile_record(const ProfileWritten& profile);

// What a resumed run carries over from the processes before it (run/torch/start_checks.h reads
// it from the checkpoint's report and the segment journal); none for a fresh run.
struct EarlierSegments {
  std::vector<report::Segment> segments;
  std::vector<report::StepRecord> steps;  // numbered by their segments
  std::vector<model::StepFlops> flops;    // one a step, as the checkpoint kept them
  std::vector<report::Evaluation> evaluations;
  std::vector<report::CheckpointSave> checkpoints;
  std::string resumed_from;  // the checkpoint folder
};

// The report's sections that only the run's devices fill, read by the run (it holds the backend)
// for an assembly.
struct DeviceSections {
  report::Environment environment;
  report::Memory memory;
  std::optional<int64_t> intra_op_threads;  // unset before the backend is up
};

}  // namespace ftbench::report
