#include "ftbench/train/trainer.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include "ftbench/data/prefetcher.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/spec/derived.h"
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

}  // namespace

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

Trainer::Trainer(const spec::RunSpec& spec, model::Llama& model, data::Batcher& batcher,
                 device::Backend& backend)
    : spec_(spec), model_(model), batcher_(batcher), backend_(backend) {}

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

  std::vector<at::Tensor> trainable = model_->trainable_parameters();
  torch::optim::AdamW optimizer(trainable, torch::optim::AdamWOptions(t.lr)
                                               .betas({t.beta1, t.beta2})
                                               .eps(t.eps)
                                               .weight_decay(t.weight_decay));
  const LrSchedule schedule{t.lr, t.lr_warmup_steps, counts.total_steps, t.lr_schedule,
                            t.min_lr_ratio};
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(backend_.device());
  model_->train();

  // fp16 activations underflow in the backward pass without loss scaling; bf16 and fp32 need
  // none.
  LossScaler scaler(spec_.model.dtype == "fp16");

  result.steps.reserve(static_cast<size_t>(counts.total_steps));
  std::vector<data::MicroBatch> micro_batches(static_cast<size_t>(t.grad_accum_steps));
  // Every micro-batch of the run, in the order the steps take them, built one step ahead on a
  // background thread; data_wait_seconds is what a step still waits for them.
  std::vector<std::pair<int64_t, int64_t>> order;
  order.reserve(static_cast<size_t>(counts.total_steps * t.grad_accum_steps));
  for (int64_t k = 0; k < counts.total_steps; ++k) {
    const int64_t epoch = k / counts.steps_per_epoch + 1;
    const int64_t first = (k % counts.steps_per_epoch) * t.grad_accum_steps;
    for (int64_t i = 0; i < t.grad_accum_steps; ++i) order.emplace_back(epoch, first + i);
  }
  data::Prefetcher prefetcher(batcher_, std::move(order),
                              static_cast<std::size_t>(t.grad_accum_steps));
  backend_.synchronize();
  Clock::time_point step_start = Clock::now();
  for (int64_t k = 0; k < counts.total_steps; ++k) {
    report::StepRecord rec;
    rec.step = k + 1;
    rec.epoch = k / counts.steps_per_epoch + 1;

    // The step's micro-batches are fetched first so the loss can be normalised by the number
    // of loss tokens of the whole step (every token weighs the same under accumulation).
    const Clock::time_point data_start = Clock::now();
    metrics::StepFlops flops;
    for (int64_t i = 0; i < t.grad_accum_steps; ++i) {
      data::MicroBatch& mb = micro_batches[static_cast<size_t>(i)];
      mb = prefetcher.next();
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

    const double token_weight = 1.0 / double(std::max<int64_t>(1, rec.loss_tokens));
    at::Tensor loss_sum = at::zeros({}, f32);
    for (data::MicroBatch& mb : micro_batches) {
      const at::Tensor loss = model_->loss_sum(mb.input_ids, mb.labels, mb.loss_positions,
                                               mb.position_ids, mb.segment_ids);
      (loss * (token_weight * scaler.scale())).backward();
      loss_sum.add_(loss.detach());
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
    const at::Tensor grad_norm = norms.empty() ? at::zeros({}, f32) : at::stack(norms).norm();
    // The overflow check needs the norm on the host: one sync per step, fp16 only.
    const bool skip_update =
        scaler.enabled() && scaler.update(std::isfinite(grad_norm.item<double>()));
    if (skip_update) {
      spdlog::warn("step {}: fp16 gradients overflowed; update skipped, loss scale now {}",
                   rec.step, scaler.scale());
    }
    if (t.max_grad_norm > 0.0 && !skip_update) {
      const at::Tensor coef = (t.max_grad_norm / (grad_norm + 1e-6)).clamp_max(1.0);
      for (const at::Tensor& p : trainable) {
        if (p.grad().defined()) p.grad().mul_(coef);
      }
    }
    rec.lr = lr_at(schedule, k);
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(rec.lr);
    }
    if (!skip_update) optimizer.step();
    // Gradients set to none (not zeroed): nothing to clear next step, less memory.
    for (at::Tensor& p : trainable) p.mutable_grad() = at::Tensor();

    backend_.synchronize();
    const Clock::time_point step_end = Clock::now();
    rec.wall_seconds = seconds_between(step_start, step_end);
    backend_.sample_memory();
    rec.loss = loss_sum.item<double>() * token_weight;
    rec.grad_norm = grad_norm.item<double>();
    rec.model_flops = flops.lora_frozen_base;
    result.steps.push_back(rec);
    result.flops.push_back(flops);
    if (on_step) on_step(rec);
    // The callback (progress, logging) is host work outside the measured step.
    step_start = Clock::now();
  }
}

}  // namespace ftbench::train
