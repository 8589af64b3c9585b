// Subcommands of the ftbench executables: each registers its flags and runs one library call.
//
// `ftbench` (launcher.cpp) is torch-free: validate, cost, compare and catalog run in it and start
// instantly; `ftbench run` exec()s ftbench-bin (src/cli_run), which links LibTorch.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace ftbench::cli {

// Documented exit codes (README, docs/spec.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // the run failed (backend, out of memory, I/O)
inline constexpr int kExitBadInput = 2;      // invalid spec, arguments or input file
inline constexpr int kExitOutputExists = 3;  // report exists and --force not given

// Bad input found by a command (a flag value, an input file): exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run that failed for a reason outside the input (backend, LibTorch): exit code 1.
class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Action = std::function<int()>;

// Each adds its subcommand to `app` and returns the action to run when it was chosen.
Action add_validate_command(CLI::App& app);
Action add_cost_command(CLI::App& app);
Action add_compare_command(CLI::App& app);
Action add_catalog_command(CLI::App& app);
Action add_tokenize_command(CLI::App& app);
Action add_devices_command(CLI::App& app);

// Parses the command line with every torch-free command plus the one `add_run` registers,
// runs the chosen one, and maps every error to its exit code (one catch, here).
int run_cli(int argc, char** argv, const std::function<Action(CLI::App&)>& add_run);

}  // namespace ftbench::cli
