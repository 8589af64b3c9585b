// Runs the ftbench executable as a user would, for the end-to-end tests: from the source tree (so
// configs/ resolve), stdout and stderr kept apart, the way it ended (exit code or signal), and a
// time limit, so that a hang fails the test instead of stalling it. Also a scratch folder per
// test. Needs FTBENCH_SOURCE_DIR and FTBENCH_BINARY defined by CMake.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace ftbench::e2e {

struct Outcome {
  int exit_code = -1;  // -1 unless it exited normally
  int signal = 0;      // the signal that ended it; 0 when it exited
  bool timed_out = false;
  double seconds = 0.0;
  std::string out;  // stdout
  std::string err;  // stderr
};

// 'text' for /bin/sh, whatever it contains.
inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `ftbench <args>` in the source tree. `args` is shell text (quote paths with shell_quote);
// `env` is "NAME=value ..." added to the environment. stdout and stderr go through files in
// `scratch` (so neither pipe can fill up and block). The shell execs ftbench, so a crash shows
// as its signal, not as the shell's exit code 128 + n. Killed with SIGKILL after
// `timeout_seconds`.
inline Outcome run_ftbench(const std::string& args, const std::filesystem::path& scratch,
                           const std::string& env = "", double timeout_seconds = 120.0) {
  const std::filesystem::path out_path = scratch / ".ftbench-stdout";
  const std::filesystem::path err_path = scratch / ".ftbench-stderr";
  const std::string command =
      "exec env " + env + " " + shell_quote(FTBENCH_BINARY) + " " + args + " </dev/null";
  const auto start = std::chrono::steady_clock::now();
  Outcome outcome;
  const pid_t pid = ::fork();
  if (pid < 0) return outcome;
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || ::chdir(FTBENCH_SOURCE_DIR) != 0) ::_exit(126);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        timeout_seconds) {
      outcome.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  outcome.out = slurp(out_path);
  outcome.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return outcome;
}

// A fresh, empty folder under the system's temporary folder, named for the running test and this
// process, removed with everything in it on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = prefix + "-" + std::to_string(::getpid());
    if (test != nullptr) name += std::string("-") + test->test_suite_name() + "-" + test->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised test names contain '/'
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ftbench::e2e
