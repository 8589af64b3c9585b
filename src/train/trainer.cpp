#include "ftbench/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>

#include "ftbench/data/prefetcher.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/spec/derived.h"
#include "ftbench/train/adamw.h"
#include "ftbench/train/loss_scaler.h"
#include "ftbench/train/lr_schedule.h"

namespace ftbench::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

metrics::StepFlops micro_batch_flops(const spec::ModelSpec& m, const model::ParamCounts& c,
                                     const data::MicroBatch& mb) {
  using model::FlopFormula;
  const int64_t s = mb.input_ids.size(1);
  const double tokens = double(mb.real_tokens);
  auto per_token = [&](FlopFormula f, bool recompute) {
    return model::training_flops_per_token(m, c, s, f, recompute);
  };
  return {tokens * per_token(FlopFormula::kLoraFrozenBase, false),
          tokens * per_token(FlopFormula::kLoraFrozenBase, true),
          tokens * per_token(FlopFormula::kSixN, false),
          tokens * per_token(FlopFormula::kSixN, true)};
}

// The first line of the error's message, without LibTorch's backtrace.
std::string error_first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string message = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  return message.substr(0, message.find('\n'));
}

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return c10_error != nullptr && is_out_of_memory_message(c10_error->what_without_backtrace());
}

EvalResult evaluate(model::Llama& model, const std::vector<data::Batcher*>& batchers,
                    device::Backend& backend, int64_t max_batches) {
  EvalResult out;
  backend.synchronize();
  const Clock::time_point start = Clock::now();
  const bool was_training = model->is_training();
  model->eval();
  {
    torch::NoGradGuard no_grad;
    // Summed on the device in fp64: one host sync at the end, and no rounding drift over a
    // long pass.
    at::Tensor loss_sum =
        at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(backend.device()));
    for (data::Batcher* batcher : batchers) {
      const int64_t n = batcher->batches_per_epoch();
      for (int64_t i = 0; i < n; ++i) {
        if (max_batches > 0 && out.batches >= max_batches) break;
        const data::MicroBatch mb = batcher->get(1, i);
        ++out.batches;
        if (mb.loss_tokens == 0) continue;
        loss_sum.add_(model
                          ->loss_sum(mb.input_ids, mb.labels, mb.loss_positions, mb.position_ids,
                                     mb.segment_ids)
                          .to(at::kDouble));
        out.loss_tokens += mb.loss_tokens;
      }
    }
    out.loss = out.loss_tokens > 0 ? loss_sum.item<double>() / double(out.loss_tokens)
                                   : std::numeric_limits<double>::quiet_NaN();
  }
  if (was_training) model->train();
  backend.synchronize();
  out.seconds = seconds_between(start, Clock::now());
  return out;
}

bool evaluation_due(int64_t step, int64_t total_steps, int64_t every) {
  return step == total_steps || (every > 0 && step % every == 0);
}

Diverged::Diverged(int64_t step, double loss)
    : RunFailed(fmt::format(
          "step {}: the training loss is {} (not finite): the run diverged; lower train.lr, "
          "set train.max_grad_norm, or use bf16/fp32 rather than fp16",
          step, std::isnan(loss) ? std::string("nan") : fmt::format("{}", loss))),
      step_(step) {}

Trainer::Trainer(const spec::RunSpec& spec, model::Llama& model, data::Batcher& batcher,
                 device::Backend& backend, std::optional<OomInjection> inject_oom)
    : spec_(spec),
      model_(model),
      batcher_(batcher),
      backend_(backend),
      inject_oom_(std::move(inject_oom)) {}

void Trainer::run(TrainResult& result, const StepCallback& on_step) {
  const spec::TrainSpec& t = spec_.train;
  // From the batcher: with packing, an epoch's micro-batches are known only once rows are packed.
  const spec::DerivedCounts counts =
      spec::derive_counts_from_batches(spec_, batcher_.batches_per_epoch());
  if (counts.steps_per_epoch < 1) {
    throw std::invalid_argument(
        fmt::format("an epoch has {} micro-batches: 0 optimizer steps with grad_accum_steps {}",
                    batcher_.batches_per_epoch(), t.grad_accum_steps));
  }
  const model::ParamCounts params = model::count_parameters(spec_.model, spec_.lora);

  names_.clear();
  trainable_.clear();
  for (auto& [name, tensor] : model_->trainable_named_parameters()) {
    names_.push_back(name);
    trainable_.push_back(tensor);
  }
  std::vector<at::Tensor>& trainable = trainable_;
  // train/adamw.h: torch::optim::AdamW's arithmetic (bit for bit on CPU) in multi-tensor ops,
  // or the fused kernel on GPUs with LibTorch >= 2.1.
  optimizer_ = std::make_unique<AdamW>(trainable,
                                       AdamWOptions{t.lr, t.beta1, t.beta2, t.eps, t.weight_decay});
  AdamW& optimizer = *optimizer_;
  const LrSchedule schedule{t.lr, t.lr_warmup_steps, counts.total_steps, t.lr_schedule,
                            t.min_lr_ratio};
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(backend_.device());
  model_->train();

  // fp16 activations underflow in the backward pass without loss scaling; bf16 and fp32 need
  // none.
  scaler_ = LossScaler(spec_.model.dtype == "fp16");
  LossScaler& scaler = scaler_;

  // The split in effect; an out-of-memory fallback changes it for the rest of the run. Steps
  // per epoch stay the same: floor(rows / (B x A)) depends on the effective batch only.
  split_ = MicroBatching{batcher_.micro_batch_size(), t.grad_accum_steps};
  MicroBatching& split = split_;
  steps_done_ = 0;
  if (resume_) {
    // The state after step resume_->steps_done, exactly: the next step draws the same dropout
    // masks and examples, and the optimizer and loss scale carry on, as in an unbroken run.
    const ResumeState& r = *resume_;
    if (r.exp_avg.size() != trainable.size() || r.exp_avg_sq.size() != trainable.size() ||
        r.param_steps.size() != trainable.size()) {
      throw std::invalid_argument("resume: the optimizer state does not match the parameters");
    }
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < trainable.size(); ++i) {
        optimizer.exp_avg()[i].copy_(r.exp_avg[i]);
        optimizer.exp_avg_sq()[i].copy_(r.exp_avg_sq[i]);
      }
    }
    optimizer.set_param_steps(r.param_steps);
    scaler.restore(r.loss_scale, r.loss_scale_clean_steps);
    if (r.micro_batch_size != split.micro_batch_size) {
      batcher_.set_micro_batch_size(r.micro_batch_size);
    }
    split = MicroBatching{r.micro_batch_size, r.grad_accum_steps};
    result.fallbacks = r.fallbacks;
    steps_done_ = r.steps_done;
  }
  result.micro_batch_size = split.micro_batch_size;
  result.grad_accum_steps = split.grad_accum_steps;

  // The micro-batches of steps `first_step` to the end of the run, in the order the steps take
  // them, built one step ahead on a background thread; data_wait_seconds is what a step still
  // waits for them. Step k uses micro-batches (k mod steps_per_epoch) x A onwards of its epoch.
  auto start_prefetcher = [&](int64_t first_step, const MicroBatching& m) {
    const data::StepOrder order{first_step, counts.total_steps, counts.steps_per_epoch,
                                m.grad_accum_steps};
    return std::make_unique<data::Prefetcher>(batcher_, order,
                                              static_cast<std::size_t>(m.grad_accum_steps));
  };
  std::unique_ptr<data::Prefetcher> prefetcher = start_prefetcher(steps_done_, split);

  auto inject = [&](const OomSiteState& state) {
    if (!inject_oom_ || !inject_oom_->matches(state)) return;
    const c10::SourceLocation where{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
    throw c10::OutOfMemoryError(
        where, fmt::format("out of memory (simulated: FTBENCH_INJECT_OOM={}) at step {}, {} of a "
                           "micro-batch of {} rows, micro-batch {} of the step, {} tokens",
                           inject_oom_->rule(), state.step,
                           state.site == OomSite::kForward ? "after the forward" : "in the update",
                           state.micro_batch, state.micro_step, state.tokens));
  };

  // One attempt at step k with the current split, up to the end-of-step synchronisation; the
  // host reads of loss and norm come after it, outside the step's time. Every tensor of the
  // attempt (micro-batches, autograd graph, partial sums) lives in this frame, so an exception
  // releases them on its way out. `updating` is set once the optimizer update may have begun.
  struct Attempt {
    Clock::time_point end;
    at::Tensor loss_sum;
    at::Tensor grad_norm;
    double token_weight = 0.0;
  };
  auto attempt_step = [&](int64_t k, report::StepRecord& rec, metrics::StepFlops& flops,
                          bool& updating) {
    rec = report::StepRecord{};
    rec.step = k + 1;
    rec.epoch = k / counts.steps_per_epoch + 1;
    flops = metrics::StepFlops{};

    // The step's micro-batches are fetched first so the loss can be normalised by the number
    // of loss tokens of the whole step (every token weighs the same under accumulation).
    std::vector<data::MicroBatch> micro_batches(static_cast<size_t>(split.grad_accum_steps));
    const Clock::time_point data_start = Clock::now();
    for (data::MicroBatch& mb : micro_batches) {
      mb = prefetcher->next();
      rec.real_tokens += mb.real_tokens;
      rec.padded_tokens += mb.padded_tokens;
      rec.loss_tokens += mb.loss_tokens;
      const metrics::StepFlops f = micro_batch_flops(spec_.model, params, mb);
      flops.lora_frozen_base += f.lora_frozen_base;
      flops.lora_frozen_base_recompute += f.lora_frozen_base_recompute;
      flops.six_n += f.six_n;
      flops.six_n_recompute += f.six_n_recompute;
    }
    rec.data_wait_seconds = seconds_between(data_start, Clock::now());

    Attempt out;
    out.token_weight = 1.0 / double(std::max<int64_t>(1, rec.loss_tokens));
    out.loss_sum = at::zeros({}, f32);
    for (size_t i = 0; i < micro_batches.size(); ++i) {
      data::MicroBatch& mb = micro_batches[i];
      const at::Tensor loss = model_->loss_sum(mb.input_ids, mb.labels, mb.loss_positions,
                                               mb.position_ids, mb.segment_ids);
      inject({OomSite::kForward, rec.step, split.micro_batch_size, static_cast<int64_t>(i),
              mb.padded_tokens});
      (loss * (out.token_weight * scaler.scale())).backward();
      out.loss_sum.add_(loss.detach());
      mb = data::MicroBatch{};  // release the batch's tensors before the next forward
    }

    if (scaler.enabled()) {
      for (const at::Tensor& p : trainable) {
        if (p.grad().defined()) p.grad().mul_(1.0 / scaler.scale());
      }
    }
    // Global L2 norm over every adapter gradient, in fp32, without a host sync.
    std::vector<at::Tensor> norms;
    norms.reserve(trainable.size());
    for (const at::Tensor& p : trainable) {
      if (p.grad().defined()) norms.push_back(p.grad().to(at::kFloat).norm());
    }
    out.grad_norm = norms.empty() ? at::zeros({}, f32) : at::stack(norms).norm();
    // The overflow check needs the norm on the host: one sync per step, fp16 only.
    const bool skip_update =
        scaler.enabled() && scaler.update(std::isfinite(out.grad_norm.item<double>()));
    if (skip_update) {
      spdlog::warn("step {}: fp16 gradients overflowed; update skipped, loss scale now {}",
                   rec.step, scaler.scale());
    }
    if (t.max_grad_norm > 0.0 && !skip_update) {
      const at::Tensor coef = (t.max_grad_norm / (out.grad_norm + 1e-6)).clamp_max(1.0);
      for (const at::Tensor& p : trainable) {
        if (p.grad().defined()) p.grad().mul_(coef);
      }
    }
    rec.lr = lr_at(schedule, k);
    optimizer.set_lr(rec.lr);
    // AdamW updates the parameters in several multi-tensor operations: an error inside it may
    // leave some updated, so from here on the step cannot be redone.
    updating = true;
    inject({OomSite::kUpdate, rec.step, split.micro_batch_size, 0, 0});
    if (!skip_update) optimizer.step();
    // Gradients set to none (not zeroed): nothing to clear next step, less memory.
    for (at::Tensor& p : trainable) p.mutable_grad() = at::Tensor();

    backend_.synchronize();
    out.end = Clock::now();
    return out;
  };

  // What a redo must restore: the loss scale and the generator that draws dropout masks, as
  // they were when the step began (a copy of a few kilobytes, taken only with fallback on).
  at::Generator generator = at::globalContext().defaultGenerator(backend_.device());
  if (resume_) {
    // Last, right before the first step: nothing above draws random numbers, and nothing may
    // between this and the step.
    at::Generator cpu = at::globalContext().defaultGenerator(at::kCPU);
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      cpu.set_state(resume_->cpu_rng_state);
    }
    if (resume_->device_rng_state.defined() && !backend_.device().is_cpu()) {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(resume_->device_rng_state);
    }
  }

  result.steps.reserve(static_cast<size_t>(counts.total_steps));
  backend_.synchronize();
  Clock::time_point step_start = Clock::now();
  for (int64_t k = steps_done_; k < counts.total_steps; ++k) {
    const LossScaler scaler_at_start = scaler;
    at::Tensor generator_at_start;
    if (t.oom_fallback) {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator_at_start = generator.get_state();
    }
    report::StepRecord rec;
    metrics::StepFlops flops;
    Attempt done;
    for (;;) {
      bool updating = false;
      std::string oom_error;  // first line of the out-of-memory error; empty: the step ran
      try {
        done = attempt_step(k, rec, flops, updating);
      } catch (const std::exception& e) {
        if (!is_out_of_memory(e)) throw;
        oom_error = error_first_line(e);
      }
      if (oom_error.empty()) break;

      // The attempt's tensors went with its frame; what is left is the gradients it
      // accumulated and the micro-batches built ahead. Then the GPU cache, so that the retry
      // is not refused for fragments of the failed attempt.
      for (at::Tensor& p : trainable) p.mutable_grad() = at::Tensor();
      prefetcher.reset();
      backend_.release_cached_memory();
      const std::string tried = fmt::format("micro-batch {} x grad_accum_steps {}",
                                            split.micro_batch_size, split.grad_accum_steps);
      if (updating) {
        throw OutOfMemoryFailure(fmt::format(
            "out of memory in the optimizer update of step {} ({}); not redone: some adapter "
            "weights may already be updated, and the update's memory does not depend on the "
            "micro-batch: {}",
            rec.step, tried, oom_error));
      }
      if (!t.oom_fallback) {
        throw OutOfMemoryFailure(
            fmt::format("out of memory in step {} at {} (train.oom_fallback "
                        "is off): {}",
                        rec.step, tried, oom_error));
      }
      if (static_cast<int64_t>(result.fallbacks.size()) >= t.oom_max_fallbacks) {
        throw OutOfMemoryFailure(fmt::format(
            "out of memory in step {} at {} after {} fallback{} (train.oom_max_fallbacks): {}",
            rec.step, tried, result.fallbacks.size(), result.fallbacks.size() == 1 ? "" : "s",
            oom_error));
      }
      const std::optional<MicroBatching> next = fallback_micro_batching(split);
      if (!next) {
        throw OutOfMemoryFailure(
            fmt::format("out of memory in step {} at {}; micro-batch 1 cannot be split "
                        "further: {}",
                        rec.step, tried, oom_error));
      }
      batcher_.set_micro_batch_size(next->micro_batch_size);
      scaler = scaler_at_start;
      if (generator_at_start.defined()) {
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(generator_at_start);
      }
      prefetcher = start_prefetcher(k, *next);
      const Clock::time_point restart = Clock::now();
      report::Fallback fallback;
      fallback.step = rec.step;
      fallback.from_micro_batch_size = split.micro_batch_size;
      fallback.from_grad_accum_steps = split.grad_accum_steps;
      fallback.to_micro_batch_size = next->micro_batch_size;
      fallback.to_grad_accum_steps = next->grad_accum_steps;
      fallback.seconds_lost = seconds_between(step_start, restart);
      fallback.error = oom_error;
      spdlog::warn(
          "step {}: out of memory at micro-batch {} x {} ({}); redoing the step at {} x {} "
          "(same effective batch {}), {:.3f} s lost",
          rec.step, split.micro_batch_size, split.grad_accum_steps, oom_error,
          next->micro_batch_size, next->grad_accum_steps, next->effective_batch(),
          fallback.seconds_lost);
      result.fallbacks.push_back(std::move(fallback));
      split = *next;
      result.micro_batch_size = split.micro_batch_size;
      result.grad_accum_steps = split.grad_accum_steps;
      step_start = restart;
    }

    rec.wall_seconds = seconds_between(step_start, done.end);
    backend_.sample_memory();
    rec.loss = done.loss_sum.item<double>() * done.token_weight;
    rec.grad_norm = done.grad_norm.item<double>();
    rec.model_flops = flops.lora_frozen_base;
    result.steps.push_back(rec);
    result.flops.push_back(flops);
    // A non-finite loss does not recover: the step is recorded (its loss reads null in the
    // report) and the run stops, rather than spending machine time on NaN weights.
    if (!std::isfinite(rec.loss)) throw Diverged(rec.step, rec.loss);
    steps_done_ = k + 1;
    if (on_step) on_step(rec);
    // The callback (progress, logging) is host work outside the measured step.
    step_start = Clock::now();
  }

  const std::vector<int64_t>& updates = optimizer.param_steps();
  result.optimizer_updates =
      updates.empty() ? 0 : *std::min_element(updates.begin(), updates.end());
}

}  // namespace ftbench::train
