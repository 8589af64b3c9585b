// `ftbench run --nproc-per-node N SPEC`: one machine's job of N ranks without Python. The
// launcher (the torch-free `ftbench`, src/cli/local_launcher.cpp) starts N ftbench-bin
// processes with torchrun's variables, forwards stop signals to them, ends them all when one
// fails and exits with the first failure's code. What it decides is pure and here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ftbench::dist {

// The most ranks one machine's launcher starts.
inline constexpr int64_t kMaxLocalRanks = 1024;

// Removes `--nproc-per-node N` or `--nproc-per-node=N` from `args` (a command line, program name
// first) and returns N; nullopt when absent. Only options before a `--` are looked at. Throws
// LaunchError for a value that is not a whole number from 1 to kMaxLocalRanks, a missing value,
// or the flag given twice.
std::optional<int64_t> take_nproc_per_node(std::vector<std::string>& args);

// The environment of rank `rank` of `ranks`: `base` ("NAME=value" entries) less any launch
// variable it had (dist::launch_variables()), plus RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK=0, MASTER_ADDR=127.0.0.1, MASTER_PORT=`port` and
// FTBENCH_LAUNCH=local; OMP_NUM_THREADS as given, else the machine's `cores` shared between the
// ranks (at least 1), as torchrun does.
std::vector<std::string> rank_environment(const std::vector<std::string>& base, int64_t rank,
                                          int64_t ranks, int port, int64_t cores);

// In a rank of `--nproc-per-node` (FTBENCH_LAUNCHER_PID set): SIGTERM when the launcher dies
// (PR_SET_PDEATHSIG), so a launcher killed outright (SIGKILL, the OOM killer) leaves no rank
// training on; at once when it is gone already. Does nothing elsewhere.
void follow_launcher();

// How one rank ended: its exit code, or the signal that killed it.
struct RankExit {
  int64_t rank = 0;
  int exit_code = 0;  // when signal == 0
  int signal = 0;
};

// A rank that stopped as asked (SIGTERM, --stop-after-steps) after saving: not a failure.
inline constexpr int kStoppedExitCode = 4;

// The launcher's exit code from the ranks' ends, in the order they came: the first rank that
// failed (killed by a signal, or an exit code other than 0 and 4) is the cause, the others
// having been ended because of it: its code, or 128 + its signal. Else 4 when ranks stopped as
// asked, 0 when every rank exited 0.
int launcher_exit_code(const std::vector<RankExit>& ends);

// "rank 1 exited with code 3" / "rank 0 was killed by signal 9".
std::string describe(const RankExit& end);

}  // namespace ftbench::dist
