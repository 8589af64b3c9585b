#include "device/torch/memory_meter.h"

#include <sys/resource.h>

#include <algorithm>

#include "device/host_memory.h"

namespace ftbench::device {

MemoryMeter::MemoryMeter() {
  run_peak_rss_bytes_ = read_host_memory().peak_rss_bytes;
  host_peak_reset_ = reset_host_peak_rss();
}

MemoryReading MemoryMeter::end_phase() {
  MemoryReading m = backend_ != nullptr ? backend_->phase_memory() : MemoryReading{};
  const HostMemory host = read_host_memory();
  // Without a reset at the phase's start, VmHWM would be an older peak, not this phase's.
  if (host_peak_reset_) m.peak_rss_bytes = host.peak_rss_bytes;
  m.rss_at_end_bytes = host.rss_bytes;
  if (host.peak_rss_bytes) {
    run_peak_rss_bytes_ = std::max(run_peak_rss_bytes_.value_or(0), *host.peak_rss_bytes);
  }
  if (backend_ != nullptr) backend_->reset_peak_memory();
  host_peak_reset_ = host_peak_reset_ && reset_host_peak_rss();
  return m;
}

std::optional<int64_t> MemoryMeter::run_peak_rss_bytes() const {
  std::optional<int64_t> peak = run_peak_rss_bytes_;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    peak = std::max(peak.value_or(0), int64_t(usage.ru_maxrss) * 1024);
  }
  return peak;
}

}  // namespace ftbench::device
