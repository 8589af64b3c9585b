// The figures of a report's summary that its own steps determine (step-time statistics,
// throughput, shares, FLOPs and MFU, losses), recomputed from the steps as the run computed them
// (summary_of_steps) and held to what the report says, within rounding: a figure edited by hand
// (a mean of 0.2 s where the steps' is 0.103, a throughput 50 times the measured one) is refused
// before cost, compare, gate or report print it. The report module reads and checks what holds
// together without computing; the commands that read reports call this after reading.
#pragma once

#include <string>

#include "report/report.h"

namespace ftbench::metrics {

// Throws report::ReportError "<source>: <field path>: expected <formula> = <value>, found <value>"
// at the first figure that is not its steps'.
void check_summary_figures(const report::Report& report, const std::string& source);

}  // namespace ftbench::metrics
