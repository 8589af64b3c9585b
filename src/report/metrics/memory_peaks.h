// Whole-run memory peaks from the per-phase ones. Each phase's peaks were reset when it began
// and include what was already held then, so the largest phase peak is the run's peak.
#pragma once

#include <vector>

#include "report/report.h"

namespace ftbench::metrics {

// peak_allocated_bytes, peak_reserved_bytes, peak_active_bytes, device_used_peak_bytes and
// peak_rss_bytes: the largest value any phase measured; unset when none measured it. The other
// fields (device total, retries, OOMs) are left unset for the caller.
report::Memory memory_peaks_over_phases(const std::vector<report::Phase>& phases);

}  // namespace ftbench::metrics
