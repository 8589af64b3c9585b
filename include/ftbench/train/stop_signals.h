// Stopping a run early on request: SIGTERM (a spot reclaim notice, `docker stop`, Slurm's
// preemption) or SIGINT (Ctrl-C), or `run --stop-after-steps`. The run finishes the step in
// flight, saves a checkpoint and a partial report (status "interrupted"), and exits with code 4.
#pragma once

#include <csignal>
#include <stdexcept>
#include <string>

namespace ftbench::train {

// The run stopped early on request, after saving what `run --resume` needs. Exit code 4.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// While one exists, the first SIGTERM or SIGINT is only recorded, for the run to act on at its
// next safe point (the end of a step or of a set-up phase); a second one ends the process at
// once with the signal's default action (SA_RESETHAND), for a user who will not wait. The
// previous handlers are restored on destruction. One at a time per process (std::logic_error
// otherwise): a signal handler can only reach process-wide state, so the flag it sets is a
// static sig_atomic_t, the one global of the program, owned by this class.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // 0, or the first stop signal received (SIGTERM, SIGINT).
  int received() const;

  // "SIGTERM", "SIGINT", else "signal N".
  static std::string name(int signal);

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

}  // namespace ftbench::train
