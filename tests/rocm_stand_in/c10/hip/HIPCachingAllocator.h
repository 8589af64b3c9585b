// Stand-in for a ROCm LibTorch's c10/hip/HIPCachingAllocator.h, which a CPU build lacks, so that
// CI compiles src/device/torch/allocator_stats.cpp's ROCm paths (tests/CMakeLists.txt,
// ftbench_rocm_compile_*). Declares only what that file calls, with upstream's signatures:
// c10/cuda/CUDACachingAllocator.h of PyTorch 2.6.0 (as shipped in Debian 13's
// libtorch-cuda-dev 2.6.0+dfsg-7), of which ROCm builds carry a hipified copy under this name:
//   inline c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device);
//   inline void resetPeakStats(c10::DeviceIndex device);
//   inline void emptyCache();   // 2.8+: emptyCache(MempoolId_t mempool_id = {0, 0})
// DeviceStats and Stat come from c10/core/CachingDeviceAllocator.h (2.5+, in CPU builds too);
// for older LibTorch (Debian 12's 1.13) the fields used are declared here as 1.13's
// c10/cuda/CUDACachingAllocator.h has them (Stat{current, peak, allocated, freed}).
// Namespace: c10::hip::HIPCachingAllocator up to 2.10; 2.11's "hipify v2" keeps the CUDA names
// (c10::cuda::CUDACachingAllocator) in this header: FTBENCH_STAND_IN_HIPIFY_V2 selects that.
// Declarations only: nothing compiled against this is linked.
#pragma once

#include <c10/core/Device.h>

#include <array>
#include <cstdint>

#if __has_include(<c10/core/CachingDeviceAllocator.h>)
#include <c10/core/CachingDeviceAllocator.h>
#define FTBENCH_STAND_IN_DEVICE_STATS c10::CachingDeviceAllocator::DeviceStats
#else
namespace ftbench_stand_in {
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
};
using StatArray = std::array<Stat, 3>;  // AGGREGATE, SMALL_POOL, LARGE_POOL
struct DeviceStats {
  StatArray allocated_bytes;
  StatArray reserved_bytes;
  StatArray active_bytes;
  int64_t num_alloc_retries = 0;
  int64_t num_ooms = 0;
};
}  // namespace ftbench_stand_in
#define FTBENCH_STAND_IN_DEVICE_STATS ftbench_stand_in::DeviceStats
#endif

#if defined(FTBENCH_STAND_IN_HIPIFY_V2)
namespace c10::cuda::CUDACachingAllocator {
#else
namespace c10::hip::HIPCachingAllocator {
#endif
FTBENCH_STAND_IN_DEVICE_STATS getDeviceStats(c10::DeviceIndex device);
void resetPeakStats(c10::DeviceIndex device);
void emptyCache();
}
