// Dense (no sparsity) datasheet peaks for MFU, from ../shared/design/FIELD.md.
#pragma once

#include <optional>
#include <string>

namespace ftbench::metrics {

struct GpuPeak {
  std::string table_name;  // the row matched, e.g. "H100 SXM"
  double dense_bf16_tflops = 0.0;
};

// Matches a device name as the driver reports it ("NVIDIA H100 80GB HBM3", "AMD Instinct
// MI300X") to the table. Only the 16-bit peak is tabled: `dtype` fp32 gives nullopt, since
// fp32 training runs on TF32 or plain FP32 units whose peaks differ. H100 PCIe is not tabled.
std::optional<GpuPeak> find_gpu_peak(const std::string& device_name, const std::string& dtype);

}  // namespace ftbench::metrics
