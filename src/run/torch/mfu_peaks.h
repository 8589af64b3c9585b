// The MFU denominators of a run: the datasheet peak (--peak-tflops, the spec, or the GPU table
// by device name) and the measured GEMM peak for the run's dtype (--gemm), when it was measured
// on this run's device.
#pragma once

#include "device/facts.h"
#include "report/metrics/summary_options.h"
#include "run/torch/run_context.h"

namespace ftbench::run::detail {

void resolve_peak(const RunContext& context, const device::DeviceFacts& device,
                  metrics::SummaryOptions& summary);
// Without a measurement on this run's device (same backend and device name) none, and the
// report says why.
void resolve_gemm_peak(const RunContext& context, const device::DeviceFacts& device,
                       metrics::SummaryOptions& summary);

}  // namespace ftbench::run::detail
