// `ftbench gemm`: achievable matmul throughput of a device over a sweep of shapes, per dtype, in
// the manner of mamf-finder (warm-up calls, then many timed calls, each after a cache flush).
// What is timed and how: docs/methodology.md, "Measured GEMM peak".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/gemm_result.h"
#include "device/torch/backend.h"

namespace ftbench::bench {

struct GemmRunOptions {
  std::vector<std::string> dtypes;  // from parse_dtypes, measured in this order
  std::string shapes_spec;          // the sweep as given, recorded in the result
  std::vector<GemmShape> shapes;    // parse_shape_sweep(shapes_spec)
  int64_t warmup_iterations = 0;    // untimed calls per shape
  int64_t iterations = 1;           // timed calls per shape, >= 1
  // Budget for the whole sweep: once spent, the shapes not started are skipped (and counted).
  // 0: no budget. A shape already started always finishes.
  double max_seconds = 0.0;
  std::optional<int64_t> cache_flush_bytes;  // nullopt: default_cache_flush_bytes(backend)
  uint64_t seed = 0;                         // for the random inputs
  // Called after each shape with one line of progress (no newline); may be empty.
  std::function<void(const std::string&)> progress;
};

// Rows and columns of each shape's output compared with an fp64 reference after the timed calls.
inline constexpr int64_t kGemmCheckRows = 16;
inline constexpr int64_t kGemmCheckColumns = 256;

// Bytes written before every call to push A, B and C out of the caches: on CUDA twice the L2
// (device properties), 256 MiB when it is unknown; on ROCm at least 512 MiB, since the MI300's
// 256 MB Infinity Cache sits behind the L2 the properties report; on CPU twice the largest cache
// level of cpu0 (sysfs), at least 64 MiB.
int64_t default_cache_flush_bytes(const device::Backend& backend);

// Runs the sweep on `backend`'s device. A dtype this device or LibTorch cannot run is recorded
// as unsupported with the reason (fp8 on CPU or LibTorch 1.13, tf32 on CPU, fp16 on a CPU
// LibTorch without a half-precision matmul), not thrown; a shape that fails (out of memory, a
// kernel's shape constraint) records its error and the sweep goes on. Throws
// std::invalid_argument for options that cannot run (no shapes, no dtypes, iterations < 1).
GemmResult run_gemm_sweep(const GemmRunOptions& options, const device::Backend& backend);

}  // namespace ftbench::bench
