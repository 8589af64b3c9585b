// The commands that need LibTorch: `ftbench run`, `ftbench gemm` and `ftbench logits`.
#pragma once

#include "cli/commands.h"
#include "device/process_clock.h"
#include "spec/run_spec.h"
#include "train/stop_signals.h"

namespace c10 {
class Error;
}  // namespace c10

namespace ftbench::cli {

// `signals` (created first thing in main) tells the run of a stop request.
Action add_run_command(CLI::App& app, const device::ProcessClock& clock,
                       const train::StopSignals& signals);
Action add_gemm_command(CLI::App& app);
Action add_logits_command(CLI::App& app);

// A LibTorch error as the command line says it: its first line (the backtrace after it left
// out), "out of memory" first where it is one ("DefaultCPUAllocator: can't allocate memory",
// "CUDA out of memory"), with the process's address-space limit where one is set.
RunFailure torch_failure(const c10::Error& e);

// --device, --device-index and --threads of `gemm` and `logits`, into the backend they pick.
void add_backend_options(CLI::App* cmd, spec::BackendSpec& backend);

}  // namespace ftbench::cli
