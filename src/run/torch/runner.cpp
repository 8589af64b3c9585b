#include "run.h"

#include <cmath>

#include "ftbench/report/summary_text.h"

namespace ftbench::run {
namespace detail {

void resolve_peak(const RunOptions& o, const report::DeviceInfo& device,
                  metrics::SummaryOptions& s) {
  if (o.peak_tflops) {
    s.peak_tflops = o.peak_tflops;
    s.peak_source = "--peak-tflops";
  } else if (o.spec.backend.peak_tflops) {
    s.peak_tflops = o.spec.backend.peak_tflops;
    s.peak_source = "spec";
  } else if (device.backend != "cpu") {
    if (auto peak = metrics::find_gpu_peak(device.name, o.spec.model.dtype)) {
      s.peak_tflops = peak->dense_bf16_tflops;
      s.peak_source = "gpu table: " + peak->table_name + " dense bf16";
    }
  }
}

// Without a measurement on this run's device (same backend and device name) none, and the
// report says why.
void resolve_gemm_peak(const RunOptions& o, const report::DeviceInfo& device,
                       metrics::SummaryOptions& s) {
  if (!o.gemm) return;
  const report::MeasuredGemm& g = *o.gemm;
  const std::string& dtype = o.spec.model.dtype;
  if (g.backend != device.backend || g.device_name != device.name) {
    // The file's own strings, escaped: a shared gemm file must not drive the terminal.
    s.gemm_peak_source = fmt::format("none: {} was measured on {} ({}), this run is on {} ({})",
                                     text::printable(g.source), text::printable(g.device_name),
                                     text::printable(g.backend), device.name, device.backend);
    spdlog::warn("--gemm: {}: no MFU against the measured GEMM peak", s.gemm_peak_source);
    return;
  }
  for (const report::MeasuredGemmDtype& d : g.dtypes) {
    if (d.dtype != dtype) continue;
    s.gemm_peak_tflops = d.max_tflops;
    s.gemm_peak_source =
        fmt::format("gemm file: {} {} {}x{}x{}", g.source, dtype, d.best_m, d.best_n, d.best_k);
    return;
  }
  s.gemm_peak_source =
      fmt::format("none: {} has no {} measurement", text::printable(g.source), dtype);
  spdlog::warn("--gemm: {}: no MFU against the measured GEMM peak", s.gemm_peak_source);
}

report::DataStatistics length_statistics(const data::Dataset& dataset,
                                         const data::DataStats& counts, int64_t seq_len) {
  report::DataStatistics s;
  s.format = "synthetic";
  s.records = dataset.size();
  std::vector<double> lengths;
  lengths.reserve(static_cast<size_t>(dataset.size()));
  for (int64_t i = 0; i < dataset.size(); ++i) {
    const int64_t n = static_cast<int64_t>(dataset.at(i).tokens.size());
    if (n > seq_len) ++s.truncated;  // the batcher cuts it to seq_len
    const int64_t used = std::min(n, seq_len);
    lengths.push_back(double(used));
    s.max_length = std::max(s.max_length, used);
  }
  if (!lengths.empty()) {
    double sum = 0.0;
    for (double l : lengths) sum += l;
    s.mean_length = sum / double(lengths.size());
    s.p50_length = metrics::percentile(lengths, 0.5);
    s.p90_length = metrics::percentile(lengths, 0.9);
  }
  s.masked_fraction =
      counts.tokens > 0 ? 1.0 - double(counts.loss_tokens) / double(counts.tokens) : 0.0;
  return s;
}

Run::Run(const RunOptions& o, const metrics::ProcessClock& clock, const train::StopSignals& signals)
    : o_(o),
      spec_(o.spec),
      clock_(clock),
      signals_(signals),
      spec_fingerprint_(spec::fingerprint(o.spec)),
      cp_dir_(checkpoint_dir(o.spec)),
      adapter_dir_(adapter_export_dir(o.spec)),
      merged_dir_(merged_export_dir(o.spec)),
      recorder_(clock) {
  check_launch();
  // Rank 0 alone writes: the other ranks neither lock nor check what they do not touch.
  if (lead()) claim_checkpoint_folder();
  read_resume_point();
  if (lead()) {
    continue_after_setup_stop();
    check_outputs();
  }
  start_report();
  if (lead()) check_profile_window();  // the steps are counted now, but for a data file's
  if (lead() && !o_.mllog_path.empty()) {
    mllog_ = std::make_unique<MlLog>(o_.mllog_path, o_.force || continues_setup_stop_,
                                     resume_.has_value(), clock_.start_epoch_seconds());
    mllog_->start_init(-rep_.t0_before_process_seconds, clock_.now(), mllog_job());
  }
}

MlLogJob Run::mllog_job() const {
  MlLogJob j;
  j.seed = spec_.train.seed;
  j.global_batch_size = rep_.derived.effective_batch;
  j.gradient_accumulation_steps = spec_.train.grad_accum_steps;
  j.max_sequence_length = spec_.data.seq_len;
  j.base_learning_rate = spec_.train.lr;
  j.warmup_steps = spec_.train.lr_warmup_steps;
  j.weight_decay = spec_.train.weight_decay;
  j.adam_beta1 = spec_.train.beta1;
  j.adam_beta2 = spec_.train.beta2;
  j.adam_epsilon = spec_.train.eps;
  j.gradient_clip_norm = spec_.train.max_grad_norm;
  j.lora_rank = spec_.lora.rank;
  j.lora_alpha = spec_.lora.alpha;
  j.lora_dropout = spec_.lora.dropout;
  return j;
}

void Run::stop_mllog(bool resumable) noexcept {
  if (!mllog_) return;
  try {
    const int64_t last = result_.steps.empty() ? first_step_ - 1 : result_.steps.back().step;
    // A stop that saved a checkpoint pauses the run: its resume continues the log.
    if (resumable) {
      mllog_->pause(clock_.now(), last, epoch_of(last));
    } else {
      mllog_->stop_run(clock_.now(), last, epoch_of(last), false);
    }
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
  }
}

int64_t Run::epoch_of(int64_t step) const {
  const int64_t per_epoch = std::max<int64_t>(1, rep_.derived.steps_per_epoch);
  return (std::max<int64_t>(1, step) - 1) / per_epoch + 1;
}

// A job of several processes needs c10d's Gloo group in this build and an accumulation that
// splits over its ranks; refused before any machine time goes into it.
void Run::check_launch() const {
  const dist::Launch& l = o_.launch;
  if (!l.distributed()) return;
  if (!dist::available()) {
    throw dist::LaunchError(fmt::format(
        "{}: this ftbench was built without c10d's Gloo group (LibTorch's ProcessGroupGloo.hpp "
        "with the gloo headers, Debian's libgloo-dev), so it runs one process only",
        dist::describe(l)));
  }
  // A CPU run is known to be one from its spec: refused here, before any report, as a build
  // without NCCL is (a device of auto on a machine without a GPU is found out at the backend).
  if (spec_.distributed.backend == spec::choice::dist_backend::kNccl &&
      spec_.backend.device == spec::choice::device::kCpu) {
    throw spec::SpecError({spec::issue_at(
        spec_, "distributed.backend",
        "nccl moves GPU tensors, and this run is on the CPU (backend.device: cpu): use auto or "
        "gloo")});
  }
  if (spec_.distributed.backend == spec::choice::dist_backend::kNccl && !dist::nccl_available()) {
    throw spec::SpecError({spec::issue_at(
        spec_, "distributed.backend",
        "nccl: this ftbench was built without c10d's NCCL group (a CUDA or ROCm LibTorch with "
        "ProcessGroupNCCL.hpp and nccl.h or rccl.h); use auto or gloo (the GPU tensors then "
        "go through host memory)")});
  }
  if (spec_.distributed.shard_base == spec::choice::shard_base::kNode && !l.node_known) {
    throw dist::LaunchError(fmt::format(
        "{}: distributed.shard_base node splits the base among the ranks of each node, and this "
        "job spans nodes ({} ranks here of {}) without saying which node this rank is on: set "
        "GROUP_RANK (torchrun sets it) or SLURM_NODEID (srun does), or use shard_base all",
        dist::describe(l), l.local_world_size, l.world_size));
  }
  const int64_t a = spec_.train.grad_accum_steps;
  if (a % l.world_size != 0) {
    throw spec::SpecError({spec::issue_at(
        spec_, "train.grad_accum_steps",
        fmt::format("{} micro-batches per step do not split over {} ranks: the key counts the "
                    "job's micro-batches per optimizer step, over every rank, so each rank runs "
                    "grad_accum_steps / {}; use a multiple of {} (e.g. {}) and keep "
                    "micro_batch_size x grad_accum_steps the effective batch",
                    a, l.world_size, l.world_size, l.world_size,
                    (a / l.world_size + 1) * l.world_size))});
  }
}

// The report's fixed part, the earlier segments of a resumed run, the launch and spec_load
// phases, and the meters.
void Run::start_report() {
  rep_.run_name = spec_.output.name;
  std::error_code cwd_error;
  rep_.working_directory = std::filesystem::current_path(cwd_error).string();
  rep_.world_size = o_.launch.world_size;
  rep_.started_at_utc = metrics::iso8601_utc(clock_.start_epoch_seconds());
  rep_.spec_path = spec_.source_path;
  rep_.spec = spec::to_json(spec_);
  rep_.spec_fingerprint = spec_fingerprint_;
  rep_.t0_source = o_.t0_epoch_seconds ? o_.t0_source : "process_start";
  rep_.t0_before_process_seconds =
      o_.t0_epoch_seconds ? clock_.start_epoch_seconds() - *o_.t0_epoch_seconds : 0.0;
  // An external start before the end of an earlier segment overlaps it: a new machine booted
  // while the old one still ran is billed twice rightly; the same machine, given its boot time
  // again, is not (leave --t0 out on a resume there).
  if (o_.t0_epoch_seconds && !recorder_.earlier_segments().empty()) {
    const report::Segment& last = recorder_.earlier_segments().back();
    const std::optional<double> ended = metrics::parse_iso8601_utc(last.finished_at_utc);
    if (ended && *o_.t0_epoch_seconds < *ended) {
      spdlog::warn(
          "{} {:.3f} lies {:.1f} s before the end of segment {} ({}): this segment's rented time "
          "overlaps it; if this is the machine that ran it, leave {} out (its time is billed "
          "twice otherwise)",
          o_.t0_source, *o_.t0_epoch_seconds, *ended - *o_.t0_epoch_seconds, last.index,
          last.finished_at_utc, o_.t0_source);
    }
  }
  // Earlier segments of a resumed run: their evaluations and checkpoints (their segments and
  // steps are the recorder's).
  if (resume_) {
    rep_.evaluations = resume_->previous.evaluations;
    rep_.checkpoints = resume_->previous.checkpoints;
  }

  params_ = model::count_parameters(spec_.model, spec_.lora);
  // A data file's counts are known once it is read (data_prepare); until then none.
  const spec::DerivedCounts derived = data::source_of(spec_.data) == data::Source::kFile
                                          ? spec::derive_counts_from_batches(spec_, 0)
                                          : spec::derive_counts(spec_);
  rep_.parameters = {params_.base, params_.lora, params_.total()};
  rep_.derived = {derived.effective_batch, derived.micro_batches_per_epoch, derived.steps_per_epoch,
                  derived.total_steps, derived.max_tokens_per_step};

  rep_.phases.push_back({phase::kLaunch, 0.0, clock_.launch_seconds()});
  phases_.emplace(clock_, rep_.phases, clock_.launch_seconds());
  phases_->end_at(phase::kSpecLoad, o_.spec_loaded_seconds);
  memory_.emplace();
  phases_->measure_memory(&*memory_);

  summary_options_.warmup_steps = spec_.train.timing_warmup_steps;
  summary_options_.devices = o_.launch.world_size;
  summary_options_.loss_window = spec_.train.loss_window;
  rep_.gemm = o_.gemm;
  result_.micro_batch_size = spec_.train.micro_batch_size;
  result_.grad_accum_steps = spec_.train.grad_accum_steps;
  energy_.emplace(spec_.backend, recorder_.segment_index());

  // Every process of a run that saves checkpoints is in the journal from its start: one killed
  // before its first save is billed by the next (run_start.cpp, continue_after_setup_stop).
  journal_on_ = (resume_.has_value() || cp_lock_.has_value()) && lead();
  phases_->after_each_phase([this] { update_journal(report::status::kUnfinished); });
  // A resumed process is in the journal from now on, whatever becomes of it.
  update_journal(report::status::kUnfinished);
}

report::Report Run::execute() {
  try {
    // A stop asked for since the process started (while LibTorch loaded, while the spec was
    // read) ends the run here, with its report: that time was rented too.
    stop_if_asked(phase::kSpecLoad);
    init_backend();
    end_setup_phase(phase::kBackendInit);
    build_model();
    record_execution();
    end_setup_phase(phase::kModelBuild);
    load_weights();
    check_weights();
    end_setup_phase(phase::kWeightLoad);
    if (mllog_) {
      mllog_->start_run(clock_.now(),
                        fmt::format("{}x{}", o_.launch.world_size, backend_->info().name));
    }
    prepare_data();
    end_setup_phase(phase::kDataPrepare);
    check_same_job();
    trainer_ =
        std::make_unique<train::Trainer>(spec_, model_, *batcher_, *backend_, o_.inject_oom,
                                         comm_.get(), sharded_ ? &sharded_->stats() : nullptr);
    // Every rank starts from rank 0's adapters (a resumed run's come from the checkpoint,
    // which every rank reads).
    trainer_->broadcast_parameters();
    if (resume_) {
      load_checkpoint();
      phases_->end(phase::kCheckpointLoad);
      spdlog::info("resuming after step {} from {}", resume_->manifest.step, resume_->folder);
    }
    train();
    if (mllog_) {
      const int64_t last = result_.steps.empty() ? first_step_ - 1 : result_.steps.back().step;
      mllog_->stop_run(clock_.now(), last, epoch_of(last), true);
    }
    gather_rank_records();
    export_outputs();
  } catch (const std::exception& e) {
    // A run that ends inside the profile window: the steps recorded so far.
    if (profiler_ && profiler_->recording()) {
      std::optional<std::vector<metrics::ProfileEvent>> events;
      try {
        events = profiler_->stop();
      } catch (const std::exception& stop_error) {
        spdlog::warn("--profile-steps: the profiler did not stop: {}", stop_error.what());
      }
      if (events) {
        finish_profile(std::move(*events),
                       result_.steps.empty() ? first_step_ - 1 : result_.steps.back().step);
      }
    }
    release_run_objects();
    stop_mllog(dynamic_cast<const train::Interrupted*>(&e) != nullptr && !result_.steps.empty());
    record_failure(e);
    throw;
  }
  release_run_objects();
  return finish();
}

void Run::end_setup_phase(const char* name) {
  phases_->end(name);
  stop_if_asked(name);
}

// A stop asked for during set-up ends the run at the end of the phase: nothing of this segment
// is worth a checkpoint yet (a resumed run's checkpoint is still there).
void Run::stop_if_asked(const char* phase_name) const {
  if (const int signal = signals_.received(); signal != 0) {
    throw train::Interrupted(
        fmt::format("stopped by {} during set-up (after {}), before any step of this process: "
                    "no checkpoint written; {}",
                    train::StopSignals::name(signal), phase_name,
                    resume_ ? "resume again from " + resume_->folder
                            : std::string("run the same command again to start at step 1 (this "
                                          "process stays in the report as a segment, billed)")));
  }
}

void Run::init_backend() {
  // Before any machine time goes into the model (an 8B model takes minutes to build).
  data::check_named_files(spec_);
  spec::BackendSpec backend = spec_.backend;
  const dist::Launch& launch = o_.launch;
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
  backend_ = std::make_unique<device::Backend>(backend);
  const std::string& wanted = spec_.distributed.backend;
  if (launch.distributed() && wanted == spec::choice::dist_backend::kNccl &&
      backend_->device().is_cpu()) {
    throw spec::SpecError(
        {spec::issue_at(spec_, "distributed.backend",
                        "nccl moves GPU tensors, and this run is on the CPU: use auto or gloo")});
  }
  if (launch.distributed()) {
    dist::CommunicatorOptions co;
    co.device = backend_->device();
    co.device_collectives = wanted != spec::choice::dist_backend::kGloo;
    co.init_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(spec_.distributed.init_timeout_seconds * 1000.0));
    co.timeout =
        std::chrono::milliseconds(static_cast<int64_t>(spec_.distributed.timeout_seconds * 1000.0));
    co.stop_requested = [this] { return signals_.received() != 0; };
    try {
      comm_ = dist::communicator_for(launch, co);
    } catch (const std::exception&) {
      // A stop asked for while the ranks met (it also interrupts the store's connection) is a
      // stop, not a failure.
      stop_if_asked(phase::kBackendInit);
      throw;
    }
    spdlog::info("{}: process group formed ({})", dist::describe(launch), comm_->backend_name());
    check_same_launch_settings();
    if (spec_.distributed.shard_base == spec::choice::shard_base::kNode &&
        launch.local_world_size < launch.world_size) {
      // A failure in the node's group says what the job's group knows of every rank.
      dist::CommunicatorOptions node = co;
      node.more_on_failure = [this] { return comm_->last_heard_of(); };
      try {
        node_comm_ = dist::node_communicator_for(launch, node);
      } catch (const std::exception&) {
        stop_if_asked(phase::kBackendInit);
        throw;
      }
    }
    if (!backend_->device().is_cpu() && std::string(comm_->backend_name()) == "gloo") {
      spdlog::warn(
          "{}: the gradients travel through host memory over Gloo{}: correct, but the "
          "collectives cost more than NCCL's",
          dist::describe(launch),
          dist::nccl_available() ? " (distributed.backend: gloo)"
                                 : " (this ftbench has no NCCL group)");
    }
  } else {
    comm_ = std::make_unique<dist::Communicator>();
  }
  memory_->set_backend(backend_.get());
  backend_->check_dtype_supported(spec_.model.dtype);
  if (resume_) {
    train::check_device_generator_state(resume_->folder, resume_->manifest, backend_->device());
    warn_if_not_bit_exact(resume_->previous.environment, backend_->info(), backend_->device());
  }
  resolve_gemm_peak(o_, backend_->info(), summary_options_);
  at::manual_seed(spec_.train.seed);
}

dist::Communicator* Run::shard_group() const {
  const std::string& how = spec_.distributed.shard_base;
  if (!o_.launch.distributed() || how == spec::choice::shard_base::kNone) return nullptr;
  dist::Communicator* group = node_comm_ ? node_comm_.get() : comm_.get();
  return group->size() > 1 ? group : nullptr;
}

void Run::build_model() {
  const bool fused = fused_blocks_from_environment();
  // The switches and what they allow were checked before the run (check_step_switches), and
  // auto leaves selective out under FTBENCH_FUSED_BLOCKS=0.
  resolve_checkpointing();
  summary_options_.recompute = checkpointing_ == spec::choice::checkpointing::kFull;
  dist::Communicator* group = shard_group();
  spec::ModelSpec model_spec = spec_.model;
  model_spec.activation_checkpointing = checkpointing_;
  model_ = model::Llama(model_spec, spec_.lora, spec_.data.seq_len, backend_->device(),
                        group != nullptr ? group->size() : 0);
  model_->set_fused(fused);
  const bool gpu_kernels = model::gpu_kernels_enabled_from_environment();
  if (gpu_kernels && !model::gpu_rope_kernel_built()) {
    spdlog::warn(
        "FTBENCH_GPU_KERNELS=1: this build has no GPU kernels of ftbench's own (a CPU "
        "LibTorch, or built without them); ATen's operators run");
  }
  model_->set_gpu_kernels(gpu_kernels && model::gpu_rope_kernel_built() &&
                          !backend_->device().is_cpu());
  if (!fused) spdlog::warn("FTBENCH_FUSED_BLOCKS=0: the step runs as before the fused blocks");
  if (group != nullptr) {
    sharded_ = std::make_unique<dist::ShardedBase>(*group, model_->base_units());
    model_->set_base_gathers(sharded_.get());
    shard_group_size_ = group->size();
  } else if (spec_.distributed.shard_base != spec::choice::shard_base::kNone) {
    spdlog::info("distributed.shard_base {}: {}, so the base stays whole",
                 spec_.distributed.shard_base,
                 o_.launch.distributed() ? "this node runs one rank of the job" : "one process");
  }
  backend_->synchronize();
}

// A run re-created from a report trains the weights that run trained.
void Run::check_weights() const {
  if (o_.expected_weights_fingerprint.empty() || !rep_.weights) return;
  if (rep_.weights->fingerprint != o_.expected_weights_fingerprint) {
    throw RerunError(fmt::format(
        "model.checkpoint {}: weights fingerprint {}, the report's run trained {}: not the same "
        "weights, so not the same job",
        spec_.model.checkpoint, rep_.weights->fingerprint.substr(0, 12),
        o_.expected_weights_fingerprint.substr(0, 12)));
  }
}

void Run::load_weights() {
  // A split base: each unit keeps this rank's slice as soon as it is filled.
  std::function<void(int64_t)> keep;
  if (sharded_) keep = [this](int64_t unit) { sharded_->keep_shard(unit); };
  if (spec_.model.checkpoint.empty()) {
    model_->init_random(keep);
    rep_.weights = report::WeightsInfo{"random", "", "", 0, 0, 0, 0.0, 0.0, ""};
    backend_->synchronize();
    count_base_bytes();
    return;
  }
  // Base weights from the checkpoint, file by file straight into the model's dtype and
  // device; the adapters start as a fresh LoRA adapter does.
  model_->init_adapters();
  backend_->synchronize();
  const double load_start = clock_.now();
  const hf::HfLoadStats loaded =
      hf::load_hf_weights(model_, spec_.model.checkpoint, spec_.model, keep);
  backend_->synchronize();
  const double seconds = clock_.now() - load_start;
  rep_.weights =
      report::WeightsInfo{"checkpoint",      spec_.model.checkpoint,
                          "safetensors",     loaded.files,
                          loaded.tensors,    loaded.bytes,
                          seconds,           seconds > 0.0 ? double(loaded.bytes) / seconds : 0.0,
                          loaded.fingerprint};
  spdlog::info(
      "weights: {} tensors, {} from {} file{} of {} in {:.3f} s ({}/s)", loaded.tensors,
      report::format_bytes(loaded.bytes), loaded.files, loaded.files == 1 ? "" : "s",
      spec_.model.checkpoint, seconds,
      report::format_bytes(seconds > 0.0 ? std::llround(double(loaded.bytes) / seconds) : 0));
  // A resumed run continues on the weights it started from.
  if (resume_ && resume_->previous.weights &&
      resume_->previous.weights->fingerprint != loaded.fingerprint) {
    throw train::CheckpointError(fmt::format(
        "{}: saved by a run on other base weights (weights fingerprint {}, {} holds {}); "
        "resuming needs the same checkpoint",
        resume_->folder, resume_->previous.weights->fingerprint.substr(0, 12),
        spec_.model.checkpoint, loaded.fingerprint.substr(0, 12)));
  }
  backend_->synchronize();
  count_base_bytes();
}

void Run::count_base_bytes() {
  // The tensors a split base holds only while gathered count as this rank's slices.
  std::set<const c10::TensorImpl*> split;
  for (const model::BaseUnit& unit : model_->base_units()) {
    for (const at::Tensor& t : unit.tensors()) split.insert(t.unsafeGetTensorImpl());
  }
  int64_t bytes = sharded_ ? sharded_->shard_bytes() : 0;
  for (const auto& p : model_->named_parameters()) {
    const at::Tensor& t = p.value();
    if (p.key().find("lora_") != std::string::npos || split.count(t.unsafeGetTensorImpl()))
      continue;
    bytes += t.numel() * static_cast<int64_t>(t.element_size());
  }
  base_bytes_ = bytes;
  if (sharded_) {
    spdlog::info("base split over {} ranks ({}): this rank holds {} of it between gathers",
                 sharded_->ranks(), spec_.distributed.shard_base, report::format_bytes(bytes));
  }
}

// The tokenizer and the data set. A data file's size is known only now: the step counts are
// derived again, from the batcher's micro-batches.
void Run::prepare_data() {
  data::SpecData loaded = data::load_spec_data(spec_);
  tokenizer_ = std::move(loaded.tokenizer);
  dataset_ = std::move(loaded.train);
  validation_data_ = std::move(loaded.validation);
  const data::Dataset& dataset = *dataset_;
  data::BatcherOptions bo;
  bo.micro_batch_size = spec_.train.micro_batch_size;
  bo.seq_len = spec_.data.seq_len;
  bo.padding = data::padding_of(spec_.data);
  bo.shuffle = spec_.data.shuffle;
  bo.train_on_input = spec_.data.train_on_input;
  bo.seed = spec_.data.seed;
  bo.pad_id = tokenizer_->pad_id();
  batcher_ = std::make_unique<data::Batcher>(dataset, bo, backend_->device());
  // The step counts the run will make: from the data set's real size and, with packing, from
  // the packed rows.
  const spec::DerivedCounts counts =
      data::counts_from_rows(spec_, batcher_->rows_per_epoch(), dataset.size());
  rep_.derived = {counts.effective_batch, counts.micro_batches_per_epoch, counts.steps_per_epoch,
                  counts.total_steps, counts.max_tokens_per_step};
  const data::DataStats data_stats = data::fingerprint(dataset, spec_.data.train_on_input);
  rep_.data = report::DataInfo{dataset.description(), data_stats.examples, data_stats.tokens,
                               data_stats.loss_tokens, data_stats.fingerprint};
  report::DataStatistics statistics = length_statistics(dataset, data_stats, spec_.data.seq_len);
  if (const std::optional<data::DataFileStats>& file = loaded.file_stats) {
    statistics.format = loaded.file_format;
    statistics.records = file->records;
    statistics.skipped_bad = file->skipped_bad;
    statistics.dropped_too_long = file->dropped_too_long;
    statistics.truncated = file->truncated;
  }
  rep_.data->statistics = statistics;
  // What a run re-created from this report checks it reads again (run/rerun.h).
  rep_.data->files = input_files(spec_);
  if (!o_.expected_data_fingerprint.empty() &&
      rep_.data->fingerprint != o_.expected_data_fingerprint) {
    throw RerunError(fmt::format(
        "the data read has fingerprint {}, the report's run trained on {}: not the same data, "
        "so not the same job",
        rep_.data->fingerprint.substr(0, 12), o_.expected_data_fingerprint.substr(0, 12)));
  }
  prepare_validation(bo);
}

// The examples a last partial micro-batch would leave out get a smaller micro-batch of their
// own, so a full pass sees every validation example (packed rows: a last partial micro-batch
// of rows is left out, as in training).
void Run::prepare_validation(const data::BatcherOptions& train_options) {
  if (!validation_data_) return;
  const data::DataStats v = data::fingerprint(*validation_data_, spec_.data.train_on_input);
  rep_.data->validation = report::ValidationDataInfo{validation_data_->description(), v.examples,
                                                     v.tokens, v.loss_tokens};
  data::BatcherOptions vbo = train_options;
  vbo.shuffle = false;
  validation_batchers_.push_back(
      std::make_unique<data::Batcher>(*validation_data_, vbo, backend_->device()));
  const int64_t n = validation_data_->size();
  const int64_t covered = validation_batchers_.back()->batches_per_epoch() * vbo.micro_batch_size;
  if (vbo.padding != data::Padding::kPack && covered < n) {
    validation_parts_.push_back(
        std::make_unique<data::SliceDataset>(*validation_data_, covered, n - covered));
    data::BatcherOptions tail = vbo;
    tail.micro_batch_size = n - covered;
    validation_batchers_.push_back(
        std::make_unique<data::Batcher>(*validation_parts_.back(), tail, backend_->device()));
  }
  for (const auto& b : validation_batchers_) validation_.push_back(b.get());
}

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

}  // namespace

void Run::check_same_launch_settings() {
  if (!o_.launch.distributed()) return;
  // How the job is run is left out of the spec fingerprint, but the ranks must agree on it: a
  // rank with another distributed.shard_base would meet its peers' gathers with other
  // collectives.
  std::vector<std::vector<std::string>> all;
  const auto differ = first_disagreement(*comm_, {spec::to_json(spec_)["distributed"].dump()}, all);
  if (!differ) return;
  throw dist::LaunchError(fmt::format(
      "rank {} runs the job differently from rank 0: its distributed section is {}, rank 0's "
      "is {}; every rank must be started with the same spec and --set options",
      differ->first, all[differ->first][0], all[0][0]));
}

void Run::check_same_job() {
  if (!o_.launch.distributed()) return;
  std::vector<std::vector<std::string>> all;
  const auto differ = first_disagreement(*comm_, {spec_fingerprint_, rep_.data->fingerprint}, all);
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

void Run::load_checkpoint() {
  if (resume_->manifest.data_fingerprint != rep_.data->fingerprint) {
    throw train::CheckpointError(fmt::format(
        "{}: saved with other training data (data fingerprint {}, this run's is {}): the "
        "tokens or loss masks differ (data file, tokenizer, data.* keys)",
        resume_->folder, resume_->manifest.data_fingerprint.substr(0, 12),
        rep_.data->fingerprint.substr(0, 12)));
  }
  if (resume_->manifest.step >= rep_.derived.total_steps) {
    // A process killed after its last save and before its report: the way on is an earlier
    // checkpoint (the last step made again, the report written), when one is kept.
    std::string way_on = "; with none kept before it, run again with --force to start at step 1";
    const std::vector<std::string> kept = train::list_checkpoints(cp_dir_);
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
      const std::optional<int64_t> step = train::step_of_checkpoint_folder(*it);
      if (step && *step < rep_.derived.total_steps) {
        way_on = fmt::format(
            "; if the process that saved it ended before writing its report (killed after the "
            "save), continue from the checkpoint before it: --resume {}",
            *it);
        break;
      }
    }
    throw train::CheckpointError(
        fmt::format("{}: saved after step {}, the run has {} steps: nothing left to run{}",
                    resume_->folder, resume_->manifest.step, rep_.derived.total_steps, way_on));
  }
  train::ResumeState state =
      train::load_checkpoint(resume_->folder, resume_->manifest, model_, backend_->device());
  // The earlier segments' fallbacks, from the partial report the checkpoint carries, are the
  // trainer's now (TrainResult::fallbacks): the resumed report lists them all.
  if (resume_->previous.batching) state.fallbacks = resume_->previous.batching->fallbacks;
  trainer_->resume(std::move(state));
  backend_->synchronize();
}

}  // namespace detail

report::Report run_benchmark(const RunOptions& o, const metrics::ProcessClock& clock,
                             const train::StopSignals& signals) {
  detail::Run run(o, clock, signals);
  return run.execute();
}

}  // namespace ftbench::run
