// Statistics of LibTorch's GPU caching allocator. Before 2.9 its header needs the vendor runtime
// headers, so the real implementation is compiled only in CUDA and ROCm builds of LibTorch
// (FTBENCH_TORCH_CUDA / FTBENCH_TORCH_ROCM); a CPU build's stubs return nothing. Device facts
// and device-wide memory come from the vendor runtimes instead (device/gpu_query.h).
#pragma once

#include <cstdint>
#include <optional>

namespace ftbench::device {

// Of device `index`, summed over the allocator's pools. Unset when this LibTorch has no GPU
// allocator.
struct AllocatorStats {
  std::optional<int64_t> peak_allocated_bytes;  // held by tensors
  std::optional<int64_t> peak_reserved_bytes;   // reserved from the driver (held plus cached)
  std::optional<int64_t> peak_active_bytes;     // held by tensors or by blocks awaiting reuse
                                                // on another stream
  std::optional<int64_t> allocation_retries;    // allocations that freed the cache and retried
  std::optional<int64_t> oom_count;             // allocations that failed out of memory
};

AllocatorStats allocator_stats(int64_t index);

// Sets the peaks to the current values; retries and OOM counts keep counting.
void reset_allocator_peaks(int64_t index);

// Frees the caching allocator's unused cached blocks on every device
// (c10::cuda::CUDACachingAllocator::emptyCache). Statistics and live tensors are untouched.
void empty_gpu_cache();

}  // namespace ftbench::device
