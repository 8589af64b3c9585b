#include "train/torch/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>

#include "data/torch/prefetcher.h"
#include "device/torch/dtype.h"
#include "device/torch/profile_scopes.h"
#include "model/shape_math.h"
#include "model/torch/sdpa.h"
#include "spec/choices.h"
#include "spec/derived.h"
#include "train/loss_scaler.h"
#include "train/lr_schedule.h"
#include "train/torch/adamw.h"

namespace ftbench::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// `causal_half`: the attention kernel skips causal attention's masked blocks (the executed
// count's attention is then half the square). `recompute`: the layers' forward runs again in the
// backward (full checkpointing; selective recomputes no GEMM, so it counts as none).
model::StepFlops micro_batch_flops(const spec::ModelSpec& m, const model::ParamCounts& c,
                                   const data::MicroBatch& mb, bool causal_half, bool recompute) {
  using model::FlopFormula;
  const int64_t s = mb.input_ids.size(1);
  const double tokens = double(mb.real_tokens);
  auto per_token = [&](FlopFormula f, bool recompute) {
    return model::training_flops_per_token(m, c, s, f, recompute, causal_half);
  };
  return {tokens * per_token(FlopFormula::kLoraFrozenBase, false),
          tokens * per_token(FlopFormula::kLoraFrozenBase, true),
          tokens * per_token(FlopFormula::kSixN, false),
          tokens * per_token(FlopFormula::kSixN, true),
          tokens * per_token(FlopFormula::kExecuted, recompute)};
}

// The seed of the dropout masks of micro-batch `index` (of the job's, over every rank) of
// optimizer step `step` (0-based): a function of where the micro-batch is in the run, not of
// how many masks the process drew before, so one process and N data-parallel ranks draw the same
// masks for the same examples, and no two ranks draw the same ones (splitmix64's finaliser).
uint64_t dropout_seed(uint64_t seed, int64_t step, int64_t index) {
  uint64_t z = seed ^ (uint64_t(step) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(index) << 40);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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

Diverged::Diverged(int64_t step, double loss)
    : RunFailed(fmt::format(
          "step {}: the training loss is {} (not finite): the run diverged; lower train.lr, "
          "set train.max_grad_norm, or use bf16/fp32 rather than fp16",
          step, std::isnan(loss) ? std::string("nan") : fmt::format("{}", loss))),
      step_(step) {}

Trainer::Trainer(const spec::RunSpec& spec, model::Llama& model, data::Batcher& batcher,
                 device::Backend& backend, std::optional<OomInjection> inject_oom,
                 dist::Communicator* comm, const dist::CollectiveStats* gather_stats)
    : spec_(spec),
      model_(model),
      batcher_(batcher),
      backend_(backend),
      inject_oom_(std::move(inject_oom)),
      counts_(spec::derive_counts_from_batches(spec, batcher.batches_per_epoch())),
      params_(model::count_parameters(spec.model, spec.lora)),
      attention_skips_masked_blocks_(
          model::attention_skips_masked_blocks(model::attention_kernel_name(
              backend.device(), device::scalar_type_of(spec.model.dtype), spec.model.n_heads,
              spec.model.n_kv_heads, spec.model.dim / spec.model.n_heads,
              spec.data.padding == spec::choice::padding::kPack))),
      schedule_{spec.train.lr, spec.train.lr_warmup_steps, counts_.total_steps,
                spec.train.lr_schedule, spec.train.min_lr_ratio},
      f32_(at::TensorOptions().dtype(at::kFloat).device(backend.device())),
      // fp16 activations underflow in the backward pass without loss scaling; bf16 and fp32
      // need none.
      scaler_(spec.model.dtype == "fp16"),
      // The split in effect; an out-of-memory fallback changes it for the rest of the run.
      // Steps per epoch stay the same: floor(rows / (B x A)) depends on the effective batch
      // only.
      split_{batcher.micro_batch_size(), spec.train.grad_accum_steps},
      comm_(comm),
      gather_stats_(gather_stats),
      generator_(at::globalContext().defaultGenerator(backend.device())) {
  const spec::TrainSpec& t = spec_.train;
  if (t.grad_accum_steps % ranks() != 0) {
    throw std::invalid_argument(
        fmt::format("train.grad_accum_steps {} does not split over {} ranks: it counts the job's "
                    "micro-batches per step, over every rank; use a multiple of {}",
                    t.grad_accum_steps, ranks(), ranks()));
  }
  if (counts_.steps_per_epoch < 1) {
    throw std::invalid_argument(
        fmt::format("an epoch has {} micro-batches: 0 optimizer steps with grad_accum_steps {}",
                    batcher_.batches_per_epoch(), t.grad_accum_steps));
  }
  for (auto& [name, tensor] : model_->trainable_named_parameters()) {
    names_.push_back(name);
    trainable_.push_back(tensor);
  }
  // train/torch/adamw.h: torch::optim::AdamW's arithmetic (bit for bit on CPU) in multi-tensor ops,
  // or the fused kernel on GPUs with LibTorch >= 2.1.
  optimizer_ = std::make_unique<AdamW>(trainable_,
                                       AdamWOptions{t.lr, t.beta1, t.beta2, t.eps, t.weight_decay});
}

// The state after step state.steps_done, exactly: the next step draws the same dropout masks
// and examples, and the optimizer and loss scale carry on, as in an unbroken run.
void Trainer::resume(ResumeState state) {
  if (state.exp_avg.size() != trainable_.size() || state.exp_avg_sq.size() != trainable_.size() ||
      state.param_steps.size() != trainable_.size()) {
    throw std::invalid_argument("resume: the optimizer state does not match the parameters");
  }
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < trainable_.size(); ++i) {
      optimizer_->exp_avg()[i].copy_(state.exp_avg[i]);
      optimizer_->exp_avg_sq()[i].copy_(state.exp_avg_sq[i]);
    }
  }
  optimizer_->set_param_steps(state.param_steps);
  scaler_.restore(state.loss_scale, state.loss_scale_clean_steps);
  if (state.micro_batch_size != split_.micro_batch_size) {
    batcher_.set_micro_batch_size(state.micro_batch_size);
  }
  split_ = MicroBatching{state.micro_batch_size, state.grad_accum_steps};
  steps_done_ = state.steps_done;
  resume_ = std::move(state);
}

std::unique_ptr<data::Prefetcher> Trainer::start_prefetcher(int64_t first_step,
                                                            const MicroBatching& split) {
  // Step k uses micro-batches (k mod steps_per_epoch) x A onwards of its epoch.
  data::StepOrder order{first_step, counts_.total_steps, counts_.steps_per_epoch,
                        split.grad_accum_steps};
  if (comm_ != nullptr) {
    order.rank = comm_->rank();
    order.ranks = comm_->size();
  }
  return std::make_unique<data::Prefetcher>(batcher_, order,
                                            static_cast<std::size_t>(order.per_rank()));
}

void Trainer::inject_out_of_memory(const OomSiteState& state) const {
  if (!inject_oom_ || !inject_oom_->matches(state)) return;
  const c10::SourceLocation where{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
  throw c10::OutOfMemoryError(
      where, fmt::format("out of memory (simulated: FTBENCH_INJECT_OOM={}) at step {}, {} of a "
                         "micro-batch of {} rows, micro-batch {} of the step, {} tokens",
                         inject_oom_->rule(), state.step,
                         state.site == OomSite::kForward ? "after the forward" : "in the update",
                         state.micro_batch, state.micro_step, state.tokens));
}

// The step's forward and backward passes, this rank's micro-batches in turn, then (data
// parallel) the gradient sum. A rank out of memory says so through that sum, which every rank
// reaches, so that all of them redo the step at the smaller split together.
void Trainer::forward_backward(int64_t k, int64_t step,
                               std::vector<data::MicroBatch>& micro_batches, Attempt& out) {
  // The job's index of this rank's first micro-batch of the step.
  const int64_t first = (comm_ != nullptr ? comm_->rank() : 0) * int64_t(micro_batches.size());
  std::string out_of_memory;
  size_t begun = 0;  // micro-batches whose pass has begun
  try {
    for (size_t i = 0; i < micro_batches.size(); ++i) {
      begun = i + 1;
      data::MicroBatch& mb = micro_batches[i];
      if (spec_.lora.dropout > 0.0) {
        std::lock_guard<std::mutex> lock(generator_.mutex());
        generator_.set_current_seed(
            dropout_seed(uint64_t(spec_.train.seed), k, first + int64_t(i)));
      }
      const at::Tensor loss = model_->loss_sum(mb.input_ids, mb.labels, mb.loss_positions,
                                               mb.position_ids, mb.segment_ids);
      inject_out_of_memory(
          {OomSite::kForward, step, split_.micro_batch_size, first + int64_t(i), mb.padded_tokens});
      {
        RECORD_USER_SCOPE(device::kScopeBackward);
        (loss * (out.token_weight * scaler_.scale())).backward();
      }
      out.loss_sum.add_(loss.detach());
      mb = data::MicroBatch{};  // release the batch's tensors before the next forward
    }
  } catch (const std::exception& e) {
    if (ranks() == 1 || !is_out_of_memory(e)) throw;
    out_of_memory = error_first_line(e);
    const auto passes_left = static_cast<int64_t>(micro_batches.size() - begun);
    micro_batches.clear();
    for (at::Tensor& p : trainable_) p.mutable_grad() = at::Tensor();
    // A split base: the peers' gathers for the rest of the step are met, with the memory above
    // given back first.
    model_->complete_training_passes(passes_left);
  }
  const int64_t ranks_out_of_memory = sum_gradients(out.loss_sum, !out_of_memory.empty());
  if (ranks_out_of_memory > 0) {
    const c10::SourceLocation where{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
    throw c10::OutOfMemoryError(
        where, fmt::format("out of memory on {} of {} ranks{}", ranks_out_of_memory, ranks(),
                           out_of_memory.empty() ? std::string(" (not this one)")
                                                 : " (this one: " + out_of_memory + ")"));
  }
}

// The host reads of loss and norm come after the attempt, outside the step's time.
Trainer::Attempt Trainer::attempt_step(int64_t k, StepMeasurement& rec, model::StepFlops& flops,
                                       bool& updating) {
  const spec::TrainSpec& t = spec_.train;
  rec = StepMeasurement{};
  rec.step = k + 1;
  rec.epoch = k / counts_.steps_per_epoch + 1;
  flops = model::StepFlops{};

  // The step's micro-batches are fetched first so the loss can be normalised by the number of
  // loss tokens of the whole step (every token weighs the same under accumulation);
  // data_wait_seconds is what the step still waits for them.
  std::vector<data::MicroBatch> micro_batches(
      static_cast<size_t>(split_.grad_accum_steps / ranks()));
  const Clock::time_point data_start = Clock::now();
  for (data::MicroBatch& mb : micro_batches) {
    mb = prefetcher_->next();
    rec.real_tokens += mb.real_tokens;
    rec.padded_tokens += mb.padded_tokens;
    rec.loss_tokens += mb.loss_tokens;
    const model::StepFlops f =
        micro_batch_flops(spec_.model, params_, mb, attention_skips_masked_blocks_,
                          /*recompute=*/model_->recompute() == model::Recompute::kFull);
    flops.lora_frozen_base += f.lora_frozen_base;
    flops.lora_frozen_base_recompute += f.lora_frozen_base_recompute;
    flops.six_n += f.six_n;
    flops.six_n_recompute += f.six_n_recompute;
    flops.executed += f.executed;
  }
  rec.data_wait_seconds = seconds_between(data_start, Clock::now());
  sum_step_counts(rec, flops);

  Attempt out;
  out.token_weight = 1.0 / double(std::max<int64_t>(1, rec.loss_tokens));
  out.loss_sum = at::zeros({}, f32_);
  forward_backward(k, rec.step, micro_batches, out);

  // The optimizer's host work, up to the synchronisation that ends the step.
  device::ProfileScope optimizer_scope(device::kScopeOptimizer);
  if (scaler_.enabled()) {
    for (const at::Tensor& p : trainable_) {
      if (p.grad().defined()) p.grad().mul_(1.0 / scaler_.scale());
    }
  }
  out.grad_norm = gradient_norm();
  // The overflow check needs the norm on the host: one sync per step, fp16 only.
  const bool skip_update =
      scaler_.enabled() && scaler_.update(std::isfinite(out.grad_norm.item<double>()));
  if (skip_update) {
    spdlog::warn("step {}: fp16 gradients overflowed; update skipped, loss scale now {}", rec.step,
                 scaler_.scale());
  }
  if (t.max_grad_norm > 0.0 && !skip_update) {
    const at::Tensor coef = (t.max_grad_norm / (out.grad_norm + 1e-6)).clamp_max(1.0);
    for (const at::Tensor& p : trainable_) {
      if (p.grad().defined()) p.grad().mul_(coef);
    }
  }
  rec.lr = lr_at(schedule_, k);
  optimizer_->set_lr(rec.lr);
  // AdamW updates the parameters in several multi-tensor operations: an error inside it may
  // leave some updated, so from here on the step cannot be redone.
  updating = true;
  inject_out_of_memory({OomSite::kUpdate, rec.step, split_.micro_batch_size, 0, 0});
  if (!skip_update) optimizer_->step();
  // Gradients set to none (not zeroed): nothing to clear next step, less memory.
  for (at::Tensor& p : trainable_) p.mutable_grad() = at::Tensor();
  optimizer_scope.end();

  backend_.synchronize();
  out.end = Clock::now();
  return out;
}

// Global L2 norm over every adapter gradient, in fp32, without a host sync: one multi-tensor
// op (_foreach_norm) where every gradient is fp32, rather than one norm kernel per adapter
// (192 of them on an 8B model with LoRA on every projection).
at::Tensor Trainer::gradient_norm() const {
  std::vector<at::Tensor> grads;
  grads.reserve(trainable_.size());
  bool all_fp32 = true;
  for (const at::Tensor& p : trainable_) {
    if (!p.grad().defined()) continue;
    grads.push_back(p.grad());
    all_fp32 = all_fp32 && p.grad().scalar_type() == at::kFloat;
  }
  if (grads.empty()) return at::zeros({}, f32_);
  if (all_fp32 && model_->fused()) return at::stack(at::_foreach_norm(grads, 2)).norm();
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
  for (const at::Tensor& g : grads) norms.push_back(g.to(at::kFloat).norm());
  return at::stack(norms).norm();
}

void Trainer::sum_step_counts(StepMeasurement& rec, model::StepFlops& flops) {
  if (ranks() == 1) return;
  // fp64 holds every count exactly up to 2^53 tokens.
  at::Tensor counts =
      at::tensor({double(rec.real_tokens), double(rec.padded_tokens), double(rec.loss_tokens),
                  flops.lora_frozen_base, flops.lora_frozen_base_recompute, flops.six_n,
                  flops.six_n_recompute, flops.executed},
                 at::kDouble);
  comm_->all_reduce_sum(counts);
  const double* c = counts.data_ptr<double>();
  rec.real_tokens = static_cast<int64_t>(c[0]);
  rec.padded_tokens = static_cast<int64_t>(c[1]);
  rec.loss_tokens = static_cast<int64_t>(c[2]);
  flops = {c[3], c[4], c[5], c[6], c[7]};
}

// One flat fp32 buffer: one collective per step, whatever the number of adapter tensors. A
// parameter without a gradient on this rank (none of its examples reached it) counts as zero, so
// every rank's buffer has the same layout.
int64_t Trainer::sum_gradients(at::Tensor& loss_sum, bool out_of_memory) {
  if (ranks() == 1) return 0;
  std::vector<at::Tensor> parts;
  parts.reserve(trainable_.size() + 1);
  for (const at::Tensor& p : trainable_) {
    parts.push_back(p.grad().defined() ? p.grad().reshape(-1).to(at::kFloat)
                                       : at::zeros({p.numel()}, f32_));
  }
  parts.push_back(loss_sum.reshape(-1).to(at::kFloat));
  parts.push_back(at::full({1}, out_of_memory ? 1.0 : 0.0, f32_));
  // On the device: NCCL sums it there, Gloo through host memory.
  at::Tensor flat = at::cat(parts);
  comm_->all_reduce_sum(flat);
  int64_t offset = 0;
  torch::NoGradGuard no_grad;
  for (at::Tensor& p : trainable_) {
    const at::Tensor summed = flat.narrow(0, offset, p.numel()).view_as(p).to(p.scalar_type());
    if (p.grad().defined()) {
      p.mutable_grad().copy_(summed);
    } else {
      p.mutable_grad() = summed.clone();
    }
    offset += p.numel();
  }
  loss_sum.copy_(flat[offset]);
  return static_cast<int64_t>(flat[offset + 1].item<float>());
}

void Trainer::broadcast_parameters() {
  if (ranks() == 1) return;
  torch::NoGradGuard no_grad;
  for (at::Tensor& p : trainable_) {
    at::Tensor host = p.detach().to(at::kCPU).contiguous();
    comm_->broadcast(host, 0);
    p.copy_(host);
  }
}

void Trainer::check_parameters_equal(const std::string& when) {
  if (ranks() == 1) return;
  std::vector<at::Tensor> parts;
  for (const at::Tensor& p : trainable_) parts.push_back(p.detach().to(at::kCPU).reshape(-1));
  const at::Tensor mine = at::cat(parts).contiguous();
  at::Tensor root = mine.clone();
  comm_->broadcast(root, 0);
  // Bits, not values: a NaN equals nothing, and -0 would pass for +0. The index + 1 of the first
  // parameter that differs from rank 0's; 0: none.
  int64_t first_different = 0;
  int64_t offset = 0;
  const auto* a = static_cast<const char*>(mine.data_ptr());
  const auto* b = static_cast<const char*>(root.data_ptr());
  const auto bytes = static_cast<int64_t>(mine.element_size());
  for (size_t i = 0; i < trainable_.size() && first_different == 0; ++i) {
    const int64_t n = trainable_[i].numel();
    if (std::memcmp(a + offset * bytes, b + offset * bytes, static_cast<size_t>(n * bytes)) != 0) {
      first_different = static_cast<int64_t>(i) + 1;
    }
    offset += n;
  }
  // Every rank learns the first parameter that differs anywhere: the largest 2^40 - index.
  const int64_t kBig = int64_t(1) << 40;
  at::Tensor key =
      at::full({1}, first_different == 0 ? int64_t(0) : kBig - first_different, at::kLong);
  comm_->all_reduce_max(key);
  const int64_t k = key.item<int64_t>();
  if (k != 0) {
    const int64_t index = kBig - k - 1;
    throw RunFailed(fmt::format(
        "{}: the adapters differ between ranks ({} is not bitwise equal to rank 0's on some "
        "rank): the ranks no longer train one model; a rank computed differently (hardware, "
        "LibTorch or its settings differ between the nodes)",
        when, names_[static_cast<size_t>(index)]));
  }
}

Clock::time_point Trainer::recover_from_out_of_memory(
    int64_t k, const std::string& oom_error, bool updating, const LossScaler& scaler_at_start,
    const at::Tensor& generator_at_start, Clock::time_point step_start, TrainResult& result) {
  const spec::TrainSpec& t = spec_.train;
  const int64_t step = k + 1;
  // The attempt's tensors went with its frame; what is left is the gradients it accumulated
  // and the micro-batches built ahead. Then the GPU cache, so that the retry is not refused
  // for fragments of the failed attempt.
  for (at::Tensor& p : trainable_) p.mutable_grad() = at::Tensor();
  prefetcher_.reset();
  backend_.release_cached_memory();
  const std::string tried = fmt::format("micro-batch {} x grad_accum_steps {}",
                                        split_.micro_batch_size, split_.grad_accum_steps);
  if (updating) {
    throw OutOfMemoryFailure(fmt::format(
        "out of memory in the optimizer update of step {} ({}); not redone: some adapter "
        "weights may already be updated, and the update's memory does not depend on the "
        "micro-batch: {}",
        step, tried, oom_error));
  }
  if (!t.oom_fallback) {
    throw OutOfMemoryFailure(
        fmt::format("out of memory in step {} at {} (train.oom_fallback "
                    "is off): {}",
                    step, tried, oom_error));
  }
  if (static_cast<int64_t>(result.fallbacks.size()) >= t.oom_max_fallbacks) {
    throw OutOfMemoryFailure(fmt::format(
        "out of memory in step {} at {} after {} fallback{} (train.oom_max_fallbacks): {}", step,
        tried, result.fallbacks.size(), result.fallbacks.size() == 1 ? "" : "s", oom_error));
  }
  const std::optional<MicroBatching> next = fallback_micro_batching(split_);
  if (!next) {
    throw OutOfMemoryFailure(
        fmt::format("out of memory in step {} at {}; micro-batch 1 cannot "
                    "be split further: {}",
                    step, tried, oom_error));
  }
  batcher_.set_micro_batch_size(next->micro_batch_size);
  scaler_ = scaler_at_start;
  if (generator_at_start.defined()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(generator_at_start);
  }
  prefetcher_ = start_prefetcher(k, *next);
  const Clock::time_point restart = Clock::now();
  MicroBatchFallback fallback;
  fallback.step = step;
  fallback.from_micro_batch_size = split_.micro_batch_size;
  fallback.from_grad_accum_steps = split_.grad_accum_steps;
  fallback.to_micro_batch_size = next->micro_batch_size;
  fallback.to_grad_accum_steps = next->grad_accum_steps;
  fallback.seconds_lost = seconds_between(step_start, restart);
  fallback.error = oom_error;
  spdlog::warn(
      "step {}: out of memory at micro-batch {} x {} ({}); redoing the step at {} x {} "
      "(same effective batch {}), {:.3f} s lost",
      step, split_.micro_batch_size, split_.grad_accum_steps, oom_error, next->micro_batch_size,
      next->grad_accum_steps, next->effective_batch(), fallback.seconds_lost);
  result.fallbacks.push_back(std::move(fallback));
  split_ = *next;
  result.micro_batch_size = split_.micro_batch_size;
  result.grad_accum_steps = split_.grad_accum_steps;
  return restart;
}

void Trainer::restore_generators() {
  if (!resume_) return;
  at::Generator cpu = at::globalContext().defaultGenerator(at::kCPU);
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(resume_->cpu_rng_state);
  }
  if (resume_->device_rng_state.defined() && !backend_.device().is_cpu()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(resume_->device_rng_state);
  }
}

LoopEnd Trainer::run(TrainResult& result, const StepCallback& on_step) {
  model_->train();
  if (resume_) result.fallbacks = resume_->fallbacks;
  result.micro_batch_size = split_.micro_batch_size;
  result.grad_accum_steps = split_.grad_accum_steps;
  prefetcher_ = start_prefetcher(steps_done_, split_);
  restore_generators();

  result.steps.reserve(static_cast<size_t>(counts_.total_steps));
  backend_.synchronize();
  if (before_step_ && steps_done_ < counts_.total_steps) before_step_(steps_done_ + 1);
  Clock::time_point step_start = Clock::now();
  for (int64_t k = steps_done_; k < counts_.total_steps; ++k) {
    // What a redo must restore: the loss scale and the generator that draws dropout masks, as
    // they were when the step began (a copy of a few kilobytes, taken only with fallback on).
    const LossScaler scaler_at_start = scaler_;
    at::Tensor generator_at_start;
    if (spec_.train.oom_fallback) {
      std::lock_guard<std::mutex> lock(generator_.mutex());
      generator_at_start = generator_.get_state();
    }
    StepMeasurement rec;
    model::StepFlops flops;
    Attempt done;
    const dist::CollectiveStats before =
        comm_ != nullptr ? comm_->stats() : dist::CollectiveStats{};
    const dist::CollectiveStats gathers_before =
        gather_stats_ != nullptr ? *gather_stats_ : dist::CollectiveStats{};
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
      step_start = recover_from_out_of_memory(k, oom_error, updating, scaler_at_start,
                                              generator_at_start, step_start, result);
    }

    rec.wall_seconds = seconds_between(step_start, done.end);
    backend_.sample_memory();
    rec.loss = done.loss_sum.item<double>() * done.token_weight;
    rec.grad_norm = done.grad_norm.item<double>();
    rec.model_flops = flops.lora_frozen_base;
    result.steps.push_back(rec);
    result.flops.push_back(flops);
    double collective_seconds = 0.0;
    if (comm_ != nullptr) {
      const dist::CollectiveStats& after = comm_->stats();
      collective_seconds += after.blocked_seconds - before.blocked_seconds;
      result.collective_bytes += after.bytes - before.bytes;
      result.collective_calls += after.calls - before.calls;
    }
    if (gather_stats_ != nullptr) {
      const double waited = gather_stats_->blocked_seconds - gathers_before.blocked_seconds;
      collective_seconds += waited;
      result.gather_seconds += waited;
      result.gather_bytes += gather_stats_->bytes - gathers_before.bytes;
      result.gather_calls += gather_stats_->calls - gathers_before.calls;
    }
    result.collective_seconds.push_back(collective_seconds);
    // A non-finite loss does not recover: the step is recorded (its loss reads null in the
    // report) and the run stops, rather than spending machine time on NaN weights.
    if (!std::isfinite(rec.loss)) throw Diverged(rec.step, rec.loss);
    steps_done_ = k + 1;
    const int64_t check_every = spec_.distributed.check_every_steps;
    if (check_every > 0 && steps_done_ % check_every == 0 && steps_done_ < counts_.total_steps) {
      check_parameters_equal(fmt::format("after step {}", steps_done_));
    }
    if (on_step && on_step(rec) == AfterStep::kStop) {
      count_updates(result);
      return LoopEnd::kStopped;
    }
    // The callbacks (progress, logging, the profiler) are host work outside the measured step.
    if (before_step_ && k + 1 < counts_.total_steps) before_step_(k + 2);
    step_start = Clock::now();
  }

  check_parameters_equal(fmt::format("after the last step ({})", counts_.total_steps));
  count_updates(result);
  return LoopEnd::kCompleted;
}

void Trainer::count_updates(TrainResult& result) const {
  const std::vector<int64_t>& updates = optimizer_->param_steps();
  result.optimizer_updates =
      updates.empty() ? 0 : *std::min_element(updates.begin(), updates.end());
}

}  // namespace ftbench::train
