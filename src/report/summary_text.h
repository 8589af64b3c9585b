// The short human summary printed at the end of a run.
#pragma once

#include <string>

#include "report/report.h"

namespace ftbench::report {

// A few aligned lines: what ran where, time to first step, step time, throughput, MFU, memory,
// loss and where the report went. Numbers in the "C" locale.
std::string render_summary(const Report& report, const std::string& report_path);

// "" unless the run asked for a timing warm-up (spec train.timing_warmup_steps) and had no step
// after it, so that its timing figures are over every step, cold ones included:
// "no step is after the 5 warm-up steps, so the timed steps include the cold ones".
std::string warmup_caveat(const Report& report);

// The energy line: "2835.0 J, 708.75 J/step, 7.1 kJ per 1M tokens; mean 630.0 W, peak
// 700.0 W (energy counter: nvmlDeviceGetTotalEnergyConsumption; 46 samples every 100 ms,
// 100.0% of 4.50 s)", or "n/a: <reason>".
std::string energy_text(const Energy& energy);

// "" when the report's measured energy covers every step the report keeps (or none was
// measured); else what it covers, for every printer that shows the energy beside the run's
// other figures: "process 2 of 2 only: 4 of 8 steps" (a resumed run measures its last process).
std::string energy_scope(const Report& report);

// 8030261248 -> "8,030,261,248".
std::string group_thousands(int64_t value);
// 1536 -> "1.50 KiB"; bytes below 1 KiB as "512 B".
std::string format_bytes(int64_t bytes);

}  // namespace ftbench::report
