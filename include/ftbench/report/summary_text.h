// The short human summary printed at the end of a run.
#pragma once

#include <string>

#include "ftbench/report/report.h"

namespace ftbench::report {

// A few aligned lines: what ran where, time to first step, step time, throughput, MFU, memory,
// loss and where the report went. Numbers in the "C" locale.
std::string render_summary(const Report& report, const std::string& report_path);

// 8030261248 -> "8,030,261,248".
std::string group_thousands(int64_t value);
// 1536 -> "1.50 KiB"; bytes below 1 KiB as "512 B".
std::string format_bytes(int64_t bytes);

}  // namespace ftbench::report
