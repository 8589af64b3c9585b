#include "run/torch/training_loop.h"

#include <filesystem>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "device/process_clock.h"
#include "report/phase_names.h"
#include "report/run_status.h"
#include "report/summary_text.h"
#include "spec/canonical.h"
#include "train/checkpoint_files.h"
#include "train/stop_signals.h"
#include "train/torch/checkpoint.h"
#include "util/text/iso8601.h"
#include "util/text/units.h"
#include "util/version.h"

namespace ftbench::run::detail {

namespace phase = report::phase;

TrainingLoop::TrainingLoop(const RunContext& context, StartState& start, RunMeasurements& measured,
                           Components& built, Observers& observers, RunJournal& journal,
                           ReportAssembly& assembly)
    : context_(context),
      start_(start),
      measured_(measured),
      built_(built),
      observers_(observers),
      journal_(journal),
      assembly_(assembly),
      first_step_(start.first_step()),
      cadence_(measured.measurements.derived.total_steps, context.spec.train,
               !built.validation.empty(), context.request.stop_after_steps),
      training_split_at_(first_step_) {}

// Validation passes and checkpoint saves run between steps, outside every step's wall time
// (the trainer starts the next step's clock after the callback). Each is a phase of its own
// that splits the step loop's time: first_step, [evaluation], training, evaluation,
// checkpoint, training, ..., so the phases stay contiguous and in time order.
void TrainingLoop::run() {
  const spec::RunSpec& spec = context_.spec;
  const report::Measured& measured = measured_.measurements;
  spdlog::info("{}: {} on {} ({}), {} steps, {} parameters ({} base + {} trainable)",
               spec.output.name, spec.model.preset, built_.backend->info().name,
               built_.backend->kind(), measured.derived.total_steps, measured.parameters.total(),
               measured.parameters.base, measured.parameters.lora);
  if (const std::optional<train::OomInjection>& oom = context_.test_hooks.inject_oom) {
    spdlog::warn("FTBENCH_INJECT_OOM={}: simulated out-of-memory errors (a testing aid)",
                 oom->rule());
  }
  last_save_ = context_.clock.now();
  // From here a stop ends after the step in flight, with a checkpoint (and the first signal's
  // line says so; during set-up it says that there is nothing to save yet).
  train::StopSignals::checkpoint_on_stop();
  observers_.on_training_start(context_.clock.now(), first_step_);
  profile_.emplace(context_, start_, measured_, built_);
  train::LoopEnd end = train::LoopEnd::kCompleted;
  try {
    end = built_.trainer->run(measured_.result,
                              [this](const train::StepMeasurement& r) { return after_step(r); });
  } catch (const std::exception&) {
    // A run that ends inside the profile window: the steps recorded so far.
    profile_->end_early(last_step_made(measured_.result, first_step_));
    throw;
  }
  if (end == train::LoopEnd::kStopped) {
    observers_.on_training_end(context_.clock.now());
    // Every rank waits for rank 0's checkpoint before it ends: a launcher (torchrun) that takes
    // a rank's exit 4 for a failure and stops the others must not stop rank 0 in its save.
    if (context_.distributed()) built_.comm->barrier();
    // After the barrier: writing a profile may take longer than the ranks wait there.
    profile_->end_early(last_step_made(measured_.result, first_step_));
    throw train::Interrupted(stop_message_);
  }
  observers_.on_training_end(context_.clock.now());
  measured_.phases->end(phase::kTraining);
  if (cadence_.evaluation_after_training(static_cast<int64_t>(measured_.result.steps.size()))) {
    evaluate_after(measured_.result.steps.back().step);
  }
}

train::AfterStep TrainingLoop::after_step(const train::StepMeasurement& r) {
  profile_->step_ended(r.step);
  built_.comm->heartbeat(r.step);
  const double now = context_.clock.now();
  if (r.step == first_step_) {
    measured_.builder.first_step_ended(now);
    measured_.phases->end_at(phase::kFirstStep, now);
  }
  observers_.on_step(r, now);
  if (cadence_.evaluation_after(r.step)) {
    end_training_phase_at(r.step);
    evaluate_after(r.step);
  }
  // The ranks agree after the pass, so a signal that came during it stops the run here.
  double since_save = now - last_save_;
  int signal = agree_on_stop(since_save);
  train::StepDecision next = cadence_.decide(r.step, since_save, signal);
  std::string saved;
  if (next.save) {
    end_training_phase_at(r.step);
    saved = save_checkpoint(r.step, *next.save, next.stop.has_value());
    // A stop asked for during the save: the checkpoint just written is the one to resume from,
    // rather than one more step and another save. (Several ranks agree at the next step.)
    if (!next.stop && !context_.distributed()) {
      signal = context_.signals.received();
      next.stop = cadence_.stop(r.step, signal);
    }
  }
  if (!next.stop) {
    // The first signal's line promised a stop after the step in flight; after the last step
    // there is nothing left to resume, so the run ends as it would have (the same on every
    // rank: they agreed on the signal).
    if (signal != 0 && r.step == cadence_.total_steps()) {
      spdlog::warn(
          "{} came during the last step ({} of {}): nothing is left to stop; the run "
          "completes and writes its report",
          train::StopSignals::name(signal), r.step, cadence_.total_steps());
    }
    return train::AfterStep::kContinue;
  }
  if (saved.empty()) {
    end_training_phase_at(r.step);
    saved = save_checkpoint(r.step, *next.stop, true);
  }
  stop_message_ = fmt::format(
      "{} after step {} of {}; checkpoint {}; to continue, run the same command with "
      "--resume latest",
      *next.stop == train::SaveReason::kSignal
          ? "stopped by " + train::StopSignals::name(signal)
          : fmt::format("stopped by --stop-after-steps {}", context_.request.stop_after_steps),
      r.step, cadence_.total_steps(), saved);
  return train::AfterStep::kStop;
}

int TrainingLoop::agree_on_stop(double& since_save) {
  const int signal = context_.signals.received();
  if (!context_.distributed()) return signal;
  // One small collective per step: the largest signal number of any rank, and rank 0's time
  // since its last save (the others give -1).
  at::Tensor agreed =
      at::tensor({double(signal), context_.lead() ? since_save : -1.0}, at::kDouble);
  built_.comm->all_reduce_max(agreed);
  since_save = agreed[1].item<double>();
  return static_cast<int>(agreed[0].item<double>());
}

void TrainingLoop::end_training_phase_at(int64_t step) {
  if (step > training_split_at_) measured_.phases->end(phase::kTraining);
  training_split_at_ = step;
}

void TrainingLoop::evaluate_after(int64_t step) {
  const double start = context_.clock.now();
  const train::EvalResult e = train::evaluate(built_.model, built_.validation, *built_.backend,
                                              context_.spec.train.eval_max_batches);
  measured_.phases->end(phase::kEvaluation);
  const report::EvaluationPass evaluation{step, e.loss, e.loss_tokens, e.batches, e.seconds};
  observers_.on_evaluation(evaluation, start, context_.clock.now());
  measured_.measurements.evaluations.push_back(evaluation);
  spdlog::info("step {}: validation loss {:.4f} over {} tokens ({} micro-batches, {:.3f} s)", step,
               e.loss, e.loss_tokens, e.batches, e.seconds);
}

std::string TrainingLoop::save_checkpoint(int64_t step, train::SaveReason why, bool stopping) {
  if (!context_.lead()) {
    // The ranks' states are equal: rank 0's checkpoint is the job's.
    last_save_ = context_.clock.now();
    return fmt::format("{} (written by rank 0)", (std::filesystem::path(context_.checkpoint_dir) /
                                                  train::checkpoint_folder_name(step))
                                                     .string());
  }
  const spec::CheckpointSpec& cp = context_.spec.train.checkpoint;
  const std::string reason(train::to_string(why));
  // A run that saves only on a stop signal takes the folder's lock now.
  if (!start_.checkpoint_lock) {
    try {
      start_.checkpoint_lock.emplace(context_.checkpoint_dir);
    } catch (const train::CheckpointError& e) {
      throw train::CheckpointWriteError(e.what());
    }
    train::clean_checkpoint_leftovers(context_.checkpoint_dir);
  }
  built_.backend->synchronize();
  const double start = context_.clock.now();
  train::CheckpointManifest m;
  m.created_at_utc = text::iso8601_utc(context_.clock.start_epoch_seconds() + start);
  m.reason = reason;
  m.ftbench_version = ftbench::version();
  m.spec_fingerprint = context_.spec_fingerprint;
  m.data_fingerprint = measured_.measurements.data->train.counts.fingerprint;
  m.spec = nlohmann::ordered_json::parse(spec::canonical_job_json(context_.spec));
  // The segment as of this save: "interrupted" when the run stops here, "unfinished" when it
  // goes on (a process that then dies records nothing more).
  const std::vector<model::StepFlops> flops =
      assembly_.assemble(stopping ? report::status::kInterrupted : report::status::kUnfinished);
  for (const model::StepFlops& f : flops) {
    m.step_flops.push_back(
        {f.lora_frozen_base, f.lora_frozen_base_recompute, f.six_n, f.six_n_recompute, f.executed});
  }
  const std::string path =
      (std::filesystem::path(context_.checkpoint_dir) / train::checkpoint_folder_name(step))
          .string();
  // The report the checkpoint carries records this save too, measured up to the manifest's
  // write (the milliseconds of that write are only in the live report's figure).
  const train::SavedCheckpointFolder saved =
      train::save_checkpoint(context_.checkpoint_dir, cp.keep_last, *built_.trainer, std::move(m),
                             measured_.measurements.derived.steps_per_epoch,
                             built_.backend->device(), [&](train::CheckpointManifest& full) {
                               measured_.measurements.checkpoints.push_back(
                                   {step, measured_.builder.segment_index(), reason, path,
                                    full.tensors_bytes, context_.clock.now() - start});
                               full.report = measured_.builder.report_json_now();
                               measured_.measurements.checkpoints.pop_back();
                             });
  const double seconds = context_.clock.now() - start;
  measured_.measurements.checkpoints.push_back(
      {step, measured_.builder.segment_index(), reason, saved.path, saved.bytes, seconds});
  journal_.keep();
  measured_.phases->end(phase::kCheckpoint);  // and the journal, with this save
  last_save_ = context_.clock.now();
  spdlog::info("step {}: checkpoint {} ({}, {} in {:.3f} s)", step, saved.path, reason,
               text::format_bytes(saved.bytes), seconds);
  return saved.path;
}

}  // namespace ftbench::run::detail
