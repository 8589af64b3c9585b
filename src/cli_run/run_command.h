// The commands that need LibTorch: `ftbench run`, `ftbench gemm` and `ftbench logits`.
#pragma once

#include "../cli/commands.h"
#include "ftbench/metrics/process_clock.h"

namespace ftbench::cli {

Action add_run_command(CLI::App& app, const metrics::ProcessClock& clock);
Action add_gemm_command(CLI::App& app);
Action add_logits_command(CLI::App& app);

}  // namespace ftbench::cli
