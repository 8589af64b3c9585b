// Figures of a report that cannot all be true are refused, naming the field, so that no command
// prints a figure from such a report (docs/report-schema.md, Consistency). Single fields first,
// then what ties them together.
#pragma once

#include <string>

#include "report/report.h"

namespace ftbench::report::detail {

// Throws ReportError "<source>: <field path>: <what is wrong>" at the first problem.
// `run_may_be_unfinished`: the partial report of a checkpoint, whose run.status may be
// "unfinished" (the run went on after the save).
void check_consistency(const Report& report, const std::string& source,
                       bool run_may_be_unfinished = false);

}  // namespace ftbench::report::detail
