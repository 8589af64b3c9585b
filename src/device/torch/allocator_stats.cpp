// LibTorch's GPU caching allocator (ROCm builds too: they run as the cuda device type). Which
// API is used is decided at configure time by compiling each candidate against the found
// LibTorch (cmake/FtbenchTorchApi.cmake, FTBENCH_ALLOCATOR_API_*), not by version number.
// Compiled to stubs in a CPU build of LibTorch. tests/CMakeLists.txt also compiles the ROCm
// paths against the CPU build's headers (ftbench_rocm_compile_*), so they cannot rot unseen.
#include "device/allocator_stats.h"

#if defined(FTBENCH_TORCH_CUDA) || defined(FTBENCH_TORCH_ROCM)
#if defined(FTBENCH_ALLOCATOR_API_DEVICE_ALLOCATOR)
// 2.9+: the device-generic allocator interface, no vendor headers.
#include <c10/core/CachingDeviceAllocator.h>
#elif defined(FTBENCH_ALLOCATOR_API_HIP_NAMESPACE) || \
    defined(FTBENCH_ALLOCATOR_API_HIP_HEADER_CUDA_NAMES)
// ROCm: the hipified copy of c10/cuda/CUDACachingAllocator.h.
#include <c10/hip/HIPCachingAllocator.h>
#elif defined(FTBENCH_ALLOCATOR_API_CUDA_HEADER)
#include <c10/cuda/CUDACachingAllocator.h>
#else
#error "no FTBENCH_ALLOCATOR_API_* chosen for a GPU build (cmake/FtbenchTorchApi.cmake)"
#endif
#endif

namespace ftbench::device {

#if defined(FTBENCH_TORCH_CUDA) || defined(FTBENCH_TORCH_ROCM)

namespace {

#if defined(FTBENCH_ALLOCATOR_API_DEVICE_ALLOCATOR)
c10::DeviceAllocator& allocator() { return *c10::getDeviceAllocator(c10::DeviceType::CUDA); }
auto device_stats(c10::DeviceIndex index) { return allocator().getDeviceStats(index); }
void reset_peaks(c10::DeviceIndex index) { allocator().resetPeakStats(index); }
void empty_cache() { allocator().emptyCache(); }
#else
// ROCm up to 2.10 names it c10::hip::HIPCachingAllocator; from 2.11 ("hipify v2") the hip header
// keeps the c10::cuda names.
#if defined(FTBENCH_ALLOCATOR_API_HIP_NAMESPACE)
namespace vendor = c10::hip::HIPCachingAllocator;
#else
namespace vendor = c10::cuda::CUDACachingAllocator;
#endif
// The device argument is int in 1.13 and c10::DeviceIndex in 2.x; DeviceStats moved to
// c10::CachingDeviceAllocator in 2.x and is aliased back.
auto device_stats(c10::DeviceIndex index) { return vendor::getDeviceStats(index); }
void reset_peaks(c10::DeviceIndex index) { vendor::resetPeakStats(index); }
// 1.13: emptyCache(); 2.x: emptyCache(MempoolId_t = {0, 0}). The call without arguments is
// the same on both.
void empty_cache() { vendor::emptyCache(); }
#endif

}  // namespace

AllocatorStats allocator_stats(int64_t index) {
  const auto stats = device_stats(static_cast<c10::DeviceIndex>(index));
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

void reset_allocator_peaks(int64_t index) { reset_peaks(static_cast<c10::DeviceIndex>(index)); }

void empty_gpu_cache() { empty_cache(); }

#else

AllocatorStats allocator_stats(int64_t) { return {}; }
void reset_allocator_peaks(int64_t) {}
void empty_gpu_cache() {}

#endif

}  // namespace ftbench::device
