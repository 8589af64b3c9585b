// Stopping a run early on request: SIGTERM (a spot reclaim notice, `docker stop`, Slurm's
// preemption), SIGINT (Ctrl-C), SIGHUP (the terminal or SSH session that started it closed), or
// `run --stop-after-steps`. The run finishes the step in
// flight (or the set-up phase in flight), saves a checkpoint and a partial report (status
// "interrupted"), and exits with code 4.
//
// From the first instant: the `ftbench` launcher blocks both signals before it exec()s
// ftbench-bin (a blocked signal stays pending across exec, even for PID 1, whose unhandled
// signals the kernel would otherwise drop), and ftbench-bin's main() creates a StopSignals first
// thing, which installs the handler and only then unblocks them. A signal sent while LibTorch
// loads is therefore recorded, not lost and not fatal.
#pragma once

#include <csignal>
#include <stdexcept>
#include <string>

#include "util/error.h"

namespace ftbench::train {

// The run stopped early on request, after saving what `run --resume` needs. Exit code 4.
class Interrupted : public InterruptedRun {
 public:
  using InterruptedRun::InterruptedRun;
};

// Owns the handling of SIGTERM, SIGINT and SIGHUP for the process. In the deferred mode (a run),
// the first of them is only recorded, for the run to act on at its next safe point (the end of a
// step or of a set-up phase), and a line on stderr says so; any second one, of either kind,
// ends the process at once with exit code 128 + signal, as PID 1 too (where the default action
// would be dropped). In the immediate mode (commands that have nothing to save: gemm, logits),
// any of them ends the process at once the same way. The previous handlers and signal mask are
// restored on destruction. One at a time per process (std::logic_error otherwise): a signal
// handler can only reach process-wide state, so the flags it reads and sets are statics, the
// one global state of the program, owned by this class.
class StopSignals {
 public:
  enum class Mode { kDeferred, kImmediate };

  // Installs the handler, then unblocks both signals (a signal that arrived while they were
  // blocked, before exec or before this, is delivered then and recorded).
  explicit StopSignals(Mode mode = Mode::kDeferred);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Switches to the immediate mode; a signal recorded before ends the process now.
  void stop_immediately_from_now();

  // From now on a stop saves a checkpoint (the run has made a step): the line a first signal
  // prints says so. Before, it says that a stop during set-up has nothing to checkpoint.
  static void checkpoint_on_stop();

  // 0, or the first stop signal received (SIGTERM, SIGINT, SIGHUP).
  int received() const;
  // Whether one was received, for code that has no StopSignals at hand (io::set_stop_requested).
  static bool stop_requested();

  // "SIGTERM", "SIGINT", "SIGHUP", else "signal N".
  static std::string name(int signal);

  // Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (the launcher, before exec). Returns
  // false when sigprocmask fails.
  static bool block_before_exec();
  // Undoes block_before_exec() where no exec follows.
  static void unblock();

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
  struct sigaction previous_hup_ {};
  sigset_t previous_mask_{};
};

// Signals that must not end a run: SIGPIPE (stdout closed, `ftbench run ... | head`), after
// which writes to the closed stream fail with EPIPE and logging goes on without it; SIGXFSZ (a
// file-size limit, `ulimit -f`), after which the write fails with EFBIG and the run reports which
// file could not be written. Both are ignored for the rest of the process.
void ignore_signals_that_would_kill_a_run();

}  // namespace ftbench::train
