// `ftbench run` as one call: what the user asked for (RunRequest), what is measured and shown
// beside it (Instrumentation), the faults a test injects (TestHooks), and run_benchmark, which
// builds the run's components from the spec, trains, and writes the report
// (defined in src/run/torch/run_driver.cpp, whose RunDriver follows it phase by phase).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/process_clock.h"
#include "economics/cost/billing.h"
#include "report/measured_gemm.h"
#include "report/metrics/profile_table.h"
#include "run/outputs.h"
#include "spec/run_spec.h"
#include "train/dist/launch.h"
#include "train/dist/rank_fault.h"
#include "train/oom_fallback.h"
#include "train/stop_signals.h"
#include "util/io/output_rules.h"

namespace ftbench::report {
struct Report;
}  // namespace ftbench::report

namespace ftbench::run {

// The job and its outputs: what to train, where the report goes, how the run continues and
// which process of the job this is.
struct RunRequest {
  spec::RunSpec spec;
  std::string output_path;  // already resolved (--output or the spec's output.report)
  bool force = false;       // overwrite an existing report
  // --resume: "latest" (the newest checkpoint in train.checkpoint.dir), a checkpoint folder, or
  // a folder of checkpoints (its newest); "" starts from scratch.
  std::string resume;
  // --stop-after-steps: stop after this optimizer step as if interrupted (checkpoint, partial
  // report, exit code 4), to split a run into segments; 0: no such stop.
  int64_t stop_after_steps = 0;
  // How this process was launched (train/dist/launch.h): one process, or rank `rank` of a job of
  // `world_size` (data parallel). Rank 0 alone writes the report, checkpoints, the journal and
  // exports; every rank trains its share and stops, fails and finishes with the others.
  dist::Launch launch;
  // --from-report: the weights fingerprint the report's run trained ("" for random weights or
  // none to check); a run that loads other weights stops after loading them (exit 2).
  std::string expected_weights_fingerprint;
  // --from-report: the data fingerprint the report's run trained on ("" for none to check); a
  // run whose data differs stops once it is read (exit 2).
  std::string expected_data_fingerprint;
  // The files this invocation reads besides the spec's own (--from-report, --gemm, --catalog):
  // no output of the run may be one of them (util/io/output_rules.h).
  std::vector<io::NamedPath> inputs;
};

// What is measured and shown beside the training, none of which changes what is trained: the
// clock's origin, the MFU denominators, the event log, the live dollars, the profiled steps.
struct Instrumentation {
  // External start (instance boot, image pull) as Unix epoch seconds, and where it came from
  // ("--t0" or "FTBENCH_T0"); time to first step is then measured from there.
  std::optional<double> t0_epoch_seconds;
  std::string t0_source = "process_start";
  // When the spec was loaded and validated (process-clock seconds): ends the spec_load phase.
  double spec_loaded_seconds = 0.0;
  std::optional<double> peak_tflops;  // --peak-tflops, wins over the spec and the GPU table
  // A measured GEMM peak (`ftbench run --gemm FILE`): carried into the report, and its figure
  // for the run's dtype becomes the second MFU denominator when it was measured on this device.
  std::optional<report::MeasuredGemm> gemm;
  // --mllog, else the spec's output.mllog with "{name}" expanded: the MLPerf-style event log
  // (run/mllog.h); "" writes none. Refused like the report when it exists without --force;
  // a resumed run appends to it.
  std::string mllog_path;
  // --rate / --offer, else the spec's output.price: the live line shows the dollars so far and
  // the projected total, and the run's summary its cost. nullopt: no money shown.
  std::optional<cost::Rate> rate;
  // --profile-steps: LibTorch's profiler records these steps (rank 0's), and the trace and the
  // op and kernel tables are written beside the report (run/profile_outputs.h); the steps are
  // left out of the summary's timing figures.
  std::optional<metrics::ProfileWindow> profile_steps;
};

// Testing aids, read from the environment by the command: faults simulated where their rule
// matches. Unset in every real run.
struct TestHooks {
  // FTBENCH_INJECT_OOM: simulated out-of-memory errors (train/oom_fallback.h).
  std::optional<train::OomInjection> inject_oom;
  // FTBENCH_INJECT_RANK_FAULT: one rank exits, hangs or gets SIGTERM after a step.
  std::optional<dist::RankFault> inject_rank_fault;
};

struct RunOptions {
  RunRequest request;
  Instrumentation instrumentation;
  TestHooks test_hooks;
};

// ftbench's step switches in the environment (FTBENCH_FUSED_BLOCKS, FTBENCH_GPU_KERNELS) and
// what they allow with `spec` (selective checkpointing needs the fused blocks), checked before a
// run starts: BadInput, and no report written, for a bad value.
void check_step_switches(const spec::RunSpec& spec);

// Runs the benchmark and writes the report to request.output_path. Refuses to start (throws
// io::FileExistsError) when the report exists and force is off, so a long run is never
// lost at the end; with `resume`, the report of the run being resumed (same spec fingerprint,
// not completed) is replaced without --force. Saves checkpoints as train.checkpoint says; on
// SIGTERM/SIGINT or at stop_after_steps it saves one after the step in flight, writes the
// report with status "interrupted" and throws train::Interrupted. A checkpoint that cannot be
// used throws train::CheckpointError before training. Returns the report as written.
// `signals` says whether a stop was asked for (since the process started).
report::Report run_benchmark(const RunOptions& options, const device::ProcessClock& clock,
                             const train::StopSignals& signals);

}  // namespace ftbench::run
