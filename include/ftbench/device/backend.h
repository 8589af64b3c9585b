// The compute backend of a run: device choice, device information, synchronisation and
// memory statistics. CUDA and ROCm both run through LibTorch's `cuda` device type.
#pragma once

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "ftbench/report/report.h"
#include "ftbench/spec/run_spec.h"

namespace ftbench::device {

class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "cuda" or "rocm" when this LibTorch was built for one of them, else "cpu".
std::string torch_build_backend();

class Backend {
 public:
  // Picks the device: "auto" takes the GPU when LibTorch has one, else the CPU; "cuda" or
  // "rocm" fail with BackendError when this LibTorch build or machine has none. Sets the CPU
  // thread pools (LibTorch intra-op, inter-op = 1, OpenBLAS) to `threads` or all cores.
  explicit Backend(const spec::BackendSpec& spec);

  at::Device device() const { return device_; }
  const std::string& kind() const { return kind_; }  // cpu, cuda, rocm
  const report::DeviceInfo& info() const { return info_; }
  int64_t intra_op_threads() const { return intra_op_threads_; }
  int64_t inter_op_threads() const { return inter_op_threads_; }

  // Throws BackendError when this backend cannot train in `dtype` (bf16, fp16, fp32), found
  // by running a tiny matrix product: LibTorch 1.13 has no fp16 matmul on CPU.
  void check_dtype_supported(const std::string& dtype) const;

  // Waits for all queued device work (no-op on CPU).
  void synchronize() const;
  // Resets the allocator peak statistics (GPU).
  void reset_peak_memory() const;
  // Returns the memory the GPU caching allocator holds but no tensor uses to the driver, after
  // a device synchronisation (no-op on CPU): after an out-of-memory error, so that the retry
  // starts from what live tensors need, without fragments of the failed attempt.
  void release_cached_memory() const;
  // Samples device-wide used memory (GPU) into the running maximum. Cheap: one driver query.
  void sample_memory();
  // Fills peak allocated/reserved (GPU allocator), device-wide used peak and total (GPU), and
  // the process's peak RSS.
  report::Memory memory() const;

 private:
  at::Device device_{at::kCPU};
  std::string kind_ = "cpu";
  report::DeviceInfo info_;
  int64_t intra_op_threads_ = 1;
  int64_t inter_op_threads_ = 1;
  int64_t device_used_peak_bytes_ = -1;
};

// What the process's libblas resolved to (read from /proc/self/maps), e.g. "openblas-pthread".
std::string resolved_blas();

}  // namespace ftbench::device
