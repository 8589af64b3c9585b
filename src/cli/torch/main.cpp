// ftbench-bin: the LibTorch side of the ftbench command. The `ftbench` launcher (src/cli/
// launcher.cpp) exec()s it for `ftbench run`, `ftbench gemm` and `ftbench logits`; every other
// command works here too.
#include <alloca.h>

#include <cstddef>

#include "cli/run_command.h"
#include "device/address_space_reserve.h"
#include "device/host_allocator.h"
#include "train/stop_signals.h"
#include "util/io/whole_file.h"

namespace {

// Touches `bytes` of the main thread's stack below this frame, so that the stack is that deep
// from the start. Under an address-space limit (ulimit -v) the kernel may refuse to grow the
// stack later, and a deep frame then ends the process in SIGSEGV rather than in an error it can
// say: at 848 MB, one of LibTorch's kernels (at::cos, 128 KiB below the deepest frame until
// then) did. 2 MiB of the 8 MiB a stack may grow to by default.
__attribute__((noinline)) void grow_main_stack(std::size_t bytes) {
  volatile char* p = static_cast<volatile char*>(alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 0;
}

}  // namespace

int main(int argc, char** argv) {
  // First thing: the clock that measures launch and time to first step, then the handler of
  // SIGTERM, SIGINT and SIGHUP, which the launcher kept blocked until now (train/stop_signals.h).
  const ftbench::device::ProcessClock clock = ftbench::device::ProcessClock::from_process_start();
  ftbench::train::StopSignals signals;
  ftbench::train::ignore_signals_that_would_kill_a_run();
  ftbench::io::set_stop_requested(&ftbench::train::StopSignals::stop_requested);
  grow_main_stack(std::size_t{2} << 20);
  // A run: the address space it needs to write a failed report, held before anything else takes
  // it (device/address_space_reserve.h). Every other command has nothing to save: it ends at once
  // on a stop signal.
  if (ftbench::cli::subcommand_of(argc, argv) == "run") {
    ftbench::device::failure_reserve();
  } else {
    signals.stop_immediately_from_now();
  }
  ftbench::device::tune_host_allocator();
  return ftbench::cli::run_cli(argc, argv, [&clock, &signals](CLI::App& app) {
    std::map<std::string, ftbench::cli::Action> actions;
    actions["run"] = ftbench::cli::add_run_command(app, clock, signals);
    actions["gemm"] = ftbench::cli::add_gemm_command(app);
    actions["logits"] = ftbench::cli::add_logits_command(app);
    return actions;
  });
}
