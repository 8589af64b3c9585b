// The trainer: each optimizer step over its micro-batches (gradient accumulation, clipping,
// AdamW over the adapters, LR schedule) and one StepMeasurement per step. The run's loop around
// it, which decides after each step whether to save or stop, is run/torch/training_loop.h.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include <ATen/core/Generator.h>
#include <c10/core/TensorOptions.h>

#include "data/torch/batcher.h"
#include "data/torch/prefetcher.h"
#include "device/torch/backend.h"
#include "model/shape_math.h"
#include "model/step_flops.h"
#include "model/torch/llama.h"
#include "spec/derived.h"
#include "spec/run_spec.h"
#include "train/dist/torch/communicator.h"
#include "train/loss_scaler.h"
#include "train/lr_schedule.h"
#include "train/oom_fallback.h"
#include "train/torch/adamw.h"
#include "train/train_result.h"
#include "util/error.h"

namespace ftbench::train {

// What the loop does after a step, as the step callback decides it: the next step, or an end
// there (a stop: the run saves and ends interrupted, resumable).
enum class AfterStep { kContinue, kStop };

// How Trainer::run ended: every step of the run made, or stopped by the callback after one.
enum class LoopEnd { kCompleted, kStopped };

// Called after every optimizer step, after the device synchronisation and timing. Its time is
// outside every step's wall_seconds (the next step's clock starts when it returns), so an
// evaluation pass run from it leaves the step times as they would be without it.
using StepCallback = std::function<AfterStep(const StepMeasurement&)>;

// The training loss of a step was not finite (NaN or infinity): the run diverged and stops
// after recording that step. what(): "step N: the training loss is nan (not finite): the run
// diverged; ..." naming the step.
class Diverged : public RunFailed {
 public:
  Diverged(int64_t step, double loss);
  int64_t step() const { return step_; }

 private:
  int64_t step_;
};

// Whether `e` is LibTorch running out of memory: a c10::OutOfMemoryError (CUDA and ROCm
// caching allocators), or another c10::Error whose message says so (the CPU allocator's
// "DefaultCPUAllocator: can't allocate memory"; is_out_of_memory_message). Nothing else is,
// std::bad_alloc included: host allocations outside LibTorch are not what a smaller micro-batch
// fixes.
bool is_out_of_memory(const std::exception& e);

// One validation pass (the report records it with the step it followed, report::Evaluation).
struct EvalResult {
  double loss = 0.0;  // sum of token losses / loss_tokens; NaN when there are no loss tokens
  int64_t loss_tokens = 0;
  int64_t batches = 0;   // micro-batches run
  double seconds = 0.0;  // host steady clock, device synchronised at both ends
};

// Validation loss: forward passes only (torch::NoGradGuard, the model in eval mode so that
// adapter dropout is off, its previous mode restored afterwards) over the micro-batches of
// `batchers` in order, each in its epoch-1 order: batches 0..n-1 of the first, then of the
// second, and so on, at most `max_batches` in all (0: all). The loss is a mean over every loss
// token of the pass, not a mean of micro-batch means.
EvalResult evaluate(model::Llama& model, const std::vector<data::Batcher*>& batchers,
                    device::Backend& backend, int64_t max_batches);

// Where a resumed run continues (train/torch/checkpoint.h reads it from a checkpoint): the trainer
// restores it before its first step. Tensors in the trainer's parameter order, on its device.
struct ResumeState {
  int64_t steps_done = 0;        // optimizer steps already made; the run continues with step + 1
  int64_t micro_batch_size = 0;  // the split in effect when saved (after any fallback)
  int64_t grad_accum_steps = 0;
  std::vector<MicroBatchFallback> fallbacks;  // those of the earlier segments
  std::vector<at::Tensor> exp_avg;
  std::vector<at::Tensor> exp_avg_sq;
  std::vector<int64_t> param_steps;
  double loss_scale = 1.0;
  int64_t loss_scale_clean_steps = 0;
  at::Tensor cpu_rng_state;     // the CPU generator's state (uint8)
  at::Tensor device_rng_state;  // the device generator's; undefined on CPU
};

class Trainer {
 public:
  // The objects must outlive the trainer. The model's adapters must be initialised.
  // `inject_oom`, a testing aid (FTBENCH_INJECT_OOM), raises a simulated c10::OutOfMemoryError
  // wherever its rule matches.
  //
  // Data parallel (`comm` of several ranks; it must outlive the trainer): spec.train's
  // grad_accum_steps is the job's, over every rank, and must be a multiple of the world size;
  // each rank runs its consecutive share of each step's micro-batches (data::StepOrder), the
  // step's token counts are summed over the ranks first so every token weighs the same as in
  // one process, and the adapter gradients (with the loss) are summed once per step in one flat
  // fp32 buffer before clipping, which therefore sees the global norm. The adapters must start
  // equal on every rank (broadcast_parameters).
  //
  // A split base (model::LlamaImpl::base_gathers()): `gather_stats` are its gathers' running
  // totals (dist::ShardedBase::stats(); they must outlive the trainer), whose waits count in each
  // step's collective time. A rank out of memory makes the rest of the step's gathers before
  // the gradient sum, so that its peers' gathers are met.
  Trainer(const spec::RunSpec& spec, model::Llama& model, data::Batcher& batcher,
          device::Backend& backend, std::optional<OomInjection> inject_oom = std::nullopt,
          dist::Communicator* comm = nullptr, const dist::CollectiveStats* gather_stats = nullptr);

  // Runs spec.train's optimizer steps (derive_counts().total_steps), appending one record per
  // finished step to `result` as it goes, so a step that throws (out of memory, a callback)
  // leaves the earlier ones there. Timing of a step: host steady clock from the end of the
  // previous step (device synchronised) to the end of this one (device synchronised), so
  // nothing queued is missed or double counted.
  //
  // Out of memory before a step's optimizer update (fetching, forward, backward, norm,
  // clipping): with spec.train.oom_fallback, the step's tensors and gradients are dropped, the
  // GPU cache emptied, the batcher set to fallback_micro_batching() and the step redone from its
  // first micro-batch with the same examples, loss scale and random-number state, at most
  // spec.train.oom_max_fallbacks times in the run. The optimizer never saw the failed attempt,
  // so its state and the learning rate are as if the step ran once. The redone step's clock
  // starts at the restart; the time before it is the fallback's seconds_lost. Out of memory
  // inside the update, with fallback off, at micro-batch 1 or past the bound throws
  // OutOfMemoryFailure naming the step and the micro-batch tried. Batcher and result keep the
  // split in effect.
  //
  // `on_step` (may be empty: every step) decides after each step whether the loop goes on;
  // LoopEnd::kStopped when it stopped it.
  LoopEnd run(TrainResult& result, const StepCallback& on_step);

  // Called with each step's number (1-based) just before the step's clock starts, outside the
  // step's time (`ftbench run --profile-steps` starts its recording there); the step's end is
  // run()'s `on_step`, also outside it.
  void set_before_step(std::function<void(int64_t step)> before_step) {
    before_step_ = std::move(before_step);
  }

  // Continue a checkpointed run: run() then starts at step resume.steps_done + 1 with the
  // optimizer, loss scale, random-number generators, micro-batch split and data position as
  // they were after that step (the model's adapter weights are the caller's to restore). The
  // steps before are not in `result.steps`; the fallbacks are.
  // std::invalid_argument when the state does not fit the trainable parameters.
  void resume(ResumeState state);

  // Data parallel: rank 0's adapters to every rank (before the first step).
  void broadcast_parameters();
  // Data parallel: throws RunFailed naming the first parameter whose bits differ from rank 0's
  // on some rank (every rank gets the same answer). `when` goes into the message.
  void check_parameters_equal(const std::string& when);

  // The live training state, for a checkpoint taken from the step callback. Names and tensors
  // in the same, fixed order.
  const std::vector<std::string>& parameter_names() const { return names_; }
  const std::vector<at::Tensor>& parameters() const { return trainable_; }
  const AdamW& optimizer() const { return *optimizer_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  MicroBatching split() const { return split_; }
  int64_t steps_done() const { return steps_done_; }

 private:
  // One attempt at a step with the current split, up to the end-of-step synchronisation.
  struct Attempt {
    std::chrono::steady_clock::time_point end;
    at::Tensor loss_sum;
    at::Tensor grad_norm;
    double token_weight = 0.0;
  };
  // Every tensor of the attempt (micro-batches, autograd graph, partial sums) lives in its
  // frame, so an exception releases them on its way out. `updating` is set once the optimizer
  // update may have begun.
  Attempt attempt_step(int64_t k, StepMeasurement& rec, model::StepFlops& flops, bool& updating);
  // The forward and backward passes of the step's micro-batches (0-based step k, 1-based
  // `step`), then the data-parallel gradient sum; the batches are released as they go.
  void forward_backward(int64_t k, int64_t step, std::vector<data::MicroBatch>& micro_batches,
                        Attempt& out);
  // Data parallel: the step's token counts and FLOPs summed over the ranks.
  void sum_step_counts(StepMeasurement& rec, model::StepFlops& flops);
  // Data parallel: every adapter gradient and `loss_sum` summed over the ranks, in place; returns
  // how many ranks ran out of memory in the step (this one when `out_of_memory`), their
  // gradients then being left undefined.
  int64_t sum_gradients(at::Tensor& loss_sum, bool out_of_memory);
  int64_t ranks() const { return comm_ != nullptr ? comm_->size() : 1; }
  // After an out-of-memory error in step `step` (1-based) before its update: frees what the
  // attempt left, checks the fallback is allowed (OutOfMemoryFailure otherwise), switches to
  // the smaller micro-batch and restores the loss scale and generator the step began with.
  // Records the fallback in `result`; returns the time the redone step starts.
  std::chrono::steady_clock::time_point recover_from_out_of_memory(
      int64_t k, const std::string& oom_error, bool updating, const LossScaler& scaler_at_start,
      const at::Tensor& generator_at_start, std::chrono::steady_clock::time_point step_start,
      TrainResult& result);
  // The micro-batches of steps `first_step` (0-based) to the end of the run, in the order the
  // steps take them, built one step ahead on a background thread.
  std::unique_ptr<data::Prefetcher> start_prefetcher(int64_t first_step,
                                                     const MicroBatching& split);
  // result.optimizer_updates: the fewest updates any trainable parameter has had.
  void count_updates(TrainResult& result) const;
  // FTBENCH_INJECT_OOM: a simulated c10::OutOfMemoryError where the rule matches.
  void inject_out_of_memory(const OomSiteState& state) const;
  // The random-number generators as the checkpoint saved them: last, right before the first
  // step, since nothing may draw random numbers between this and the step.
  void restore_generators();

  const spec::RunSpec& spec_;
  model::Llama& model_;
  data::Batcher& batcher_;
  device::Backend& backend_;
  std::optional<OomInjection> inject_oom_;
  // From the batcher: with packing, an epoch's micro-batches are known only once rows are
  // packed.
  spec::DerivedCounts counts_;
  model::ParamCounts params_;
  // The run's attention kernel skips causal attention's masked blocks (the executed FLOP count).
  bool attention_skips_masked_blocks_ = false;
  LrSchedule schedule_;
  at::TensorOptions f32_;
  std::optional<ResumeState> resume_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> trainable_;
  std::unique_ptr<AdamW> optimizer_;
  LossScaler scaler_{false};
  MicroBatching split_;
  int64_t steps_done_ = 0;
  dist::Communicator* comm_ = nullptr;                   // null: one process
  const dist::CollectiveStats* gather_stats_ = nullptr;  // null: a whole base
  std::unique_ptr<data::Prefetcher> prefetcher_;
  std::function<void(int64_t step)> before_step_;
  at::Tensor gradient_norm() const;
  at::Generator generator_;  // the device's: it draws the dropout masks
};

}  // namespace ftbench::train
