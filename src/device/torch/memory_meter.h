// Memory per phase of a run, host and device.
#pragma once

#include <cstdint>
#include <optional>

#include "device/memory_reading.h"
#include "device/torch/backend.h"

namespace ftbench::device {

// Memory per phase: at each phase's end, the peaks since its start, then a reset for the next
// phase. Host: the process's peak resident size (reset through /proc/self/clear_refs) and its
// resident size at the end. Device (GPU): allocator peaks and the device-used maximum
// (Backend). Not thread-safe; used from the run's thread only.
class MemoryMeter {
 public:
  // The phase that starts now is the first measured; what the process reached before (launch,
  // spec_load) still counts towards the run's peak.
  MemoryMeter();

  // The GPU side, once the backend exists (null: none yet, or a failed start).
  void set_backend(Backend* backend) { backend_ = backend; }

  // The phase that ends now: its peaks and its memory at the end; then the peaks are reset.
  MemoryReading end_phase();

  // The process's peak resident size over the whole run: the phases' peaks, what came before
  // them, and what getrusage still reports (the launcher's, before exec).
  std::optional<int64_t> run_peak_rss_bytes() const;

 private:
  Backend* backend_ = nullptr;
  bool host_peak_reset_ = false;
  std::optional<int64_t> run_peak_rss_bytes_;
};

}  // namespace ftbench::device
