#include "device/host_memory.h"

#include <sys/mman.h>

#include <cstring>

#include <gtest/gtest.h>

namespace ftbench::device {
namespace {

TEST(HostMemory, ParsesProcStatus) {
  const HostMemory m = parse_proc_status(
      "Name:\tftbench-bin\nVmPeak:\t 4000000 kB\nVmHWM:\t  207856 kB\nVmRSS:\t    3120 kB\n");
  EXPECT_EQ(m.rss_bytes, int64_t{3120} * 1024);
  EXPECT_EQ(m.peak_rss_bytes, int64_t{207856} * 1024);
  EXPECT_FALSE(parse_proc_status("Name:\tx\n").rss_bytes.has_value());
  EXPECT_FALSE(parse_proc_status("VmRSS:\t12 MB\n").rss_bytes.has_value());
}

TEST(HostMemory, ReadsThisProcess) {
  const HostMemory m = read_host_memory();
  ASSERT_TRUE(m.rss_bytes.has_value());
  ASSERT_TRUE(m.peak_rss_bytes.has_value());
  EXPECT_GT(*m.rss_bytes, 0);
  EXPECT_GE(*m.peak_rss_bytes, *m.rss_bytes);
}

// 64 MiB touched and unmapped: the peak holds it until a reset brings it down to the current
// size again.
TEST(HostMemory, ResetLowersThePeakToTheCurrentSize) {
  constexpr size_t kBytes = size_t{64} << 20;
  void* block = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(block, MAP_FAILED);
  std::memset(block, 1, kBytes);
  const HostMemory before = read_host_memory();
  ::munmap(block, kBytes);
  const HostMemory after_free = read_host_memory();
  ASSERT_TRUE(before.rss_bytes && after_free.peak_rss_bytes);
  // The kernel updates both counters lazily (per-thread caches): allow a few MiB of slack.
  constexpr int64_t kSlack = int64_t{4} << 20;
  EXPECT_GE(*after_free.peak_rss_bytes, *before.rss_bytes - kSlack);
  if (!reset_host_peak_rss()) GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs";
  const HostMemory reset = read_host_memory();
  EXPECT_LT(*reset.peak_rss_bytes, *before.rss_bytes - int64_t{32 << 20});
  EXPECT_GE(*reset.peak_rss_bytes, *reset.rss_bytes - kSlack);
}

}  // namespace
}  // namespace ftbench::device
