// The compute backend of a run: device choice, device information, synchronisation and
// memory statistics. CUDA and ROCm both run through LibTorch's `cuda` device type.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "device/facts.h"
#include "device/gpu_query.h"
#include "device/memory_reading.h"
#include "spec/run_spec.h"
#include "util/error.h"

namespace ftbench::device {

class BackendError : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

// "cuda" or "rocm" when this LibTorch was built for one of them, else "cpu".
std::string torch_build_backend();

class Backend {
 public:
  // Picks the device: "auto" takes the GPU when LibTorch has one, else the CPU; "cuda" or
  // "rocm" fail with BackendError when this LibTorch build or machine has none. Sets the CPU
  // thread pools (LibTorch intra-op, inter-op = 1, OpenBLAS) to `threads` or all cores. On a
  // GPU, the device facts come from the vendor runtime's query module (device/gpu_query.h);
  // without it the run goes on, with a warning and info().query_error saying why.
  explicit Backend(const spec::BackendSpec& spec);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  at::Device device() const { return device_; }
  const std::string& kind() const { return kind_; }  // cpu, cuda, rocm
  const DeviceFacts& info() const { return info_; }
  int64_t intra_op_threads() const { return intra_op_threads_; }
  int64_t inter_op_threads() const { return inter_op_threads_; }

  // Throws BackendError when this backend cannot train in `dtype` (bf16, fp16, fp32), found
  // by running a tiny matrix product: LibTorch 1.13 has no fp16 matmul on CPU.
  void check_dtype_supported(const std::string& dtype) const;

  // Waits for all queued device work (no-op on CPU).
  void synchronize() const;
  // Starts a new memory period (a phase): resets the allocator's peaks and the device-wide
  // used maximum (GPU; no-op on CPU).
  void reset_peak_memory();
  // Returns the memory the GPU caching allocator holds but no tensor uses to the driver, after
  // a device synchronisation (no-op on CPU): after an out-of-memory error, so that the retry
  // starts from what live tensors need, without fragments of the failed attempt.
  void release_cached_memory() const;
  // Samples device-wide used memory (GPU) into the period's maximum. Cheap: one runtime query.
  void sample_memory();
  // The device figures of the period so far: allocator peaks and the device-used maximum, with
  // a sample taken now. Every field unset on CPU. The host fields are the caller's.
  MemoryReading phase_memory();
  // Run-wide device figures: device total, allocation retries and OOM count (GPU). Peaks are
  // the phases'; the host's peak RSS is the caller's.
  DeviceMemoryCounters memory() const;
  // The vendor runtime's query module (device/gpu_query.h), for the energy sampler; null on CPU
  // or when it could not be loaded (info().query_error says why).
  const GpuQuery* gpu_query() const { return query_.get(); }

 private:
  at::Device device_{at::kCPU};
  std::string kind_ = "cpu";
  DeviceFacts info_;
  int64_t intra_op_threads_ = 1;
  int64_t inter_op_threads_ = 1;
  std::unique_ptr<GpuQuery> query_;  // null on CPU or when the module could not be loaded
  std::optional<int64_t> device_used_peak_bytes_;
  std::optional<int64_t> device_total_bytes_;
};

// What the process's BLAS resolved to, e.g. "openblas-pthread", "netlib reference blas": the
// library sgemm_ is found in (its real path), else the first BLAS in /proc/self/maps, else the
// one LibTorch links in itself, read from its build settings (PyPI's x86 wheels: "mkl").
std::string resolved_blas();

// The BLAS that LibTorch's build settings (at::show_config(), "BLAS_INFO=mkl, ...") name, in
// resolved_blas()'s words: "mkl", "openblas" for "open", another value as written, "unknown"
// when the settings name none.
std::string blas_from_build_settings(const std::string& config);

}  // namespace ftbench::device
