// `ftbench run`, the one command that needs LibTorch.
#pragma once

#include "../cli/commands.h"
#include "ftbench/metrics/process_clock.h"

namespace ftbench::cli {

Action add_run_command(CLI::App& app, const metrics::ProcessClock& clock);

}  // namespace ftbench::cli
