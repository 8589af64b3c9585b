#include "ftbench/metrics/gpu_peaks.h"

#include "ftbench/cost/catalog.h"

namespace ftbench::metrics {

std::optional<GpuPeak> find_gpu_peak(const std::string& name, const std::string& dtype) {
  if (dtype != "bf16" && dtype != "fp16") return std::nullopt;
  // One source of truth for what a device is: the catalog that `ftbench cost` prices it by.
  const cost::Catalog catalog = cost::builtin_catalog();
  const cost::Gpu* gpu = cost::find_gpu(catalog, name);
  if (gpu == nullptr) return std::nullopt;
  const std::optional<double> peak =
      dtype == "bf16" ? gpu->dense_bf16_tflops : gpu->dense_fp16_tflops;
  if (!peak) return std::nullopt;
  return GpuPeak{gpu->name, *peak};
}

}  // namespace ftbench::metrics
