// The kinds of error a command ends with, each carrying its exit code (README "Exit codes").
// Every error class of the library derives from one of them, so the command line has one catch
// (cli::run_cli) and an error's exit code is decided where it is thrown, by its kind.
#pragma once

#include <stdexcept>
#include <string>

namespace ftbench {

enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,      // an unexpected error: a bug in ftbench
  kBadInput = 2,      // an invalid spec, argument, input file or checkpoint
  kRunFailed = 3,     // the run failed (backend, out of memory, diverged, I/O)
  kInterrupted = 4,   // SIGTERM/SIGINT: checkpoint and partial report written
  kOutputExists = 5,  // an output exists and --force was not given
  kGateFailed = 6,    // `ftbench gate`: a rule failed (not an error: the gate did its job)
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode exit_code() const noexcept { return code_; }
  // What the command line prints before what().
  virtual const char* lead() const noexcept { return "error: "; }

 private:
  ExitCode code_;
};

class BadInput : public Error {
 public:
  explicit BadInput(const std::string& message) : Error(ExitCode::kBadInput, message) {}
};

class RunFailed : public Error {
 public:
  explicit RunFailed(const std::string& message) : Error(ExitCode::kRunFailed, message) {}
};

// Not a failure: the run stopped at a signal's request after saving what it could; the
// message says so, without "error: ".
class InterruptedRun : public Error {
 public:
  explicit InterruptedRun(const std::string& message) : Error(ExitCode::kInterrupted, message) {}
  const char* lead() const noexcept override { return ""; }
};

}  // namespace ftbench
