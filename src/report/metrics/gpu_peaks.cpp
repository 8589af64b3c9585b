#include "report/metrics/gpu_peaks.h"

#include "device/gpus/datasheet.h"

namespace ftbench::metrics {

std::optional<GpuPeak> find_gpu_peak(const std::string& name, const std::string& dtype) {
  if (dtype != "bf16" && dtype != "fp16") return std::nullopt;
  // The same datasheets `ftbench cost` names a device by.
  const gpus::Gpu* gpu = gpus::find_gpu(gpus::builtin_gpus(), name);
  if (gpu == nullptr) return std::nullopt;
  const std::optional<double> peak =
      dtype == "bf16" ? gpu->dense_bf16_tflops : gpu->dense_fp16_tflops;
  if (!peak) return std::nullopt;
  return GpuPeak{gpu->name, *peak};
}

}  // namespace ftbench::metrics
