// Subcommands of the ftbench executables: each registers its flags and runs one library call.
//
// `ftbench` (launcher.cpp) is torch-free: validate, plan, cost, compare, gate, report, catalog,
// tokenize and devices run in it and start instantly; `ftbench run`, `gemm` and `logits` exec()
// ftbench-bin (src/cli/torch), which links LibTorch.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "util/error.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::cli {

// Documented exit codes (README, docs/spec.md), as util/error.h names them.
inline constexpr int kExitOk = static_cast<int>(ExitCode::kOk);
inline constexpr int kExitInternal = static_cast<int>(ExitCode::kInternal);
inline constexpr int kExitBadInput = static_cast<int>(ExitCode::kBadInput);
inline constexpr int kExitFailure = static_cast<int>(ExitCode::kRunFailed);
inline constexpr int kExitInterrupted = static_cast<int>(ExitCode::kInterrupted);
inline constexpr int kExitOutputExists = static_cast<int>(ExitCode::kOutputExists);
inline constexpr int kExitGateFailed = static_cast<int>(ExitCode::kGateFailed);

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

// A number flag's check: a finite number in [lo, hi] (above lo when `above_lo`). CLI11's Range
// and PositiveNumber let "nan" through, since every comparison with NaN is false.
inline CLI::Validator finite_number(double lo, double hi, bool above_lo = false) {
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v)) {
          return "expected a finite number, found " + value;
        }
        if ((above_lo ? v <= lo : v < lo) || v > hi) {
          return fmt::format("expected a number {} {:g} to {:g}, found {}",
                             above_lo ? "above" : "from", lo, hi, value);
        }
        return "";
      },
      "FINITE", "finite number");
}

// A whole-number flag's check: an integer in [lo, hi], said in ftbench's words
// (text::whole_number_message) for anything else, "2.5" and values beyond int64 included;
// CLI11's Range says its own, which change between CLI11's versions. Its description,
// "INT from LO to HI", is what --help shows and what marks the flag as bounded
// (refuse_non_decimal_numbers leaves such a flag's non-whole decimals to it).
inline constexpr std::string_view kWholeNumberDescription = "INT from ";
inline CLI::Validator whole_number(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        int64_t v = 0;
        if (text::parse_int(value, v) != std::errc{} || v < lo || v > hi) {
          return text::whole_number_message(lo, hi, value);
        }
        return "";
      },
      fmt::format("{}{} to {}", kWholeNumberDescription, lo, hi), "whole number");
}

// Every subcommand, once: its name, the line `ftbench --help` shows for it, and whether
// ftbench-bin (LibTorch) runs it: the launcher execs ftbench-bin for those.
struct CommandInfo {
  std::string_view name;
  std::string_view summary;
  bool needs_torch = false;
};
inline constexpr CommandInfo kCommands[] = {
    {"run", "Run a spec: train, time every phase and step, write the JSON report", true},
    {"validate", "Check a spec; print it resolved, with batch sizes, steps and parameters"},
    {"cost",
     "What a run cost (per run, epoch, step, 1M tokens), projected to a larger job, at a rate or "
     "at every catalog offer of its GPU"},
    {"compare",
     "Reports side by side: is it a fair comparison, which is faster and cheaper, is the "
     "step-time difference significant, the break-even price"},
    {"gate",
     "CI regression gate: a new report against a baseline report or folder of reports, by "
     "rules such as step_time:+5%; JUnit XML, GitHub annotations, exit code 6 when it fails"},
    {"report",
     "Reports as a self-contained HTML page with charts (loss, step times, the phases from t0, "
     "memory, throughput, MFU, cost per offer, the comparison's verdict) or a markdown summary"},
    {"plan",
     "Before renting: memory per GPU, what fits where, time and bill of the job at every "
     "offer, the cheapest that fits a deadline and a budget (estimates)"},
    {"catalog", "List provider offers, cheapest per GPU-hour first; stale prices flagged"},
    {"gemm",
     "Achievable matmul TFLOP/s of the device over a sweep of shapes, per dtype: warm-up, then "
     "timed calls each after a cache flush; max, median and the best shape",
     true},
    {"logits",
     "Logits and next-token loss of a Hugging Face Llama checkpoint in ftbench's model, with an "
     "optional PEFT adapter, as JSON for comparison with other implementations",
     true},
    {"tokenize", "Print the token ids of a text with a run's tokenizer"},
    {"devices",
     "List the GPUs the CUDA and HIP runtimes find, the LibTorch `run` uses, and the "
     "environment variables a report records"},
};

// The subcommand `name` of kCommands, added to `app` with its summary (std::logic_error for a
// name the table lacks: a programming error).
CLI::App* add_subcommand(CLI::App& app, std::string_view name);
// Whether kCommands says ftbench-bin runs `name` (false for a name it lacks).
bool needs_torch(std::string_view name);

// Each adds its subcommand to `app` and returns the action to run when it was chosen.
Action add_validate_command(CLI::App& app);
Action add_cost_command(CLI::App& app);
Action add_compare_command(CLI::App& app);
Action add_catalog_command(CLI::App& app);
Action add_plan_command(CLI::App& app);
Action add_report_command(CLI::App& app);
Action add_gate_command(CLI::App& app);
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
