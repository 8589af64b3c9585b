// The step loop of a run and what it does between steps: the trainer (train/torch/trainer.h) makes
// the steps and, after each, asks this loop what follows. The loop decides by the cadence
// (train/cadence.h: a validation pass, a periodic save, a stop) with the ranks agreeing on
// stops and saves, tells the observers, and answers continue or stop. A stop saves a
// checkpoint and ends the loop; run() then throws train::Interrupted for the driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "run/torch/components.h"
#include "run/torch/observers.h"
#include "run/torch/report_assembly.h"
#include "run/torch/run_context.h"
#include "run/torch/run_journal.h"
#include "run/torch/start_checks.h"
#include "run/torch/step_profile.h"
#include "train/cadence.h"
#include "train/torch/trainer.h"

namespace ftbench::run::detail {

class TrainingLoop {
 public:
  TrainingLoop(const RunContext& context, StartState& start, RunMeasurements& measured,
               Components& built, Observers& observers, RunJournal& journal,
               ReportAssembly& assembly);
  TrainingLoop(const TrainingLoop&) = delete;
  TrainingLoop& operator=(const TrainingLoop&) = delete;

  // Makes the steps left, each phase ended in turn (first_step, training, and the validation
  // passes and saves that split it), then the validation pass after the last step. Throws
  // train::Interrupted after a stop's checkpoint, and what the trainer throws.
  void run();

 private:
  // What follows step `r`: the decision, carried out.
  train::AfterStep after_step(const train::StepMeasurement& r);
  // Data parallel: the ranks agree at each step's end whether to stop (a signal on any rank) and
  // whether a periodic save is due (by rank 0's clock). Returns the signal to stop for (0: none)
  // and sets `since_save` to rank 0's seconds since the last save.
  int agree_on_stop(double& since_save);
  // Ends the training phase at the end of `step`, unless it ended there already.
  void end_training_phase_at(int64_t step);
  void evaluate_after(int64_t step);
  // Rank 0 writes the checkpoint (the ranks' states are equal); returns its folder.
  std::string save_checkpoint(int64_t step, train::SaveReason why, bool stopping);

  const RunContext& context_;
  StartState& start_;
  RunMeasurements& measured_;
  Components& built_;
  Observers& observers_;
  RunJournal& journal_;
  ReportAssembly& assembly_;
  const int64_t first_step_;
  train::Cadence cadence_;
  std::optional<StepProfile> profile_;
  int64_t training_split_at_;  // the step whose end last ended a phase
  double last_save_ = 0.0;
  std::string stop_message_;  // why the loop stopped, for train::Interrupted
};

}  // namespace ftbench::run::detail
