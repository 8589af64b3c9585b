// Subcommands of the ftbench executable: each registers its flags and runs one library call.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "ftbench/metrics/process_clock.h"

namespace ftbench::cli {

// Documented exit codes (README, docs/spec.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // the run failed (backend, out of memory, I/O)
inline constexpr int kExitBadInput = 2;      // invalid spec, arguments or input file
inline constexpr int kExitOutputExists = 3;  // report exists and --force not given

using Action = std::function<int()>;

// Each adds its subcommand to `app` and returns the action to run when it was chosen.
Action add_run_command(CLI::App& app, const metrics::ProcessClock& clock);
Action add_validate_command(CLI::App& app);

}  // namespace ftbench::cli
