// When the step loop pauses between optimizer steps, as a policy of its own (torchtitan's
// checkpointer and evaluator intervals): a validation pass, a checkpoint save, and a stop. It
// decides from the step, the run's length and the host clock since the last save only, so the
// rules are tested without a model; the run does what it says (src/run/torch/training_loop.cpp).
// Pure code, no LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "spec/run_spec.h"
#include "util/text/spellings.h"

namespace ftbench::train {

// Whether a validation pass follows optimizer step `step` (1-based) of `total_steps`: every
// `every` steps when `every` > 0, and after the last step.
bool evaluation_due(int64_t step, int64_t total_steps, int64_t every);

// Why a checkpoint is saved; the names are the report's `checkpoints[].reason`.
enum class SaveReason { kEverySteps, kEveryMinutes, kSignal, kStopAfterSteps };
inline constexpr text::Spelling<SaveReason> kSaveReasonSpellings[] = {
    {SaveReason::kEverySteps, "every_steps"},
    {SaveReason::kEveryMinutes, "every_minutes"},
    {SaveReason::kSignal, "signal"},
    {SaveReason::kStopAfterSteps, "stop_after_steps"}};
std::string_view to_string(SaveReason reason);  // "every_steps", ..., "stop_after_steps"

// How the step loop goes on after optimizer step `step` (and its validation pass, if one is
// due): a periodic save, then either the next step or the save that stops the run there (the
// loop then ends; the run is interrupted, resumable). No save and no stop: continue.
struct StepDecision {
  std::optional<SaveReason> save;  // periodic_save()
  std::optional<SaveReason> stop;  // stop()
};

class Cadence {
 public:
  // `stop_after_steps`: --stop-after-steps (0: none); `validation`: whether the run has
  // validation data.
  Cadence(int64_t total_steps, const spec::TrainSpec& train, bool validation,
          int64_t stop_after_steps);

  // A validation pass after `step`, inside the step loop. The pass after the last step is not
  // one of these: it follows the training phase (evaluation_after_training()).
  bool evaluation_after(int64_t step) const;
  // The pass after the last step, when the run has validation data and made a step.
  bool evaluation_after_training(int64_t steps_made) const;

  // A periodic save after `step`, `seconds_since_save` after the last save (or the loop's
  // start): every checkpoint.every_steps steps (the last step included, so the trained
  // adapters are on disk), or once checkpoint.every_minutes have passed. By steps wins when
  // both are due. nullopt: no periodic save.
  std::optional<SaveReason> periodic_save(int64_t step, double seconds_since_save) const;

  // The save that stops the run after `step`: a stop signal (`signal` != 0), or the step of
  // --stop-after-steps. nullopt after the last step (a stop there is moot) or without either.
  std::optional<SaveReason> stop(int64_t step, int signal) const;

  // The save and stop rules above at once, after `step`.
  StepDecision decide(int64_t step, double seconds_since_save, int signal) const;

  int64_t total_steps() const { return total_steps_; }

 private:
  int64_t total_steps_;
  int64_t eval_every_steps_;
  bool validation_;
  int64_t save_every_steps_;
  double save_every_seconds_;
  int64_t stop_after_steps_;
};

}  // namespace ftbench::train
