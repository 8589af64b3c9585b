// The report's bound on an external start, apart from report.h so that the process clock can
// check it without the whole report.
#pragma once

namespace ftbench::report {

// The most an external start (`run --t0`, FTBENCH_T0: instance boot, image pull, queueing) may lie
// before the process start. Set-up takes minutes to days; a start weeks before, or before 2000,
// or after the process start, is a wrong clock or a wrong number, and would be billed. A report
// whose run began earlier than this before its process is refused.
inline constexpr double kMaxExternalStartSeconds = 30.0 * 24.0 * 3600.0;

}  // namespace ftbench::report
