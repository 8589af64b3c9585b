#include "report/metrics/memory_peaks.h"

#include <algorithm>
#include <optional>

namespace ftbench::metrics {
namespace {

void keep_max(std::optional<int64_t>& peak, const std::optional<int64_t>& value) {
  if (value) peak = std::max(peak.value_or(*value), *value);
}

}  // namespace

report::Memory memory_peaks_over_phases(const std::vector<report::Phase>& phases) {
  report::Memory out;
  for (const report::Phase& phase : phases) {
    if (!phase.memory) continue;
    const report::PhaseMemory& m = *phase.memory;
    keep_max(out.peak_allocated_bytes, m.peak_allocated_bytes);
    keep_max(out.peak_reserved_bytes, m.peak_reserved_bytes);
    keep_max(out.peak_active_bytes, m.peak_active_bytes);
    keep_max(out.device_used_peak_bytes, m.device_used_peak_bytes);
    keep_max(out.peak_rss_bytes, m.peak_rss_bytes);
  }
  return out;
}

}  // namespace ftbench::metrics
