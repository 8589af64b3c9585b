#include "ftbench/metrics/gpu_peaks.h"

namespace ftbench::metrics {
namespace {

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

std::optional<GpuPeak> find_gpu_peak(const std::string& name, const std::string& dtype) {
  if (dtype != "bf16" && dtype != "fp16") return std::nullopt;
  // Figures: FIELD.md "Datasheet figures (dense, no sparsity)".
  if (contains(name, "H200")) return GpuPeak{"H200 SXM", 989.0};
  if (contains(name, "H100")) {
    if (contains(name, "PCIe")) return std::nullopt;
    return GpuPeak{"H100 SXM", 989.0};
  }
  if (contains(name, "B200")) return GpuPeak{"B200", 2250.0};
  if (contains(name, "A100")) {
    if (contains(name, "PCIe")) return std::nullopt;
    return GpuPeak{"A100 SXM", 312.0};
  }
  if (contains(name, "MI300X")) return GpuPeak{"MI300X", 1307.4};
  return std::nullopt;
}

}  // namespace ftbench::metrics
