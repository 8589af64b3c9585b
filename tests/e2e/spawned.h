// A process of the end-to-end tests started without a shell in between, so that a signal sent to
// it reaches ftbench itself: in the source tree, stdin from /dev/null, stdout and stderr into
// files of a scratch folder. Needs FTBENCH_SOURCE_DIR defined by CMake.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ftbench_process.h"

extern char** environ;

namespace ftbench::e2e {

// Whether process `pid` blocks or catches `sig` (/proc/PID/status, SigBlk and SigCgt), waiting
// up to 30 s: ftbench's launcher blocks the stop signals from its first instruction on and
// ftbench-bin catches them, so from then on one is a clean stop, long before a step.
inline bool handles_signal_soon(pid_t pid, int sig) {
  const uint64_t bit = uint64_t{1} << (sig - 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("SigBlk:", 0) == 0 || line.rfind("SigCgt:", 0) == 0) {
        if (std::stoull(line.substr(7), nullptr, 16) & bit) return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A process started without a shell in between (a signal must reach ftbench itself), in the
// source tree, stdout and stderr into files.
class Spawned {
  using Clock = std::chrono::steady_clock;

 public:
  Spawned(const std::vector<std::string>& argv, const std::filesystem::path& dir) : dir_(dir) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addchdir_np(&actions, FTBENCH_SOURCE_DIR);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, (dir / "stdout").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (dir / "stderr").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    started_ = Clock::now();
    spawned_ = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Spawned() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  bool spawned() const { return spawned_; }
  pid_t pid() const { return pid_; }
  std::string err() const { return slurp(dir_ / "stderr"); }
  std::string out() const { return slurp(dir_ / "stdout"); }

  // Whether the process blocks or catches `sig` soon (handles_signal_soon).
  bool handles_soon(int sig) const;

  // Sleeps until `seconds` after the start.
  void at(double seconds) const {
    std::this_thread::sleep_until(started_ + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(seconds)));
  }
  // Waits until stderr (or stdout, where the log goes) holds `text`; false after `timeout`
  // seconds.
  bool wait_for_err(const std::string& text, double timeout = 120.0) const {
    return wait_for(text, timeout, false);
  }
  bool wait_for_out(const std::string& text, double timeout = 120.0) const {
    return wait_for(text, timeout, true);
  }
  bool wait_for(const std::string& text, double timeout, bool out_not_err) const {
    const auto deadline = Clock::now() + std::chrono::seconds(static_cast<int>(timeout));
    while ((out_not_err ? out() : err()).find(text) == std::string::npos) {
      // A process that ended (a zombie until it is reaped) writes nothing more.
      if (Clock::now() > deadline || ended()) {
        return (out_not_err ? out() : err()).find(text) != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  // Whether the process has ended (it is a zombie, not reaped yet): /proc/PID/stat's state.
  bool ended() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t close = line.rfind(')');
    return close == std::string::npos || (close + 2 < line.size() && line[close + 2] == 'Z');
  }
  // The exit code (-1 when killed: then `signal` is set), waiting at most `timeout` seconds.
  int wait(double timeout = 120.0) {
    const auto deadline = Clock::now() + std::chrono::seconds(static_cast<int>(timeout));
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reaped_ = true;
    if (WIFSIGNALED(status)) signal = WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  int signal = 0;
  bool timed_out = false;

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  bool spawned_ = false;
  bool reaped_ = false;
  Clock::time_point started_;
};

inline bool Spawned::handles_soon(int sig) const { return handles_signal_soon(pid_, sig); }

}  // namespace ftbench::e2e
