#include "train/cadence.h"

namespace ftbench::train {

bool evaluation_due(int64_t step, int64_t total_steps, int64_t every) {
  return step == total_steps || (every > 0 && step % every == 0);
}

std::string_view to_string(SaveReason reason) {
  return text::spelling_of(kSaveReasonSpellings, reason);
}

Cadence::Cadence(int64_t total_steps, const spec::TrainSpec& train, bool validation,
                 int64_t stop_after_steps)
    : total_steps_(total_steps),
      eval_every_steps_(train.eval_every_steps),
      validation_(validation),
      save_every_steps_(train.checkpoint.every_steps),
      save_every_seconds_(train.checkpoint.every_minutes * 60.0),
      stop_after_steps_(stop_after_steps) {}

bool Cadence::evaluation_after(int64_t step) const {
  return validation_ && step < total_steps_ &&
         evaluation_due(step, total_steps_, eval_every_steps_);
}

bool Cadence::evaluation_after_training(int64_t steps_made) const {
  return validation_ && steps_made > 0;
}

std::optional<SaveReason> Cadence::periodic_save(int64_t step, double seconds_since_save) const {
  if (save_every_steps_ > 0 && step % save_every_steps_ == 0) return SaveReason::kEverySteps;
  if (save_every_seconds_ > 0.0 && seconds_since_save >= save_every_seconds_) {
    return SaveReason::kEveryMinutes;
  }
  return std::nullopt;
}

std::optional<SaveReason> Cadence::stop(int64_t step, int signal) const {
  if (step >= total_steps_) return std::nullopt;
  if (signal != 0) return SaveReason::kSignal;
  if (stop_after_steps_ > 0 && step == stop_after_steps_) return SaveReason::kStopAfterSteps;
  return std::nullopt;
}

StepDecision Cadence::decide(int64_t step, double seconds_since_save, int signal) const {
  return {periodic_save(step, seconds_since_save), stop(step, signal)};
}

}  // namespace ftbench::train
