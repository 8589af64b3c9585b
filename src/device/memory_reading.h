// What the device module reads of memory: a period's (a phase's) peaks, host and device, and
// the device's counters over the whole run. The run's report builder (report/records.h)
// maps them into the report's memory records (report::PhaseMemory, report::Memory). Unset: not
// measured (a CPU has no device figures).
#pragma once

#include <cstdint>
#include <optional>

namespace ftbench::device {

// Memory over one period. Peaks are reset when it starts, so each covers that period alone
// (plus what was already held when it started).
struct MemoryReading {
  std::optional<int64_t> peak_allocated_bytes;    // caching allocator (GPU)
  std::optional<int64_t> peak_reserved_bytes;     // caching allocator (GPU)
  std::optional<int64_t> peak_active_bytes;       // caching allocator (GPU)
  std::optional<int64_t> device_used_peak_bytes;  // device-wide used, sampled (GPU)
  std::optional<int64_t> peak_rss_bytes;          // host, when the peak could be reset
  std::optional<int64_t> rss_at_end_bytes;        // host, resident when the period ended
};

// The device's figures over the whole run (GPU; unset on CPU).
struct DeviceMemoryCounters {
  std::optional<int64_t> device_total_bytes;
  std::optional<int64_t> allocation_retries;  // allocations retried after freeing the cache
  std::optional<int64_t> oom_count;           // allocations that failed out of memory
};

}  // namespace ftbench::device
