#include "run/torch/mfu_peaks.h"

#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "report/measured_gemm.h"
#include "report/metrics/gpu_peaks.h"
#include "util/text/messages.h"

namespace ftbench::run::detail {

void resolve_peak(const RunContext& context, const device::DeviceFacts& device,
                  metrics::SummaryOptions& summary) {
  if (context.instrumentation.peak_tflops) {
    summary.peak_tflops = context.instrumentation.peak_tflops;
    summary.peak_source = "--peak-tflops";
  } else if (context.spec.backend.peak_tflops) {
    summary.peak_tflops = context.spec.backend.peak_tflops;
    summary.peak_source = "spec";
  } else if (device.backend != "cpu") {
    if (auto peak = metrics::find_gpu_peak(device.name, context.spec.model.dtype)) {
      summary.peak_tflops = peak->dense_bf16_tflops;
      summary.peak_source = "gpu table: " + peak->table_name + " dense bf16";
    }
  }
}

void resolve_gemm_peak(const RunContext& context, const device::DeviceFacts& device,
                       metrics::SummaryOptions& summary) {
  if (!context.instrumentation.gemm) return;
  const report::MeasuredGemm& g = *context.instrumentation.gemm;
  const std::string& dtype = context.spec.model.dtype;
  if (g.backend != device.backend || g.device_name != device.name) {
    // The file's own strings, escaped: a shared gemm file must not drive the terminal.
    summary.gemm_peak_source = fmt::format(
        "none: {} was measured on {} ({}), this run is on {} ({})", text::printable(g.source),
        text::printable(g.device_name), text::printable(g.backend), device.name, device.backend);
    spdlog::warn("--gemm: {}: no MFU against the measured GEMM peak", summary.gemm_peak_source);
    return;
  }
  for (const report::MeasuredGemmDtype& d : g.dtypes) {
    if (d.dtype != dtype) continue;
    summary.gemm_peak_tflops = d.max_tflops;
    summary.gemm_peak_source =
        fmt::format("gemm file: {} {} {}x{}x{}", g.source, dtype, d.best_m, d.best_n, d.best_k);
    return;
  }
  summary.gemm_peak_source =
      fmt::format("none: {} has no {} measurement", text::printable(g.source), dtype);
  spdlog::warn("--gemm: {}: no MFU against the measured GEMM peak", summary.gemm_peak_source);
}

}  // namespace ftbench::run::detail
