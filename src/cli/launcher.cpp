// The `ftbench` command. Torch-free: validate, plan, cost, compare, gate, report, catalog,
// tokenize and devices run here and start in milliseconds. `ftbench run`, `gemm` and `logits`
// become ftbench-bin, which links LibTorch, after setting up the OpenMP environment:
//
// libgomp reads OMP_WAIT_POLICY once, when it is loaded, which happens before main() of any
// program linked against LibTorch. Its default lets idle OpenMP workers spin, and on a small
// CPU they then compete with OpenBLAS's own threads for the same cores: on the 2-core CI
// machine the cpu-bench step took 1.11-1.19 s with the default policy and 0.56-0.59 s with
// PASSIVE (docs/benchmarks.md). exec() keeps the process (same PID and start time), so launch
// timing stays honest. A value the user set is kept.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/local_launcher.h"
#include "device/host_memory.h"
#include "train/dist/launch.h"
#include "train/dist/local_launch.h"
#include "train/stop_signals.h"

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
// static initialiser linked in): SIGTERM, SIGINT and SIGHUP wait, blocked, until ftbench-bin has
// its handler (train/stop_signals.h); the mask survives exec. main() gives them back to the other
// commands at once.
__attribute__((constructor(101))) static void block_stop_signals_first() {
  ftbench::train::StopSignals::block_before_exec();
}

// `ftbench run --nproc-per-node N`: N ranks of ftbench-bin on this machine; the flag is taken
// out of the command line the ranks get. Returns the exit code, or -1 when the flag is absent or
// 1 (the run then goes on in this process, exec'd as usual, with `args` rid of the flag).
int launch_local_ranks(std::vector<std::string>& args, const std::string& target) {
  std::optional<int64_t> ranks;
  try {
    ranks = ftbench::dist::take_nproc_per_node(args);
    if (!ranks || *ranks == 1) return -1;
    // Help is printed once, by one process.
    for (const std::string& a : args) {
      if (a == "--") break;
      if (a == "-h" || a == "--help") return -1;
    }
    const ftbench::dist::Launch outer =
        ftbench::dist::launch_from_environment(ftbench::dist::environment_snapshot());
    if (outer.kind != ftbench::dist::LaunchKind::kSingle) {
      throw ftbench::dist::LaunchError(fmt::format(
          "--nproc-per-node starts ranks itself, but this process is already one ({}): leave "
          "--nproc-per-node out under torchrun or srun",
          ftbench::dist::describe(outer)));
    }
  } catch (const ftbench::dist::LaunchError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(ftbench::ExitCode::kBadInput);
  }
  try {
    // How long the ranks have to stop after one failed before they are killed.
    double grace_seconds = 30.0;
    if (const char* g = std::getenv("FTBENCH_STOP_GRACE_SECONDS"); g != nullptr) {
      char* end = nullptr;
      grace_seconds = std::strtod(g, &end);
      if (*g == '\0' || end == nullptr || *end != '\0' ||
          !(grace_seconds >= 0.0 && grace_seconds <= 86400.0)) {
        std::fprintf(stderr,
                     "error: FTBENCH_STOP_GRACE_SECONDS=\"%s\": expected a number of seconds "
                     "from 0 to 86400\n",
                     g);
        return static_cast<int>(ftbench::ExitCode::kBadInput);
      }
    }
    return ftbench::cli::run_local_ranks(target, args, *ranks, grace_seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return ftbench::cli::kExitFailure;
  }
}

// Under an address-space limit (ulimit -v) too small for LibTorch, ftbench-bin dies of
// std::bad_alloc in LibTorch's own static initialisers, before its main() could say anything or
// write a report (exit 134 and a "terminate called" line), or never gets there: Debian 13's
// OpenBLAS (0.3.29) retries a 128 MiB buffer that the limit refuses for good, at 100 % of a
// core. Where such a limit is set, a ftbench-bin that only loads and prints its version is tried
// first under it (about a second), for at most FTBENCH_LOAD_CHECK_SECONDS (default 30 s); one
// that does not come up in time is killed and said here. A stop signal (blocked since the first
// instruction, see below) ends the check and the command. Returns 0 when the run may go on, else
// the exit code.
int check_torch_loads_under_the_memory_limit(const std::string& target) {
  // The setting is checked whether or not a limit is set: a mistyped value shows at once.
  double deadline_seconds = 0.0;
  try {
    deadline_seconds = ftbench::device::load_check_seconds();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(ftbench::ExitCode::kBadInput);
  }
  const std::optional<uint64_t> limit = ftbench::device::address_space_limit();
  if (!limit) return 0;
  const std::string under = ftbench::device::describe_address_space_limit(*limit);
  // SIGCHLD joins the blocked stop signals, so that one sigtimedwait() waits for either.
  sigset_t waited;
  sigemptyset(&waited);
  for (const int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&waited, sig);
  sigset_t before;
  sigprocmask(SIG_BLOCK, &waited, &before);
  const pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    return 0;
  }
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execl(target.c_str(), target.c_str(), "--version", static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(deadline_seconds));
  int status = 0;
  int stopped_by = 0;
  bool ended = false;
  while (!ended && stopped_by == 0) {
    if (waitpid(child, &status, WNOHANG) == child) {
      ended = true;
      break;
    }
    const auto left = give_up - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    const auto left_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec wait_for{static_cast<time_t>(left_ns / 1000000000),
                            static_cast<long>(left_ns % 1000000000)};
    const int sig = sigtimedwait(&waited, nullptr, &wait_for);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) stopped_by = sig;
  }
  if (!ended) {
    kill(child, SIGKILL);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // A SIGCHLD still pending is dropped with the block lifted (its default action is to ignore).
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_UNBLOCK, &chld, nullptr);
  if (stopped_by != 0) {
    std::fprintf(stderr,
                 "ftbench: stopped by %s while checking that LibTorch loads under %s; nothing "
                 "was run\n",
                 ftbench::train::StopSignals::name(stopped_by).c_str(), under.c_str());
    return ftbench::cli::kExitInterrupted;
  }
  if (!ended) {
    std::fprintf(stderr,
                 "error: out of memory: LibTorch did not load within %g s under %s: %s --version "
                 "was still running and was killed (OpenBLAS retries a buffer the limit refuses "
                 "for good); raise the limit (ulimit -v unlimited)\n",
                 deadline_seconds, under.c_str(), target.c_str());
    return ftbench::cli::kExitFailure;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  const std::string how = WIFSIGNALED(status)
                              ? "of signal " + std::to_string(WTERMSIG(status)) +
                                    (WTERMSIG(status) == SIGABRT ? " (std::bad_alloc)" : "")
                              : "with status " + std::to_string(WEXITSTATUS(status));
  std::fprintf(stderr,
               "error: out of memory: LibTorch cannot load under %s: %s died %s before its "
               "main(); raise the limit (ulimit -v unlimited)\n",
               under.c_str(), target.c_str(), how.c_str());
  return ftbench::cli::kExitFailure;
}

int main(int argc, char** argv) {
  const std::string subcommand = ftbench::cli::subcommand_of(argc, argv);
  if (ftbench::cli::needs_torch(subcommand)) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
    const std::string target = sibling("ftbench-bin");
    if (const int code = check_torch_loads_under_the_memory_limit(target); code != 0) return code;
    std::vector<std::string> args(argv, argv + argc);
    if (subcommand == "run") {
      if (const int code = launch_local_ranks(args, target); code >= 0) return code;
    }
    std::vector<char*> exec_argv;
    for (std::string& a : args) exec_argv.push_back(a.data());
    exec_argv.push_back(nullptr);
    execv(target.c_str(), exec_argv.data());
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
