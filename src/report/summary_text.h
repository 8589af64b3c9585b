// The short human summary printed at the end of a run, and the other lines a run prints of what
// it measured. The report's types are only declared here: the run's code that prints them does
// not see the schema.
#pragma once

#include <string>
#include <vector>

#include "report/measurements.h"

namespace ftbench::report {

struct Report;
struct Energy;

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

// The lines `ftbench run` logs when it wrote a profile (--profile-steps): the window, the scopes,
// the first ops, the attention ops and the files.
std::vector<std::string> profile_summary_lines(const ProfileWritten& profile);

// 8030261248 -> "8,030,261,248".
std::string group_thousands(int64_t value);

}  // namespace ftbench::report
