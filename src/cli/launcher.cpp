// The `ftbench` command. Torch-free: validate, cost, compare and catalog run here and start in
// milliseconds. `ftbench run` and `ftbench gemm` become ftbench-bin, which links LibTorch, after
// setting up the OpenMP environment:
//
// libgomp reads OMP_WAIT_POLICY once, when it is loaded, which happens before main() of any
// program linked against LibTorch. Its default lets idle OpenMP workers spin, and on a small
// CPU they then compete with OpenBLAS's own threads for the same cores: on the 2-core CI
// machine the cpu-bench step took 1.11-1.19 s with the default policy and 0.56-0.59 s with
// PASSIVE (docs/benchmarks.md). exec() keeps the process (same PID and start time), so launch
// timing stays honest. A value the user set is kept.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <utility>

#include "commands.h"
#include "ftbench/train/stop_signals.h"

namespace {

std::string sibling(const std::string& name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return name;
  self[n] = '\0';
  const std::string path(self);
  return path.substr(0, path.rfind('/') + 1) + name;
}

// Stand in for `run`, `gemm` and `logits` in the help; never reached, the launcher exec()s
// ftbench-bin first.
std::map<std::string, ftbench::cli::Action> add_torch_placeholders(CLI::App& app) {
  std::map<std::string, ftbench::cli::Action> actions;
  for (const ftbench::cli::CommandInfo& c : ftbench::cli::kCommands) {
    if (!c.needs_torch) continue;
    ftbench::cli::add_subcommand(app, c.name)->allow_extras();
    const std::string command(c.name);
    actions[command] = [command]() -> int {
      throw ftbench::cli::RunFailure(command + ": ftbench-bin did not start");
    };
  }
  return actions;
}

}  // namespace

// Before anything else of this program runs (the earliest constructor priority, ahead of every
// static initialiser linked in): SIGTERM and SIGINT wait, blocked, until ftbench-bin has its
// handler (train/stop_signals.h); the mask survives exec. main() gives them back to the other
// commands at once.
__attribute__((constructor(101))) static void block_stop_signals_first() {
  ftbench::train::StopSignals::block_before_exec();
}

int main(int argc, char** argv) {
  const std::string subcommand = ftbench::cli::subcommand_of(argc, argv);
  if (ftbench::cli::needs_torch(subcommand)) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
    const std::string target = sibling("ftbench-bin");
    execv(target.c_str(), argv);
    const int error = errno;
    if (error == ENOENT) {
      std::fprintf(stderr,
                   "error: ftbench %s needs %s, which is not there: this build has no LibTorch "
                   "side (configured with FTBENCH_WITH_TORCH=OFF)\n",
                   subcommand.c_str(), target.c_str());
    } else {
      std::fprintf(stderr, "error: cannot start %s: %s\n", target.c_str(), std::strerror(error));
    }
    return ftbench::cli::kExitFailure;
  }
  ftbench::train::StopSignals::unblock();
  return ftbench::cli::run_cli(argc, argv, add_torch_placeholders);
}
