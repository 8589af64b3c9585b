// Dense (no sparsity) datasheet peaks for MFU: the built-in datasheets (configs/gpus.yaml, from
// ../shared/design/FIELD.md), matched by gpus::find_gpu.
#pragma once

#include <optional>
#include <string>

namespace ftbench::metrics {

struct GpuPeak {
  std::string table_name;  // the datasheet matched, e.g. "H100-SXM"
  double dense_bf16_tflops = 0.0;
};

// Matches a device name as the driver reports it ("NVIDIA H100 80GB HBM3", "AMD Instinct
// MI300X") to the built-in datasheets. Only 16-bit peaks are used: `dtype` fp32 gives nullopt,
// since fp32 training runs on TF32 or plain FP32 units whose peaks differ. Parts they do not hold
// (H100 PCIe, H100 NVL, GH200) give nullopt.
std::optional<GpuPeak> find_gpu_peak(const std::string& device_name, const std::string& dtype);

}  // namespace ftbench::metrics
