// One `ftbench run` process from its options to its report (run_benchmark in
// run/run_benchmark.h): the checks before any phase (start_checks.h), the set-up phases that
// build the components (components.h), the step loop (training_loop.h), the exports, and the
// report written once at the end, or after a failure or a stop with what was measured. Each
// phase is ended and metered by the phase timer; the observers (observers.h, run_journal.h)
// are told of the phases, the steps and the end.
#pragma once

#include <exception>

#include "device/process_clock.h"
#include "run/run_benchmark.h"
#include "run/torch/components.h"
#include "run/torch/observers.h"
#include "run/torch/report_assembly.h"
#include "run/torch/run_context.h"
#include "run/torch/run_journal.h"
#include "run/torch/start_checks.h"
#include "train/stop_signals.h"

namespace ftbench::report {
struct Report;
}  // namespace ftbench::report

namespace ftbench::run::detail {

// Constructed with the checks that cost no machine time; execute() then runs the phases in
// order and writes the report. Not copyable; used from the run's thread.
class RunDriver {
 public:
  RunDriver(const RunOptions& options, const device::ProcessClock& clock,
            const train::StopSignals& signals);
  RunDriver(const RunDriver&) = delete;
  RunDriver& operator=(const RunDriver&) = delete;

  report::Report execute();

 private:
  // What is known at the start (the run's name, spec, clock origin, parameter and step counts,
  // the measured GEMM), the launch and spec_load phases, the meters, the observers that watch
  // from the start, the journal.
  void record_start();
  // backend_init to checkpoint_load, each phase ended (and a stop asked for during it honoured)
  // as it is done.
  void set_up();
  void end_setup_phase(const char* name);
  // How the step runs: the attention kernel, the checkpointing policy, the step's switches.
  void record_execution();
  // The trained adapter for the serving stack: PEFT's format, and merged full weights.
  void export_outputs();
  void export_to(const char* kind, const char* phase_name, const std::string& dir);
  // The summary, then the report: the write is timed on the real file, then the file is
  // rewritten with that time in it (the second write, of the same size, is not counted).
  report::Report finish();
  // Keeps what was measured: the phases that ended, the steps that finished, and why it
  // stopped. The error then goes on to the command line.
  void record_failure(const std::exception& e);
  int64_t last_step() const;

  RunContext context_;
  StartState start_;
  RunMeasurements measured_;
  Components built_;
  CheckpointingPolicy checkpointing_;
  ReportAssembly assembly_;
  RunJournal journal_;
  Observers observers_;
  bool loop_started_ = false;
};

}  // namespace ftbench::run::detail
