// Subcommands of the ftbench executables: each registers its flags and runs one library call.
//
// `ftbench` (launcher.cpp) is torch-free: validate, cost, compare and catalog run in it and start
// instantly; `ftbench run` and `ftbench gemm` exec() ftbench-bin (src/cli_run), which links
// LibTorch.
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "ftbench/error.h"

namespace ftbench::cli {

// Documented exit codes (README, docs/spec.md), as ftbench/error.h names them.
inline constexpr int kExitOk = static_cast<int>(ExitCode::kOk);
inline constexpr int kExitInternal = static_cast<int>(ExitCode::kInternal);
inline constexpr int kExitBadInput = static_cast<int>(ExitCode::kBadInput);
inline constexpr int kExitFailure = static_cast<int>(ExitCode::kRunFailed);
inline constexpr int kExitInterrupted = static_cast<int>(ExitCode::kInterrupted);
inline constexpr int kExitOutputExists = static_cast<int>(ExitCode::kOutputExists);

// Bad input found by a command (a flag value, an input file): exit code 2.
class InputError : public BadInput {
 public:
  using BadInput::BadInput;
};

// A run that failed for a reason outside the input (backend, LibTorch): exit code 3.
class RunFailure : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

using Action = std::function<int()>;

// Each adds its subcommand to `app` and returns the action to run when it was chosen.
Action add_validate_command(CLI::App& app);
Action add_cost_command(CLI::App& app);
Action add_compare_command(CLI::App& app);
Action add_catalog_command(CLI::App& app);
Action add_tokenize_command(CLI::App& app);
Action add_devices_command(CLI::App& app);

// Registers the commands that need LibTorch (run, gemm) and returns their actions by name:
// ftbench-bin registers the real ones, the launcher placeholders that only show in the help.
using TorchCommands = std::function<std::map<std::string, Action>(CLI::App&)>;

// The subcommand named on the command line: the first argument that is not an option (or the
// value of --log-level). "" when there is none.
std::string subcommand_of(int argc, char** argv);

// Parses the command line with every torch-free command plus those `add_torch_commands`
// registers, runs the chosen one, and maps every error to its exit code (one catch, here).
int run_cli(int argc, char** argv, const TorchCommands& add_torch_commands);

}  // namespace ftbench::cli
