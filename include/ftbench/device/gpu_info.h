// GPU queries that need the vendor runtime headers. Implemented in gpu_info_cuda.cpp for
// CUDA/ROCm builds of LibTorch; the CPU build's stubs return nothing.
#pragma once

#include <cstdint>
#include <optional>

#include "ftbench/report/report.h"

namespace ftbench::device {

// Name, arch, SM count, memory, driver and runtime versions of device `index`.
void fill_gpu_info(int64_t index, report::DeviceInfo& info);

struct GpuMemory {
  std::optional<int64_t> peak_allocated_bytes;
  std::optional<int64_t> peak_reserved_bytes;
  std::optional<int64_t> used_bytes;  // device-wide, all processes (total - free)
  std::optional<int64_t> total_bytes;
};

GpuMemory query_gpu_memory(int64_t index);

// Size of the device's L2 cache in bytes (cudaDeviceProp / hipDeviceProp_t l2CacheSize);
// nullopt on CPU builds or when the query fails.
std::optional<int64_t> gpu_l2_cache_bytes(int64_t index);
void reset_gpu_peaks(int64_t index);

}  // namespace ftbench::device
