// ftbench-bin: the LibTorch side of the ftbench command. The `ftbench` launcher (src/cli/
// launcher.cpp) exec()s it for `ftbench run`, `ftbench gemm` and `ftbench logits`; every other
// command works here too.
#include "ftbench/run/host_allocator.h"
#include "run_command.h"

int main(int argc, char** argv) {
  // First thing: the clock that measures launch and time to first step.
  const ftbench::metrics::ProcessClock clock = ftbench::metrics::ProcessClock::from_process_start();
  ftbench::run::tune_host_allocator();
  return ftbench::cli::run_cli(argc, argv, [&clock](CLI::App& app) {
    std::map<std::string, ftbench::cli::Action> actions;
    actions["run"] = ftbench::cli::add_run_command(app, clock);
    actions["gemm"] = ftbench::cli::add_gemm_command(app);
    actions["logits"] = ftbench::cli::add_logits_command(app);
    return actions;
  });
}
