// Before any phase of a run: the checks that cost no machine time. The checkpoint folder is
// claimed (and cleaned of what a killed process left), the resume point read and checked, a
// stop before an earlier process's first step continued, and every output checked writable
// and claimed, so a run never trains for hours to find it may not write its report.
#pragma once

#include <optional>
#include <string>

#include "report/report_builder.h"
#include "run/profile_outputs.h"
#include "run/torch/resume_point.h"
#include "run/torch/run_context.h"
#include "train/torch/checkpoint.h"
#include "util/io/output_rules.h"

namespace ftbench::run::detail {

// What the start checks found (the resume point, the report at -o) and claimed (the checkpoint
// folder, the report path), held for the run's whole life.
struct StartState {
  // The checkpoint folder is this run's alone while it runs (a second run writing into it is
  // refused at once, not at a save). A run that saves only on a stop signal takes it then.
  std::optional<train::CheckpointDirLock> checkpoint_lock;
  std::optional<ResumePoint> resume;
  // The status of the report at -o before this run (none: no readable report there), and
  // whether this run may replace it.
  std::optional<std::string> old_report_status;
  bool replace_report = false;
  // Held to the end: a second run given the same -o is refused now, not after training.
  std::optional<io::OutputClaim> report_claim;
  // --resume latest found no checkpoint in the folder: the run starts at step 1 (when nothing
  // of this job's steps would be lost).
  bool resume_found_no_checkpoint = false;
  // The report at -o is of this job stopped before its first step: its processes are earlier
  // segments of this run, and the report (and its event log) are this run's to replace.
  bool continues_setup_stop = false;
  // --profile-steps: the files the profile goes to (rank 0's).
  ProfilePaths profile_paths;

  // The step this process starts at: 1, or the one after the resumed checkpoint's.
  int64_t first_step() const { return resume ? resume->manifest.step + 1 : 1; }
};

// Runs the checks in order, rank 0 alone touching what only it writes. The earlier segments a
// resumed or continued run carries go into `builder` (with their evaluations and checkpoints);
// an external start (--t0) before the end of the last of them is warned about. Throws what the run
// would fail with (io::FileExistsError, train::CheckpointError, spec::SpecError, BadInput), before
// any report.
void check_before_start(const RunContext& context, StartState& start,
                        report::ReportBuilder& builder);

// --stop-after-steps must name a step this process makes: at most the run's `total_steps` (0: a
// data file's, not counted before it is read) and after the step a resumed run continues
// after. BadInput (exit 2) otherwise: the run would go on to its end as if not asked to stop.
void check_stop_after_steps(const RunContext& context, const StartState& start,
                            int64_t total_steps);

// A stop asked for during set-up ends the run at the end of the phase `phase_name`:
// train::Interrupted (nothing of this segment is worth a checkpoint yet; a resumed run's
// checkpoint is still there).
void stop_if_asked(const RunContext& context, const StartState& start, const char* phase_name);

}  // namespace ftbench::run::detail
