// The report's records of what was measured: the one place where the measuring modules' own
// types (train's steps and fallbacks, device's facts, memory readings and energy readings)
// become the report's
// (report/report.h), so that a change to the schema stays here and in the report module. The run's
// report builder (report_builder.h) and report assembly (run/torch/report_assembly.h) build the
// report from these, and the gemm sweep its result's environment (bench/torch/gemm.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/energy_sampler.h"
#include "device/facts.h"
#include "device/memory_reading.h"
#include "report/report.h"
#include "train/train_result.h"

namespace ftbench::report {

// A step as the report records it, with the segment (the process) that ran it.
report::StepRecord step_record(const train::StepMeasurement& step, int64_t segment);
report::Fallback fallback_record(const train::MicroBatchFallback& fallback);
// Back, for a resumed run's trainer: the fallbacks its checkpoint's report records.
train::MicroBatchFallback measured_fallback(const report::Fallback& fallback);

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
report::Memory run_memory_record(const std::vector<report::Phase>& phases,
                                 std::optional<int64_t> run_peak_rss_bytes,
                                 const device::DeviceMemoryCounters& counters);

// The energy of a segment's steps from what its meter read (metrics::summarize_energy), or why
// none was measured.
report::Energy energy_record(const device::EnergyReadings& readings, int64_t segment,
                             const std::vector<report::StepRecord>& steps);

}  // namespace ftbench::report
