#include "report/metrics/memory_peaks.h"

#include <gtest/gtest.h>

namespace ftbench::metrics {
namespace {

using report::Phase;
using report::PhaseMemory;

TEST(MemoryPeaks, LargestPhasePeakPerField) {
  std::vector<Phase> phases = {{"launch", 0.0, 1.0},
                               {"backend_init", 1.0, 1.0},
                               {"model_build", 2.0, 1.0},
                               {"training", 3.0, 10.0}};
  phases[1].memory = PhaseMemory{0, 2048, 0, 500, 1000, 900};
  phases[2].memory = PhaseMemory{7000, 8000, 7500, 9000, 3000, 2500};
  phases[3].memory = PhaseMemory{6000, 8192, 7000, 9500, 2000, 2000};
  const report::Memory m = memory_peaks_over_phases(phases);
  EXPECT_EQ(m.peak_allocated_bytes, 7000);
  EXPECT_EQ(m.peak_reserved_bytes, 8192);
  EXPECT_EQ(m.peak_active_bytes, 7500);
  EXPECT_EQ(m.device_used_peak_bytes, 9500);
  EXPECT_EQ(m.peak_rss_bytes, 3000);
  EXPECT_FALSE(m.device_total_bytes.has_value());
  EXPECT_FALSE(m.allocation_retries.has_value());
  EXPECT_FALSE(m.oom_count.has_value());
}

TEST(MemoryPeaks, UnmeasuredStaysNull) {
  std::vector<Phase> phases = {{"launch", 0.0, 1.0}, {"backend_init", 1.0, 1.0}};
  EXPECT_FALSE(memory_peaks_over_phases(phases).peak_rss_bytes.has_value());
  phases[1].memory = PhaseMemory{};
  phases[1].memory->peak_rss_bytes = 4096;  // a CPU run: host figures only
  const report::Memory m = memory_peaks_over_phases(phases);
  EXPECT_EQ(m.peak_rss_bytes, 4096);
  EXPECT_FALSE(m.peak_allocated_bytes.has_value());
  EXPECT_FALSE(m.device_used_peak_bytes.has_value());
  EXPECT_FALSE(memory_peaks_over_phases({}).peak_rss_bytes.has_value());
}

}  // namespace
}  // namespace ftbench::metrics
