// LibTorch's caching allocator, through c10/cuda/CUDACachingAllocator.h (ROCm builds too: they
// run as the cuda device type). Compiled to stubs in a CPU build of LibTorch.
#include "ftbench/device/allocator_stats.h"

#if defined(FTBENCH_TORCH_CUDA) || defined(FTBENCH_TORCH_ROCM)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ftbench::device {

#if defined(FTBENCH_TORCH_CUDA) || defined(FTBENCH_TORCH_ROCM)

AllocatorStats allocator_stats(int64_t index) {
  // The device argument is int in 1.13 and c10::DeviceIndex in 2.x; DeviceStats moved to
  // c10::CachingDeviceAllocator in 2.x and is aliased back.
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  // StatType::AGGREGATE is 0 in every version; the enum's namespace moved in 2.x.
  constexpr size_t aggregate = 0;
  AllocatorStats out;
  out.peak_allocated_bytes = stats.allocated_bytes[aggregate].peak;
  out.peak_reserved_bytes = stats.reserved_bytes[aggregate].peak;
  out.peak_active_bytes = stats.active_bytes[aggregate].peak;
  out.allocation_retries = stats.num_alloc_retries;
  out.oom_count = stats.num_ooms;
  return out;
}

void reset_allocator_peaks(int64_t index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

// 1.13: emptyCache(); 2.x: emptyCache(MempoolId_t = {0, 0}). The call without arguments is
// the same on both.
void empty_gpu_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

#else

AllocatorStats allocator_stats(int64_t) { return {}; }
void reset_allocator_peaks(int64_t) {}
void empty_gpu_cache() {}

#endif

}  // namespace ftbench::device
