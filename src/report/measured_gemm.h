// A `ftbench gemm` measurement as `ftbench run --gemm FILE` carries it: read from the file
// (bench/gemm_result.h), held by the run for its second MFU denominator, and written verbatim as
// the report's `gemm` section (report.h, since 1.2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ftbench::report {

// One dtype of a measured GEMM sweep (`ftbench gemm`), as a run report carries it.
struct MeasuredGemmDtype {
  std::string dtype;           // bf16, fp8, fp16, tf32, fp32
  double max_tflops = 0.0;     // highest per-shape median TFLOP/s
  double median_tflops = 0.0;  // median over shapes of the per-shape medians
  int64_t best_m = 0;          // the shape of max_tflops
  int64_t best_n = 0;
  int64_t best_k = 0;
};

// A `ftbench gemm` measurement given to `ftbench run --gemm FILE`, carried into the report as it
// is (its `gemm` section, since 1.2).
struct MeasuredGemm {
  std::string source;       // the file as given
  std::string device_name;  // environment.device.name where it was measured
  std::string backend;      // cpu, cuda, rocm
  std::string libtorch_version;
  std::string measured_at_utc;            // when the sweep started
  std::vector<MeasuredGemmDtype> dtypes;  // the dtypes measured, in the file's order
};

}  // namespace ftbench::report
