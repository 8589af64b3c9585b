// GPU queries through the CUDA runtime (ROCm builds: the HIP runtime) and LibTorch's caching
// allocator. Compiled to stubs in a CPU build of LibTorch.
#include "ftbench/device/gpu_info.h"

#if defined(FTBENCH_TORCH_CUDA) || defined(FTBENCH_TORCH_ROCM)
#include <c10/cuda/CUDACachingAllocator.h>
#if defined(FTBENCH_TORCH_ROCM)
#include <hip/hip_runtime_api.h>
#else
#include <cuda_runtime_api.h>
#endif
#include <fmt/format.h>
#endif

namespace ftbench::device {

#if defined(FTBENCH_TORCH_CUDA) || defined(FTBENCH_TORCH_ROCM)
namespace {

std::string version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

}  // namespace

#if defined(FTBENCH_TORCH_ROCM)
void fill_gpu_info(int64_t index, report::DeviceInfo& info) {
  hipDeviceProp_t prop{};
  if (hipGetDeviceProperties(&prop, static_cast<int>(index)) == hipSuccess) {
    info.name = prop.name;
    info.arch = prop.gcnArchName;
    info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.multiprocessor_count = prop.multiProcessorCount;
  }
  int driver = 0;
  int runtime = 0;
  if (hipDriverGetVersion(&driver) == hipSuccess) info.driver_version = std::to_string(driver);
  if (hipRuntimeGetVersion(&runtime) == hipSuccess) info.runtime_version = std::to_string(runtime);
}

std::optional<int64_t> gpu_l2_cache_bytes(int64_t index) {
  hipDeviceProp_t prop{};
  if (hipGetDeviceProperties(&prop, static_cast<int>(index)) != hipSuccess) return std::nullopt;
  if (prop.l2CacheSize <= 0) return std::nullopt;
  return static_cast<int64_t>(prop.l2CacheSize);
}

GpuMemory query_gpu_memory(int64_t index) {
  GpuMemory m;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  hipSetDevice(static_cast<int>(index));
  if (hipMemGetInfo(&free_bytes, &total_bytes) == hipSuccess) {
    m.used_bytes = static_cast<int64_t>(total_bytes - free_bytes);
    m.total_bytes = static_cast<int64_t>(total_bytes);
  }
#else
void fill_gpu_info(int64_t index, report::DeviceInfo& info) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, static_cast<int>(index)) == cudaSuccess) {
    info.name = prop.name;
    info.arch = fmt::format("sm_{}{}", prop.major, prop.minor);
    info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.multiprocessor_count = prop.multiProcessorCount;
  }
  int driver = 0;
  int runtime = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess) info.driver_version = version_string(driver);
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    info.runtime_version = version_string(runtime);
}

std::optional<int64_t> gpu_l2_cache_bytes(int64_t index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, static_cast<int>(index)) != cudaSuccess) return std::nullopt;
  if (prop.l2CacheSize <= 0) return std::nullopt;
  return static_cast<int64_t>(prop.l2CacheSize);
}

GpuMemory query_gpu_memory(int64_t index) {
  GpuMemory m;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  cudaSetDevice(static_cast<int>(index));
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    m.used_bytes = static_cast<int64_t>(total_bytes - free_bytes);
    m.total_bytes = static_cast<int64_t>(total_bytes);
  }
#endif
  using c10::cuda::CUDACachingAllocator::getDeviceStats;
  const auto stats = getDeviceStats(static_cast<c10::DeviceIndex>(index));
  // StatType::AGGREGATE is 0 in every version; the enum's namespace moved in 2.x.
  constexpr size_t aggregate = 0;
  m.peak_allocated_bytes = stats.allocated_bytes[aggregate].peak;
  m.peak_reserved_bytes = stats.reserved_bytes[aggregate].peak;
  return m;
}

void reset_gpu_peaks(int64_t index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

#else
void fill_gpu_info(int64_t, report::DeviceInfo&) {}
GpuMemory query_gpu_memory(int64_t) { return {}; }
std::optional<int64_t> gpu_l2_cache_bytes(int64_t) { return std::nullopt; }
void reset_gpu_peaks(int64_t) {}
#endif

}  // namespace ftbench::device
