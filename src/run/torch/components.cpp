#include "run/torch/components.h"

#include <algorithm>
#include <functional>
#include <set>
#include <thread>
#include <utility>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include "data/data_from_spec.h"
#include "data/fingerprint.h"
#include "data/slice_dataset.h"
#include "device/torch/environment.h"
#include "model/hf/torch/hf_load.h"
#include "model/torch/gpu_kernels.h"
#include "report/phase_names.h"
#include "report/summary_text.h"
#include "run/rerun.h"
#include "run/step_switches.h"
#include "run/torch/mfu_peaks.h"
#include "spec/canonical.h"
#include "spec/choices.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"
#include "train/checkpoint_files.h"
#include "train/dist/launch.h"
#include "train/torch/checkpoint.h"
#include "util/stats/summary.h"
#include "util/text/units.h"

namespace ftbench::run::detail {

namespace phase = report::phase;

namespace {

// The first rank whose texts differ from rank 0's, and which text: none when all agree. The
// texts travel as numbers (a character a number, exact in fp64) in one Gloo all-gather.
std::optional<std::pair<std::size_t, std::size_t>> first_disagreement(
    dist::Communicator& comm, const std::vector<std::string>& texts,
    std::vector<std::vector<std::string>>& everyones) {
  std::vector<double> mine;
  for (const std::string& t : texts) {
    mine.push_back(double(t.size()));
    for (const char c : t) mine.push_back(double(static_cast<unsigned char>(c)));
  }
  for (const std::vector<double>& v : comm.all_gather_values(mine)) {
    std::vector<std::string> theirs;
    for (std::size_t i = 0; i < v.size();) {
      const auto n = static_cast<std::size_t>(v[i]);
      std::string t;
      for (std::size_t k = 1; k <= n && i + k < v.size(); ++k) t += char(int(v[i + k]));
      theirs.push_back(std::move(t));
      i += 1 + n;
    }
    everyones.push_back(std::move(theirs));
  }
  for (std::size_t r = 1; r < everyones.size(); ++r) {
    for (std::size_t which = 0; which < everyones[0].size(); ++which) {
      if (which >= everyones[r].size() || everyones[r][which] != everyones[0][which]) {
        return std::make_pair(r, which);
      }
    }
  }
  return std::nullopt;
}

void check_same_launch_settings(const RunContext& ctx, Components& built) {
  if (!ctx.distributed()) return;
  // How the job is run is left out of the spec fingerprint, but the ranks must agree on it: a
  // rank with another distributed.shard_base would meet its peers' gathers with other
  // collectives.
  std::vector<std::vector<std::string>> all;
  const auto differ =
      first_disagreement(*built.comm, {spec::to_json(ctx.spec)["distributed"].dump()}, all);
  if (!differ) return;
  throw dist::LaunchError(fmt::format(
      "rank {} runs the job differently from rank 0: its distributed section is {}, rank 0's "
      "is {}; every rank must be started with the same spec and --set options",
      differ->first, all[differ->first][0], all[0][0]));
}

// A run re-created from a report trains the weights that run trained.
void check_weights(const RunContext& ctx, const report::WeightsRead& weights) {
  if (ctx.request.expected_weights_fingerprint.empty()) return;
  if (weights.fingerprint != ctx.request.expected_weights_fingerprint) {
    throw RerunError(fmt::format(
        "model.checkpoint {}: weights fingerprint {}, the report's run trained {}: not the same "
        "weights, so not the same job",
        ctx.spec.model.checkpoint, weights.fingerprint.substr(0, 12),
        ctx.request.expected_weights_fingerprint.substr(0, 12)));
  }
}

void count_base_bytes(const RunContext& ctx, Components& built) {
  // The tensors a split base holds only while gathered count as this rank's slices.
  std::set<const c10::TensorImpl*> split;
  for (const model::BaseUnit& unit : built.model->base_units()) {
    for (const at::Tensor& t : unit.tensors()) split.insert(t.unsafeGetTensorImpl());
  }
  int64_t bytes = built.sharded ? built.sharded->shard_bytes() : 0;
  for (const auto& p : built.model->named_parameters()) {
    const at::Tensor& t = p.value();
    if (p.key().find("lora_") != std::string::npos || split.count(t.unsafeGetTensorImpl()))
      continue;
    bytes += t.numel() * static_cast<int64_t>(t.element_size());
  }
  built.base_bytes = bytes;
  if (built.sharded) {
    spdlog::info("base split over {} ranks ({}): this rank holds {} of it between gathers",
                 built.sharded->ranks(), ctx.spec.distributed.shard_base,
                 text::format_bytes(bytes));
  }
}

// The examples a last partial micro-batch would leave out get a smaller micro-batch of their
// own, so a full pass sees every validation example (packed rows: a last partial micro-batch
// of rows is left out, as in training).
void prepare_validation(const RunContext& ctx, const data::BatcherOptions& train_options,
                        Components& built, report::DataRead& read) {
  if (!built.validation_data) return;
  read.validation =
      report::DataSetRead{built.validation_data->description(),
                          data::fingerprint(*built.validation_data, ctx.spec.data.train_on_input)};
  data::BatcherOptions vbo = train_options;
  vbo.shuffle = false;
  built.validation_batchers.push_back(
      std::make_unique<data::Batcher>(*built.validation_data, vbo, built.backend->device()));
  const int64_t n = built.validation_data->size();
  const int64_t covered =
      built.validation_batchers.back()->batches_per_epoch() * vbo.micro_batch_size;
  if (vbo.padding != data::Padding::kPack && covered < n) {
    built.validation_parts.push_back(
        std::make_unique<data::SliceDataset>(*built.validation_data, covered, n - covered));
    data::BatcherOptions tail = vbo;
    tail.micro_batch_size = n - covered;
    built.validation_batchers.push_back(std::make_unique<data::Batcher>(
        *built.validation_parts.back(), tail, built.backend->device()));
  }
  for (const auto& batcher : built.validation_batchers) built.validation.push_back(batcher.get());
}

}  // namespace

dist::Communicator* Components::shard_group(const RunContext& ctx) const {
  const std::string& how = ctx.spec.distributed.shard_base;
  if (!ctx.distributed() || how == spec::choice::shard_base::kNone) return nullptr;
  dist::Communicator* group = node_comm ? node_comm.get() : comm.get();
  return group->size() > 1 ? group : nullptr;
}

void start_backend(const RunContext& ctx, const StartState& start, Components& built,
                   RunMeasurements& measured) {
  // Before any machine time goes into the model (an 8B model takes minutes to build).
  data::check_named_files(ctx.spec);
  spec::BackendSpec backend = ctx.spec.backend;
  const dist::Launch& launch = ctx.request.launch;
  if (launch.distributed() && backend.threads == 0 && launch.local_world_size > 1) {
    // The node's cores shared between its ranks, as torchrun does with OMP_NUM_THREADS.
    const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
    backend.threads = std::max<int64_t>(1, hardware / launch.local_world_size);
  }
  // Each rank its own GPU: LOCAL_RANK, or the only one it sees.
  const int64_t gpus = static_cast<int64_t>(torch::cuda::device_count());
  if (launch.distributed() && backend.device != spec::choice::device::kCpu && gpus > 0) {
    backend.device_index = dist::device_index(launch, gpus);
  }
  built.backend = std::make_unique<device::Backend>(backend);
  const std::string& wanted = ctx.spec.distributed.backend;
  if (launch.distributed() && wanted == spec::choice::dist_backend::kNccl &&
      built.backend->device().is_cpu()) {
    throw spec::SpecError(
        {spec::issue_at(ctx.spec, "distributed.backend",
                        "nccl moves GPU tensors, and this run is on the CPU: use auto or gloo")});
  }
  if (launch.distributed()) {
    dist::CommunicatorOptions co;
    co.device = built.backend->device();
    co.device_collectives = wanted != spec::choice::dist_backend::kGloo;
    co.init_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(ctx.spec.distributed.init_timeout_seconds * 1000.0));
    co.timeout = std::chrono::milliseconds(
        static_cast<int64_t>(ctx.spec.distributed.timeout_seconds * 1000.0));
    const train::StopSignals* signals = &ctx.signals;
    co.stop_requested = [signals] { return signals->received() != 0; };
    try {
      built.comm = dist::communicator_for(launch, co);
    } catch (const std::exception&) {
      // A stop asked for while the ranks met (it also interrupts the store's connection) is a
      // stop, not a failure.
      stop_if_asked(ctx, start, phase::kBackendInit);
      throw;
    }
    spdlog::info("{}: process group formed ({})", dist::describe(launch),
                 built.comm->backend_name());
    check_same_launch_settings(ctx, built);
    if (ctx.spec.distributed.shard_base == spec::choice::shard_base::kNode &&
        launch.local_world_size < launch.world_size) {
      // A failure in the node's group says what the job's group knows of every rank.
      dist::CommunicatorOptions node = co;
      dist::Communicator* job = built.comm.get();
      node.more_on_failure = [job] { return job->last_heard_of(); };
      try {
        built.node_comm = dist::node_communicator_for(launch, node);
      } catch (const std::exception&) {
        stop_if_asked(ctx, start, phase::kBackendInit);
        throw;
      }
    }
    if (!built.backend->device().is_cpu() && std::string(built.comm->backend_name()) == "gloo") {
      spdlog::warn(
          "{}: the gradients travel through host memory over Gloo{}: correct, but the "
          "collectives cost more than NCCL's",
          dist::describe(launch),
          dist::nccl_available() ? " (distributed.backend: gloo)"
                                 : " (this ftbench has no NCCL group)");
    }
  } else {
    built.comm = std::make_unique<dist::Communicator>();
  }
  measured.memory->set_backend(built.backend.get());
  built.backend->check_dtype_supported(ctx.spec.model.dtype);
  if (start.resume) {
    train::check_device_generator_state(start.resume->folder, start.resume->manifest,
                                        built.backend->device());
    warn_if_not_bit_exact(*start.resume, built.backend->info(), built.backend->device());
  }
  resolve_gemm_peak(ctx, built.backend->info(), measured.summary);
  at::manual_seed(ctx.spec.train.seed);
}

std::optional<int64_t> Components::intra_op_threads() const {
  if (!backend) return std::nullopt;
  return at::get_num_threads();
}

void Components::release() {
  trainer.reset();
  validation.clear();
  validation_batchers.clear();
  validation_parts.clear();
  batcher.reset();
  validation_data.reset();
  dataset.reset();
  tokenizer.reset();
  sharded.reset();
  model = model::Llama(nullptr);
}

void build_trainer(const RunContext& ctx, Components& built) {
  built.trainer = std::make_unique<train::Trainer>(
      ctx.spec, built.model, *built.batcher, *built.backend, ctx.test_hooks.inject_oom,
      built.comm.get(), built.sharded ? &built.sharded->stats() : nullptr);
  // Every rank starts from rank 0's adapters (a resumed run's come from the checkpoint,
  // which every rank reads).
  built.trainer->broadcast_parameters();
}

void build_model(const RunContext& ctx, const CheckpointingPolicy& checkpointing,
                 Components& built) {
  const bool fused = fused_blocks_from_environment();
  // The switches and what they allow were checked before the run (check_step_switches), and
  // auto leaves selective out under FTBENCH_FUSED_BLOCKS=0.
  dist::Communicator* group = built.shard_group(ctx);
  spec::ModelSpec model_spec = ctx.spec.model;
  model_spec.activation_checkpointing = checkpointing.policy;
  built.model = model::Llama(model_spec, ctx.spec.lora, ctx.spec.data.seq_len,
                             built.backend->device(), group != nullptr ? group->size() : 0);
  built.model->set_fused(fused);
  const bool gpu_kernels = model::gpu_kernels_enabled_from_environment();
  if (gpu_kernels && !model::gpu_rope_kernel_built()) {
    spdlog::warn(
        "FTBENCH_GPU_KERNELS=1: this build has no GPU kernels of ftbench's own (a CPU "
        "LibTorch, or built without them); ATen's operators run");
  }
  built.model->set_gpu_kernels(gpu_kernels && model::gpu_rope_kernel_built() &&
                               !built.backend->device().is_cpu());
  if (!fused) spdlog::warn("FTBENCH_FUSED_BLOCKS=0: the step runs as before the fused blocks");
  if (group != nullptr) {
    built.sharded = std::make_unique<dist::ShardedBase>(*group, built.model->base_units());
    built.model->set_base_gathers(built.sharded.get());
    built.shard_group_size = group->size();
  } else if (ctx.spec.distributed.shard_base != spec::choice::shard_base::kNone) {
    spdlog::info("distributed.shard_base {}: {}, so the base stays whole",
                 ctx.spec.distributed.shard_base,
                 ctx.distributed() ? "this node runs one rank of the job" : "one process");
  }
  built.backend->synchronize();
}

void load_weights(const RunContext& ctx, const StartState& start, Components& built,
                  report::Measured& measured) {
  // A split base: each unit keeps this rank's slice as soon as it is filled.
  std::function<void(int64_t)> keep;
  if (built.sharded) keep = [&built](int64_t unit) { built.sharded->keep_shard(unit); };
  if (ctx.spec.model.checkpoint.empty()) {
    built.model->init_random(keep);
    measured.weights = report::WeightsRead{};
  } else {
    // Base weights from the checkpoint, file by file straight into the model's dtype and
    // device; the adapters start as a fresh LoRA adapter does.
    built.model->init_adapters();
    built.backend->synchronize();
    const double load_start = ctx.clock.now();
    const hf::HfLoadStats loaded =
        hf::load_hf_weights(built.model, ctx.spec.model.checkpoint, ctx.spec.model, keep);
    built.backend->synchronize();
    const double seconds = ctx.clock.now() - load_start;
    measured.weights = report::WeightsRead{
        ctx.spec.model.checkpoint, loaded.files, loaded.tensors, loaded.bytes, seconds,
        loaded.fingerprint};
    spdlog::info(
        "weights: {} tensors, {} from {} file{} of {} in {:.3f} s ({}/s)", loaded.tensors,
        text::format_bytes(loaded.bytes), loaded.files, loaded.files == 1 ? "" : "s",
        ctx.spec.model.checkpoint, seconds,
        text::format_bytes(seconds > 0.0 ? std::llround(double(loaded.bytes) / seconds) : 0));
    // A resumed run continues on the weights it started from.
    if (start.resume && start.resume->weights_fingerprint &&
        *start.resume->weights_fingerprint != loaded.fingerprint) {
      throw train::CheckpointError(fmt::format(
          "{}: saved by a run on other base weights (weights fingerprint {}, {} holds {}); "
          "resuming needs the same checkpoint",
          start.resume->folder, start.resume->weights_fingerprint->substr(0, 12),
          ctx.spec.model.checkpoint, loaded.fingerprint.substr(0, 12)));
    }
  }
  built.backend->synchronize();
  count_base_bytes(ctx, built);
  // Random weights too: a report's run on a checkpoint is not this one.
  check_weights(ctx, *measured.weights);
}

// The tokenizer and the data set. A data file's size is known only now: the step counts are
// derived again, from the batcher's micro-batches.
void prepare_data(const RunContext& ctx, Components& built, report::Measured& measured) {
  data::SpecData loaded = data::load_spec_data(ctx.spec);
  built.tokenizer = std::move(loaded.tokenizer);
  built.dataset = std::move(loaded.train);
  built.validation_data = std::move(loaded.validation);
  const data::Dataset& dataset = *built.dataset;
  data::BatcherOptions bo;
  bo.micro_batch_size = ctx.spec.train.micro_batch_size;
  bo.seq_len = ctx.spec.data.seq_len;
  bo.padding = data::padding_of(ctx.spec.data);
  bo.shuffle = ctx.spec.data.shuffle;
  bo.train_on_input = ctx.spec.data.train_on_input;
  bo.seed = ctx.spec.data.seed;
  bo.pad_id = built.tokenizer->pad_id();
  built.batcher = std::make_unique<data::Batcher>(dataset, bo, built.backend->device());
  // The step counts the run will make: from the data set's real size and, with packing, from
  // the packed rows.
  const spec::DerivedCounts counts =
      data::counts_from_rows(ctx.spec, built.batcher->rows_per_epoch(), dataset.size());
  measured.derived = counts;
  const data::DataStats counts_read = data::fingerprint(dataset, ctx.spec.data.train_on_input);
  report::DataRead& read = measured.data.emplace();
  read.train = {dataset.description(), counts_read};
  read.lengths = data::length_statistics(dataset, ctx.spec.data.seq_len);
  if (loaded.file_stats) {
    read.format = loaded.file_format;
    read.file = loaded.file_stats;
  }
  // What a run re-created from this report checks it reads again (run/rerun.h).
  read.files = input_files(ctx.spec);
  const std::string& fingerprint = read.train.counts.fingerprint;
  if (!ctx.request.expected_data_fingerprint.empty() &&
      fingerprint != ctx.request.expected_data_fingerprint) {
    throw RerunError(fmt::format(
        "the data read has fingerprint {}, the report's run trained on {}: not the same data, "
        "so not the same job",
        fingerprint.substr(0, 12), ctx.request.expected_data_fingerprint.substr(0, 12)));
  }
  prepare_validation(ctx, bo, built, read);
}

void check_same_job(const RunContext& ctx, Components& built, const std::string& data_fingerprint) {
  if (!ctx.distributed()) return;
  std::vector<std::vector<std::string>> all;
  const auto differ =
      first_disagreement(*built.comm, {ctx.spec_fingerprint, data_fingerprint}, all);
  if (!differ) return;
  const auto [r, which] = *differ;
  const bool spec_differs = which == 0;
  throw dist::LaunchError(fmt::format(
      "rank {} runs another job than rank 0: its {} fingerprint {} is not rank 0's {} ({}); "
      "every rank must be started with the same spec, --set options and files",
      r, spec_differs ? "spec" : "data", all[r][which].substr(0, 12), all[0][which].substr(0, 12),
      spec_differs ? "a key of the job differs: compare the ranks' command lines and spec files"
                   : "the training data or the tokenizer differs: compare the files each "
                     "rank reads"));
}

void load_checkpoint(const RunContext& ctx, const StartState& start, Components& built,
                     const report::Measured& measured) {
  const std::string& data_fingerprint = measured.data->train.counts.fingerprint;
  const int64_t total_steps = measured.derived.total_steps;
  if (start.resume->manifest.data_fingerprint != data_fingerprint) {
    throw train::CheckpointError(fmt::format(
        "{}: saved with other training data (data fingerprint {}, this run's is {}): the "
        "tokens or loss masks differ (data file, tokenizer, data.* keys)",
        start.resume->folder, start.resume->manifest.data_fingerprint.substr(0, 12),
        data_fingerprint.substr(0, 12)));
  }
  if (start.resume->manifest.step >= total_steps) {
    // A process killed after its last save and before its report: the way on is an earlier
    // checkpoint (the last step made again, the report written), when one is kept.
    std::string way_on = "; with none kept before it, run again with --force to start at step 1";
    const std::vector<std::string> kept = train::list_checkpoints(ctx.checkpoint_dir);
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
      const std::optional<int64_t> step = train::step_of_checkpoint_folder(*it);
      if (step && *step < total_steps) {
        way_on = fmt::format(
            "; if the process that saved it ended before writing its report (killed after the "
            "save), continue from the checkpoint before it: --resume {}",
            *it);
        break;
      }
    }
    throw train::CheckpointError(
        fmt::format("{}: saved after step {}, the run has {} steps: nothing left to run{}",
                    start.resume->folder, start.resume->manifest.step, total_steps, way_on));
  }
  train::ResumeState state = train::load_checkpoint(start.resume->folder, start.resume->manifest,
                                                    built.model, built.backend->device());
  // The earlier segments' fallbacks, from the partial report the checkpoint carries, are the
  // trainer's now (TrainResult::fallbacks): the resumed report lists them all.
  state.fallbacks.insert(state.fallbacks.end(), start.resume->fallbacks.begin(),
                         start.resume->fallbacks.end());
  built.trainer->resume(std::move(state));
  built.backend->synchronize();
}

}  // namespace ftbench::run::detail
