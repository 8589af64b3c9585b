// Figures of a report that cannot all be true are refused, naming the field, so that no command
// prints a figure from such a report (docs/report-schema.md, Consistency). Single fields first,
// then what ties them together.
#pragma once

#include <string>

#include "ftbench/report/report.h"

namespace ftbench::report::detail {

// Throws ReportError "<source>: <field path>: <what is wrong>" at the first problem.
void check_consistency(const Report& report, const std::string& source);

}  // namespace ftbench::report::detail
