#include "run/torch/observers.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "train/dist/rank_fault.h"

namespace ftbench::run::detail {

void Observers::add(std::unique_ptr<RunObserver> observer) {
  all_.push_back(observer.get());
  owned_.push_back(std::move(observer));
}

void Observers::on_phase(const report::TimedPhase& phase) {
  for (RunObserver* o : all_) o->on_phase(phase);
}

void Observers::on_run_start(double now, const std::string& platform) {
  for (RunObserver* o : all_) o->on_run_start(now, platform);
}

void Observers::on_training_start(double now, int64_t first_step) {
  for (RunObserver* o : all_) o->on_training_start(now, first_step);
}

void Observers::on_step(const train::StepMeasurement& step, double now) {
  for (RunObserver* o : all_) o->on_step(step, now);
}

void Observers::on_evaluation(const report::EvaluationPass& evaluation, double start, double end) {
  for (RunObserver* o : all_) o->on_evaluation(evaluation, start, end);
}

void Observers::on_training_end(double now) {
  for (RunObserver* o : all_) o->on_training_end(now);
}

void Observers::on_finish(RunEnd end, double now, int64_t last_step) {
  std::exception_ptr first;
  for (RunObserver* o : all_) {
    try {
      o->on_finish(end, now, last_step);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

ProgressObserver::ProgressObserver(const RunContext& context, const report::Measured& measured)
    : context_(context), measured_(measured) {}

void ProgressObserver::on_training_start(double now, int64_t /*first_step*/) {
  const spec::RunSpec& spec = context_.spec;
  progress_.emplace(measured_.derived.total_steps, spec.output.progress,
                    spec.output.log_every_steps, context_.instrumentation.rate,
                    context_.request.launch.world_size);
  training_start_ = now;
}

void ProgressObserver::on_step(const train::StepMeasurement& step, double now) {
  if (progress_) {
    progress_->update(step, now - training_start_, now + measured_.start.t0_before_process_seconds);
  }
}

void ProgressObserver::on_training_end(double /*now*/) {
  if (progress_) progress_->finish();
  progress_.reset();
}

namespace {

MlLogJob mllog_job(const spec::RunSpec& spec, const report::Measured& measured) {
  MlLogJob j;
  j.seed = spec.train.seed;
  j.global_batch_size = measured.derived.effective_batch;
  j.gradient_accumulation_steps = spec.train.grad_accum_steps;
  j.max_sequence_length = spec.data.seq_len;
  j.base_learning_rate = spec.train.lr;
  j.warmup_steps = spec.train.lr_warmup_steps;
  j.weight_decay = spec.train.weight_decay;
  j.adam_beta1 = spec.train.beta1;
  j.adam_beta2 = spec.train.beta2;
  j.adam_epsilon = spec.train.eps;
  j.gradient_clip_norm = spec.train.max_grad_norm;
  j.lora_rank = spec.lora.rank;
  j.lora_alpha = spec.lora.alpha;
  j.lora_dropout = spec.lora.dropout;
  return j;
}

}  // namespace

EventLogObserver::EventLogObserver(const RunContext& context, const report::Measured& measured,
                                   bool replace, bool resumed, int64_t first_step)
    : context_(context),
      measured_(measured),
      first_step_(first_step),
      log_(context.instrumentation.mllog_path, replace, resumed,
           context.clock.start_epoch_seconds()) {
  log_.start_init(-measured.start.t0_before_process_seconds, context.clock.now(),
                  mllog_job(context.spec, measured));
}

int64_t EventLogObserver::epoch_of(int64_t step) const {
  const int64_t per_epoch = std::max<int64_t>(1, measured_.derived.steps_per_epoch);
  return (std::max<int64_t>(1, step) - 1) / per_epoch + 1;
}

void EventLogObserver::on_run_start(double now, const std::string& platform) {
  log_.start_run(now, platform);
}

void EventLogObserver::on_training_start(double now, int64_t first_step) {
  const std::optional<report::DataRead>& data = measured_.data;
  log_.start_training(now, first_step, epoch_of(first_step), data ? data->train.counts.examples : 0,
                      data && data->validation ? data->validation->counts.examples : 0,
                      measured_.derived.total_steps);
}

void EventLogObserver::on_step(const train::StepMeasurement& step, double now) {
  const int64_t total = measured_.derived.total_steps;
  const bool epoch_ended = step.step == total || epoch_of(step.step + 1) != step.epoch;
  log_.step_ended(now, step.step, step.epoch, epoch_ended, step.step < total);
}

void EventLogObserver::on_evaluation(const report::EvaluationPass& e, double start, double end) {
  log_.evaluation(start, end, e.after_step, epoch_of(e.after_step), e.loss,
                  e.after_step < measured_.derived.total_steps);
}

void EventLogObserver::on_finish(RunEnd end, double now, int64_t last_step) {
  // A stop that saved a checkpoint of this process's steps pauses the run: its resume
  // continues the log.
  if (end == RunEnd::kStopped && last_step >= first_step_) {
    log_.pause(now, last_step, epoch_of(last_step));
  } else {
    log_.stop_run(now, last_step, epoch_of(last_step), end == RunEnd::kCompleted);
  }
}

EnergyObserver::EnergyObserver(const RunContext& context, RunMeasurements& measured,
                               const std::unique_ptr<device::Backend>& backend)
    : context_(context), measured_(measured), backend_(backend), meter_(context.spec.backend) {}

void EnergyObserver::on_training_start(double /*now*/, int64_t /*first_step*/) {
  meter_.start(*backend_, context_.clock);
}

void EnergyObserver::on_training_end(double /*now*/) { record_energy(); }

void EnergyObserver::on_finish(RunEnd /*end*/, double /*now*/, int64_t /*last_step*/) {
  record_energy();
}

void EnergyObserver::record_energy() {
  // The meter finishes once: a run that ends after the loop keeps the loop's figure.
  if (measured_.measurements.energy) return;
  measured_.measurements.energy = meter_.finish();
}

void RankFaultObserver::on_step(const train::StepMeasurement& step, double /*now*/) {
  dist::inject_rank_fault(context_.test_hooks.inject_rank_fault, context_.request.launch.rank,
                          step.step);
}

}  // namespace ftbench::run::detail
