// The report's energy section (report::Energy) from what the energy sampler read
// (energy.h): each device by its counter or by power, the totals, per step and per million
// tokens; or why nothing was measured. docs/methodology.md ("Energy") gives the rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/energy.h"
#include "report/report.h"

namespace ftbench::metrics {

// The report's energy from the readings of every device of the process: each device by its
// counter when it has one (by power when the counter covered no time but power did), the totals
// as report::Energy says. `steps` are the segment's optimizer steps (per step, per 1M real
// tokens); `error` is the last failed read's message, for `reason` when nothing was covered.
report::Energy summarize_energy(const std::vector<device::DeviceReadings>& devices,
                                double interval_seconds, int64_t segment,
                                const std::vector<report::StepRecord>& steps,
                                const std::string& error);

// The report's energy when nothing was measured: `reason` says why; steps and tokens counted.
report::Energy unmeasured_energy(const std::string& reason, double interval_seconds,
                                 int64_t segment, const std::vector<report::StepRecord>& steps);

}  // namespace ftbench::metrics
