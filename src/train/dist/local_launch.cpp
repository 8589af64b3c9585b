#include "train/dist/local_launch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "train/dist/launch.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::dist {
namespace {

constexpr std::string_view kFlag = "--nproc-per-node";

int64_t nproc_value(const std::string& text) {
  if (text.empty()) {
    throw LaunchError("--nproc-per-node: expected a value, found an empty string");
  }
  int64_t n = 0;
  const std::errc parsed = text::parse_int(text, n);
  double decimal = 0.0;
  if (parsed == std::errc::invalid_argument &&
      text::parse_double(text, decimal) == std::errc::invalid_argument) {
    throw LaunchError("--nproc-per-node: expected a decimal number, found " + text::quoted(text));
  }
  if (parsed != std::errc{} || n < 1 || n > kMaxLocalRanks) {
    throw LaunchError("--nproc-per-node: " + text::whole_number_message(1, kMaxLocalRanks, text));
  }
  return n;
}

}  // namespace

std::optional<int64_t> take_nproc_per_node(std::vector<std::string>& args) {
  std::optional<int64_t> found;
  for (std::size_t i = 1; i < args.size();) {
    const std::string& a = args[i];
    if (a == "--") break;
    std::optional<int64_t> value;
    std::size_t taken = 0;
    if (a == kFlag) {
      if (i + 1 >= args.size() || args[i + 1] == "--") {
        throw LaunchError("--nproc-per-node needs a value: the number of ranks to start");
      }
      value = nproc_value(args[i + 1]);
      taken = 2;
    } else if (a.rfind(std::string(kFlag) + "=", 0) == 0) {
      value = nproc_value(a.substr(kFlag.size() + 1));
      taken = 1;
    }
    if (!value) {
      ++i;
      continue;
    }
    if (found) throw LaunchError("--nproc-per-node is given twice");
    found = value;
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i + taken));
  }
  return found;
}

std::vector<std::string> rank_environment(const std::vector<std::string>& base, int64_t rank,
                                          int64_t ranks, int port, int64_t cores) {
  const std::vector<std::string_view>& launch = launch_variables();
  std::vector<std::string> env;
  bool omp_given = false;
  for (const std::string& entry : base) {
    const std::string name = entry.substr(0, entry.find('='));
    if (std::find(launch.begin(), launch.end(), name) != launch.end()) continue;
    if (name == "OMP_NUM_THREADS") omp_given = true;
    env.push_back(entry);
  }
  env.push_back(fmt::format("RANK={}", rank));
  env.push_back(fmt::format("LOCAL_RANK={}", rank));
  env.push_back(fmt::format("WORLD_SIZE={}", ranks));
  env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", ranks));
  env.push_back("GROUP_RANK=0");
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back(fmt::format("MASTER_PORT={}", port));
  env.push_back("FTBENCH_LAUNCH=local");
  if (!omp_given) {
    env.push_back(fmt::format("OMP_NUM_THREADS={}", std::max<int64_t>(1, cores / ranks)));
  }
  return env;
}

void follow_launcher() {
  const char* launcher = std::getenv("FTBENCH_LAUNCHER_PID");
  const char* kind = std::getenv("FTBENCH_LAUNCH");
  if (launcher == nullptr || *launcher == '\0' || kind == nullptr || std::string(kind) != "local") {
    return;
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // Gone before the line above: the parent is someone else now.
  if (std::to_string(getppid()) != launcher) kill(getpid(), SIGTERM);
}

int launcher_exit_code(const std::vector<RankExit>& ends) {
  for (const RankExit& e : ends) {
    if (e.signal != 0) return 128 + e.signal;
    if (e.exit_code != 0 && e.exit_code != kStoppedExitCode) return e.exit_code;
  }
  for (const RankExit& e : ends) {
    if (e.exit_code == kStoppedExitCode) return kStoppedExitCode;
  }
  return 0;
}

std::string describe(const RankExit& end) {
  if (end.signal != 0) return fmt::format("rank {} was killed by signal {}", end.rank, end.signal);
  return fmt::format("rank {} exited with code {}", end.rank, end.exit_code);
}

}  // namespace ftbench::dist
