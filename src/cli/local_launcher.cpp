#include "cli/local_launcher.h"

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "train/dist/launch.h"
#include "train/dist/local_launch.h"

extern char** environ;

namespace ftbench::cli {
namespace {

// A free TCP port on 127.0.0.1 for the job's store (rank 0 binds it a moment later).
int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw RunFailure(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int error = errno;
  close(fd);
  if (!ok) throw RunFailure(std::string("cannot find a free port: ") + std::strerror(error));
  return ntohs(addr.sin_port);
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (std::string& s : items) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

int run_local_ranks(const std::string& program, const std::vector<std::string>& args, int64_t ranks,
                    double grace_seconds) {
  const int port = free_loopback_port();
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e) base.emplace_back(*e);
  std::vector<std::string> argv_strings = args;
  // The ranks are ftbench-bin, and say so in ps and pgrep.
  if (!argv_strings.empty()) argv_strings[0] = program;
  std::vector<char*> argv = c_strings(argv_strings);
  base.erase(
      std::remove_if(base.begin(), base.end(),
                     [](const std::string& e) { return e.rfind("FTBENCH_LAUNCHER_PID=", 0) == 0; }),
      base.end());
  base.push_back("FTBENCH_LAUNCHER_PID=" + std::to_string(getpid()));

  // The ranks in a process group of their own: a terminal's Ctrl-C reaches this launcher only,
  // which passes it on once (a rank that got it twice would stop at once, without its
  // checkpoint).
  std::map<pid_t, int64_t> running;
  pid_t group = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    std::vector<std::string> env_strings = dist::rank_environment(base, r, ranks, port, cores);
    std::vector<char*> env = c_strings(env_strings);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, group);
    pid_t pid = 0;
    const int error = posix_spawn(&pid, program.c_str(), nullptr, &attr, argv.data(), env.data());
    posix_spawnattr_destroy(&attr);
    if (error != 0) {
      if (group != 0) kill(-group, SIGKILL);
      throw RunFailure(
          fmt::format("cannot start rank {} ({}): {}", r, program, std::strerror(error)));
    }
    if (group == 0) group = pid;
    running[pid] = r;
  }
  std::fprintf(stderr, "ftbench: started %lld ranks on this machine (store 127.0.0.1:%d)\n",
               static_cast<long long>(ranks), port);

  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGTERM);
  sigaddset(&wanted, SIGINT);
  sigaddset(&wanted, SIGHUP);  // the session that started the job closed: a stop, passed on
  sigaddset(&wanted, SIGCHLD);
  sigprocmask(SIG_BLOCK, &wanted, nullptr);

  std::vector<dist::RankExit> ends;
  bool ending = false;  // a rank failed: the others were told to stop
  // The ranks were asked to stop (a signal passed on): a failure then tells them nothing new,
  // and a signal right after the first (GNU timeout sends one to its child, then to its group)
  // is the same stop, not the second that ends them at once.
  std::chrono::steady_clock::time_point stop_passed_at{};
  bool stop_passed = false;
  std::chrono::steady_clock::time_point kill_at{};
  while (!running.empty()) {
    // Reap first: a rank may have ended before SIGCHLD was blocked.
    int status = 0;
    pid_t pid = 0;
    while ((pid = waitpid(-group, &status, WNOHANG)) > 0) {
      const auto it = running.find(pid);
      if (it == running.end()) continue;
      dist::RankExit end{it->second, WIFEXITED(status) ? WEXITSTATUS(status) : 0,
                         WIFSIGNALED(status) ? WTERMSIG(status) : 0};
      running.erase(it);
      ends.push_back(end);
      // Exit 4 is a rank that stopped as asked (a signal), with the others at the same step.
      const bool failed =
          end.signal != 0 || (end.exit_code != 0 && end.exit_code != dist::kStoppedExitCode);
      if (failed && !ending && !stop_passed && !running.empty()) {
        std::fprintf(stderr, "ftbench: %s; stopping the other ranks\n",
                     dist::describe(end).c_str());
        ending = true;
        kill(-group, SIGTERM);
        kill_at = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(grace_seconds * 1000.0));
      }
    }
    if (running.empty()) break;
    if (ending && std::chrono::steady_clock::now() >= kill_at) {
      std::fprintf(stderr, "ftbench: %zu rank(s) still running %.0f s after the stop: killed\n",
                   running.size(), grace_seconds);
      kill(-group, SIGKILL);
      ending = true;
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    timespec wait{0, 200'000'000};  // also wakes to check the grace deadline
    const int sig = sigtimedwait(&wanted, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      const auto now = std::chrono::steady_clock::now();
      if (stop_passed && now - stop_passed_at < std::chrono::seconds(2)) continue;
      kill(-group, sig);
      stop_passed = true;
      stop_passed_at = now;
    }
  }
  return dist::launcher_exit_code(ends);
}

}  // namespace ftbench::cli
