#include "run.h"

#include <fstream>

#include "ftbench/report/summary_text.h"

namespace ftbench::run::detail {
namespace {

// What the exported adapter names as its base: the checkpoint folder as the spec gives it; ""
// (null in adapter_config.json) for random weights, which no loader could fetch.
std::string base_model_name(const spec::RunSpec& spec) { return spec.model.checkpoint; }

// The first line of an error message (LibTorch appends a backtrace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

}  // namespace

// Validation passes and checkpoint saves run between steps, outside every step's wall time
// (the trainer starts the next step's clock after the callback). Each is a phase of its own
// that splits the step loop's time: first_step, [evaluation], training, evaluation,
// checkpoint, training, ..., so the phases stay contiguous and in time order.
void Run::train() {
  spdlog::info("{}: {} on {} ({}), {} steps, {} parameters ({} base + {} trainable)",
               spec_.output.name, spec_.model.preset, backend_->info().name, backend_->kind(),
               rep_.derived.total_steps, params_.total(), params_.base, params_.lora);
  if (o_.inject_oom) {
    spdlog::warn("FTBENCH_INJECT_OOM={}: simulated out-of-memory errors (a testing aid)",
                 o_.inject_oom->rule());
  }
  first_step_ = resume_ ? resume_->manifest.step + 1 : 1;
  training_split_at_ = first_step_;
  progress_ =
      std::make_unique<Progress>(rep_.derived.total_steps, spec_.output.progress,
                                 spec_.output.log_every_steps, o_.rate, o_.launch.world_size);
  cadence_.emplace(rep_.derived.total_steps, spec_.train, !validation_.empty(),
                   o_.stop_after_steps);
  last_save_ = clock_.now();
  energy_->start(*backend_, clock_);
  train_start_ = clock_.now();
  // From here a stop ends after the step in flight, with a checkpoint (and the first signal's
  // line says so; during set-up it says that there is nothing to save yet).
  train::StopSignals::checkpoint_on_stop();
  if (mllog_) {
    mllog_->start_training(train_start_, first_step_, epoch_of(first_step_),
                           rep_.data ? rep_.data->examples : 0,
                           rep_.data && rep_.data->validation ? rep_.data->validation->examples : 0,
                           rep_.derived.total_steps);
  }
  start_profiler();
  trainer_->run(result_, [this](const report::StepRecord& r) { on_step(r); });
  progress_->finish();
  rep_.energy = energy_->finish(recorder_.segment_steps(result_));
  phases_->end(phase::kTraining);
  if (cadence_->evaluation_after_training(static_cast<int64_t>(result_.steps.size()))) {
    evaluate_after(result_.steps.back().step);
  }
}

void Run::on_step(const report::StepRecord& r) {
  if (profiler_) {
    if (std::optional<std::vector<metrics::ProfileEvent>> events = profiler_->step_ended(r.step)) {
      finish_profile(std::move(*events), r.step);
    }
  }
  comm_->heartbeat(r.step);
  const double now = clock_.now();
  if (r.step == first_step_) {
    recorder_.first_step_ended(now);
    phases_->end_at(phase::kFirstStep, now);
  }
  // Every few seconds: a process killed without notice is billed to its last record.
  if (now - journal_written_ >= 5.0) update_journal(report::status::kUnfinished);
  progress_->update(r, now - train_start_, now + rep_.t0_before_process_seconds);
  if (mllog_) {
    const int64_t total = rep_.derived.total_steps;
    const bool epoch_ended = r.step == total || epoch_of(r.step + 1) != r.epoch;
    mllog_->step_ended(now, r.step, r.epoch, epoch_ended, r.step < total);
  }
  dist::inject_rank_fault(o_.inject_rank_fault, o_.launch.rank, r.step);
  if (cadence_->evaluation_after(r.step)) {
    end_training_phase_at(r.step);
    evaluate_after(r.step);
  }
  double since_save = now - last_save_;
  int signal = agree_on_stop(since_save);
  std::optional<train::SaveReason> stop = cadence_->stop(r.step, signal);
  std::string saved;
  if (const std::optional<train::SaveReason> periodic =
          cadence_->periodic_save(r.step, since_save)) {
    end_training_phase_at(r.step);
    saved = save_checkpoint(r.step, *periodic, stop.has_value());
    // A stop asked for during the save: the checkpoint just written is the one to resume from,
    // rather than one more step and another save. (Several ranks agree at the next step.)
    if (!stop && !o_.launch.distributed()) {
      signal = signals_.received();
      stop = cadence_->stop(r.step, signal);
    }
  }
  if (!stop) {
    // The first signal's line promised a stop after the step in flight; after the last step
    // there is nothing left to resume, so the run ends as it would have (the same on every
    // rank: they agreed on the signal).
    if (signal != 0 && r.step == cadence_->total_steps()) {
      spdlog::warn(
          "{} came during the last step ({} of {}): nothing is left to stop; the run "
          "completes and writes its report",
          train::StopSignals::name(signal), r.step, cadence_->total_steps());
    }
    return;
  }
  if (saved.empty()) {
    end_training_phase_at(r.step);
    saved = save_checkpoint(r.step, *stop, true);
  }
  progress_->finish();
  // Every rank waits for rank 0's checkpoint before it ends: a launcher (torchrun) that takes a
  // rank's exit 4 for a failure and stops the others must not stop rank 0 in its save.
  if (o_.launch.distributed()) comm_->barrier();
  throw train::Interrupted(
      fmt::format("{} after step {} of {}; checkpoint {}; to continue, run the same command with "
                  "--resume latest",
                  *stop == train::SaveReason::kSignal
                      ? "stopped by " + train::StopSignals::name(signal)
                      : fmt::format("stopped by --stop-after-steps {}", o_.stop_after_steps),
                  r.step, cadence_->total_steps(), saved));
}

int Run::agree_on_stop(double& since_save) {
  const int signal = signals_.received();
  if (!o_.launch.distributed()) return signal;
  // One small collective per step: the largest signal number of any rank, and rank 0's time
  // since its last save (the others give -1).
  at::Tensor agreed = at::tensor({double(signal), lead() ? since_save : -1.0}, at::kDouble);
  comm_->all_reduce_max(agreed);
  since_save = agreed[1].item<double>();
  return static_cast<int>(agreed[0].item<double>());
}

report::RankRecord Run::own_rank_record() const {
  report::RankRecord r;
  r.rank = o_.launch.rank;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) r.host = host;
  r.device = backend_ ? backend_->device().str() : "";
  for (std::size_t i = 0; i < result_.steps.size(); ++i) {
    const double collective =
        i < result_.collective_seconds.size() ? result_.collective_seconds[i] : 0.0;
    r.steps.push_back({result_.steps[i].wall_seconds, collective});
    r.collective_seconds += collective;
  }
  r.collective_bytes = result_.collective_bytes;
  r.collective_calls = result_.collective_calls;
  // Over the process's life, as the report's memory section counts it (each phase restarts the
  // kernel's peak counter, so the one read now covers the last phase only).
  const report::Memory memory = device::run_memory(rep_.phases, *memory_, backend_.get());
  r.peak_rss_bytes = memory.peak_rss_bytes;
  r.shard_group_size = shard_group_size_;
  r.base_bytes = base_bytes_;
  r.gathers = result_.gather_calls;
  r.gather_bytes = result_.gather_bytes;
  r.gather_wait_seconds = result_.gather_seconds;
  r.peak_allocated_bytes = memory.peak_allocated_bytes;
  return r;
}

report::Distributed Run::distributed_header() const {
  report::Distributed d;
  d.launch = std::string(text::spelling_of(dist::kLaunchKindSpellings, o_.launch.kind));
  d.backend = comm_ ? comm_->backend_name() : "gloo";
  d.shard_base = spec_.distributed.shard_base;
  return d;
}

namespace {

// A rank record as numbers, for the Gloo all-gather of doubles: counts, the steps, then the
// host and device names a character a number (exact in fp64).
std::vector<double> encode(const report::RankRecord& r) {
  std::vector<double> v = {double(r.rank), double(r.steps.size())};
  for (const report::RankStep& s : r.steps) {
    v.push_back(s.wall_seconds);
    v.push_back(s.collective_seconds);
  }
  v.push_back(r.collective_seconds);
  v.push_back(double(r.collective_bytes));
  v.push_back(double(r.collective_calls));
  v.push_back(double(r.shard_group_size));
  for (const std::optional<int64_t>* bytes : {&r.peak_rss_bytes, &r.base_bytes}) {
    v.push_back(*bytes ? double(**bytes) : -1.0);
  }
  v.push_back(double(r.gathers));
  v.push_back(double(r.gather_bytes));
  v.push_back(r.gather_wait_seconds);
  v.push_back(r.peak_allocated_bytes ? double(*r.peak_allocated_bytes) : -1.0);
  for (const std::string* text : {&r.host, &r.device}) {
    v.push_back(double(text->size()));
    for (const char c : *text) v.push_back(double(static_cast<unsigned char>(c)));
  }
  return v;
}

report::RankRecord decode(const std::vector<double>& v) {
  report::RankRecord r;
  std::size_t i = 0;
  const auto next = [&] { return i < v.size() ? v[i++] : 0.0; };
  r.rank = static_cast<int64_t>(next());
  const auto steps = static_cast<std::size_t>(next());
  for (std::size_t k = 0; k < steps; ++k) {
    const double wall = next();
    r.steps.push_back({wall, next()});
  }
  r.collective_seconds = next();
  r.collective_bytes = static_cast<int64_t>(next());
  r.collective_calls = static_cast<int64_t>(next());
  const auto optional_bytes = [&](std::optional<int64_t>& out) {
    const double bytes = next();
    if (bytes >= 0.0) out = static_cast<int64_t>(bytes);
  };
  r.shard_group_size = static_cast<int64_t>(next());
  optional_bytes(r.peak_rss_bytes);
  optional_bytes(r.base_bytes);
  r.gathers = static_cast<int64_t>(next());
  r.gather_bytes = static_cast<int64_t>(next());
  r.gather_wait_seconds = next();
  optional_bytes(r.peak_allocated_bytes);
  for (std::string* text : {&r.host, &r.device}) {
    const auto n = static_cast<std::size_t>(next());
    for (std::size_t k = 0; k < n; ++k) text->push_back(static_cast<char>(int(next())));
  }
  return r;
}

}  // namespace

void Run::gather_rank_records() {
  if (!o_.launch.distributed()) return;
  report::Distributed d = distributed_header();
  for (const std::vector<double>& v : comm_->all_gather_values(encode(own_rank_record()))) {
    d.ranks.push_back(decode(v));
  }
  rep_.distributed = std::move(d);
  ranks_gathered_ = true;
}

void Run::end_training_phase_at(int64_t step) {
  if (step > training_split_at_) phases_->end(phase::kTraining);
  training_split_at_ = step;
}

void Run::evaluate_after(int64_t step) {
  const double start = clock_.now();
  const train::EvalResult e =
      train::evaluate(model_, validation_, *backend_, spec_.train.eval_max_batches);
  phases_->end(phase::kEvaluation);
  if (mllog_) {
    mllog_->evaluation(start, clock_.now(), step, epoch_of(step), e.loss,
                       step < rep_.derived.total_steps);
  }
  rep_.evaluations.push_back({step, e.loss, e.loss_tokens, e.batches, e.seconds});
  spdlog::info("step {}: validation loss {:.4f} over {} tokens ({} micro-batches, {:.3f} s)", step,
               e.loss, e.loss_tokens, e.batches, e.seconds);
}

std::string Run::save_checkpoint(int64_t step, train::SaveReason why, bool stopping) {
  if (!lead()) {
    // The ranks' states are equal: rank 0's checkpoint is the job's.
    last_save_ = clock_.now();
    return fmt::format(
        "{} (written by rank 0)",
        (std::filesystem::path(cp_dir_) / train::checkpoint_folder_name(step)).string());
  }
  const spec::CheckpointSpec& cp = spec_.train.checkpoint;
  const std::string reason(train::to_string(why));
  // A run that saves only on a stop signal takes the folder's lock now.
  if (!cp_lock_) {
    try {
      cp_lock_.emplace(cp_dir_);
    } catch (const train::CheckpointError& e) {
      throw train::CheckpointWriteError(e.what());
    }
    train::clean_checkpoint_leftovers(cp_dir_);
  }
  backend_->synchronize();
  const double start = clock_.now();
  train::CheckpointManifest m;
  m.created_at_utc = metrics::iso8601_utc(clock_.start_epoch_seconds() + start);
  m.reason = reason;
  m.ftbench_version = ftbench::version();
  m.spec_fingerprint = spec_fingerprint_;
  m.data_fingerprint = rep_.data->fingerprint;
  m.spec = nlohmann::ordered_json::parse(spec::canonical_job_json(spec_));
  // The segment as of this save: "interrupted" when the run stops here, "unfinished" when it
  // goes on (a process that then dies records nothing more).
  const std::vector<metrics::StepFlops> flops =
      assemble(stopping ? report::status::kInterrupted : report::status::kUnfinished);
  for (const metrics::StepFlops& f : flops) {
    m.step_flops.push_back(
        {f.lora_frozen_base, f.lora_frozen_base_recompute, f.six_n, f.six_n_recompute, f.executed});
  }
  const std::string path =
      (std::filesystem::path(cp_dir_) / train::checkpoint_folder_name(step)).string();
  // The report the checkpoint carries records this save too, measured up to the manifest's
  // write (the milliseconds of that write are only in the live report's figure).
  const train::SavedCheckpointFolder saved = train::save_checkpoint(
      cp_dir_, cp.keep_last, *trainer_, std::move(m), rep_.derived.steps_per_epoch,
      backend_->device(), [&](train::CheckpointManifest& full) {
        rep_.checkpoints.push_back({step, recorder_.segment_index(), reason, path,
                                    full.tensors_bytes, clock_.now() - start});
        full.report = report::to_json(rep_);
        rep_.checkpoints.pop_back();
      });
  const double seconds = clock_.now() - start;
  rep_.checkpoints.push_back(
      {step, recorder_.segment_index(), reason, saved.path, saved.bytes, seconds});
  journal_on_ = true;
  phases_->end(phase::kCheckpoint);  // and the journal, with this save
  last_save_ = clock_.now();
  spdlog::info("step {}: checkpoint {} ({}, {} in {:.3f} s)", step, saved.path, reason,
               report::format_bytes(saved.bytes), seconds);
  return saved.path;
}

// The trained adapter for the serving stack: PEFT's format, and merged full weights.
void Run::export_outputs() {
  if (!lead()) {
    // The adapters are bitwise equal on every rank (Trainer::run checked); a split base's
    // merged export gathers every unit from every rank while rank 0 writes it. The device waits
    // for this rank's part (on NCCL the gathers are only queued) before anything ends.
    if (!merged_dir_.empty()) model_->follow_pass(model::GatherPass::kMergedExport);
    backend_->synchronize();
    return;
  }
  try {
    if (!adapter_dir_.empty()) export_to("peft_adapter", phase::kAdapterExport, adapter_dir_);
  } catch (const std::exception&) {
    // The other ranks are in the merged export's gathers already: met, so that they end too.
    if (!merged_dir_.empty()) {
      try {
        model_->follow_pass(model::GatherPass::kMergedExport);
      } catch (const std::exception&) {
        // The peers are gone too; the export's own failure is the one to report.
      }
    }
    throw;
  }
  if (!merged_dir_.empty()) export_to("merged", phase::kMergedExport, merged_dir_);
}

void Run::export_to(const char* kind, const char* phase_name, const std::string& dir) {
  backend_->synchronize();
  const double start = clock_.now();
  const hf::ExportStats x = std::string(kind) == "peft_adapter"
                                ? hf::write_peft_adapter(model_, spec_.model, spec_.lora,
                                                         base_model_name(spec_), dir, o_.force)
                                : hf::write_merged_hf(model_, spec_.model, dir, o_.force,
                                                      5'000'000'000, spec_.model.checkpoint);
  const double seconds = clock_.now() - start;
  rep_.exports.push_back({kind, dir, x.tensors, x.bytes, seconds});
  phases_->end(phase_name);
  spdlog::info("{}: {} ({} tensors, {} in {:.3f} s)", kind, dir, x.tensors,
               report::format_bytes(x.bytes), seconds);
}

void Run::release_run_objects() {
  progress_.reset();
  trainer_.reset();
  validation_.clear();
  validation_batchers_.clear();
  validation_parts_.clear();
  batcher_.reset();
  validation_data_.reset();
  dataset_.reset();
  tokenizer_.reset();
  sharded_.reset();
  model_ = model::Llama(nullptr);
}

// The summary, then the report: the write is timed on the real file, then the file is
// rewritten with that time in it (the second write, of the same size, is not counted).
report::Report Run::finish() {
  assemble(report::status::kCompleted);
  phases_->end(phase::kSummarize);
  phases_->after_each_phase(nullptr);
  update_journal(report::status::kCompleted);
  rep_.memory = device::run_memory(rep_.phases, *memory_, backend_.get());
  record_memory_prediction();
  const double write_start = clock_.now();
  rep_.finished_at_utc = metrics::iso8601_utc(clock_.start_epoch_seconds() + write_start);
  if (!lead()) return rep_;  // rank 0 writes the job's report
  report::write_report(rep_, o_.output_path, replace_report_);
  phases_->end(phase::kReportWrite);
  assemble(report::status::kCompleted);
  report::write_report(rep_, o_.output_path, /*force=*/true);
  return rep_;
}

// Keeps what was measured: the phases that ended, the steps that finished, and why it stopped.
// The error then goes on to the command line.
plan::MemoryOptions Run::memory_options(bool fused_blocks) const {
  const at::Device device = backend_->device();
  plan::MemoryOptions options;
  options.attention = model::blocked_attention_on(device) ? plan::AttentionKernel::kBlocked
                                                          : plan::AttentionKernel::kFused;
  options.gpu = !device.is_cpu();
  options.libtorch_1 = !FTBENCH_TORCH_AT_LEAST(2, 0);
  options.fused_blocks = fused_blocks;
  // LibTorch's RMSNorm kernel (keeping its input in the model dtype) on CUDA and ROCm from 2.8.
  options.rms_norm_kernel = !device.is_cpu() && FTBENCH_TORCH_AT_LEAST(2, 8);
  const dist::Communicator* group = shard_group();
  options.shard_ranks = sharded_ != nullptr ? sharded_->ranks()
                        : group != nullptr  ? group->size()
                                            : 1;
  options.prefetched_batches = spec_.train.grad_accum_steps;
  // Before the model is built (a run that failed earlier): the spec's policy.
  if (!checkpointing_.empty()) options.activation_checkpointing = checkpointing_;
  const spec::ModelSpec& m = spec_.model;
  // The K/V heads as the run's attention reads them (the fused op's own choice).
  options.kernel_reads_shared_kv = model::fused_sdpa_reads_shared_kv(
      device, device::scalar_type_of(m.dtype), m.n_heads, m.n_kv_heads, m.dim / m.n_heads);
  return options;
}

void Run::resolve_checkpointing() {
  namespace cp = spec::choice::checkpointing;
  checkpointing_ = spec_.model.activation_checkpointing;
  if (checkpointing_ != cp::kAuto) return;
  // A resumed run keeps what auto chose for the run it continues: one policy for every step.
  if (resume_ && resume_->previous.execution &&
      !resume_->previous.execution->activation_checkpointing.empty()) {
    checkpointing_ = resume_->previous.execution->activation_checkpointing;
    checkpointing_choice_ = resume_->previous.execution->checkpointing_choice;
    spdlog::info("model.activation_checkpointing auto: {}, as the run it resumes chose",
                 checkpointing_);
    return;
  }
  const at::Device device = backend_->device();
  // A GPU: its memory less the plan's headroom, with the plan's device overheads. A CPU: the
  // host's physical memory (or the address-space limit, when lower) less the same headroom.
  std::optional<double> total;
  if (!device.is_cpu()) {
    if (const std::optional<int64_t> bytes = backend_->memory().device_total_bytes) {
      total = static_cast<double>(*bytes);
    }
  } else {
    const int64_t host = device::host_info().memory_bytes;
    if (host > 0) total = static_cast<double>(host);
    if (const std::optional<uint64_t> limit = device::address_space_limit()) {
      // Under an address-space limit, what the process has mapped already (LibTorch, its
      // libraries, thread stacks: about 1 GB) is not there for tensors.
      double room = static_cast<double>(*limit);
      if (std::ifstream statm("/proc/self/statm"); statm) {
        double pages = 0.0;
        if (statm >> pages) room -= pages * static_cast<double>(sysconf(_SC_PAGE_SIZE));
      }
      room = std::max(room, 0.0);
      total = std::min(total.value_or(room), room);
    }
  }
  if (!total) {
    checkpointing_ = cp::kFull;
    spdlog::info(
        "model.activation_checkpointing auto: full (the device's memory is unknown, so "
        "the least memory)");
    return;
  }
  plan::MemoryOptions options = memory_options(fused_blocks_from_environment());
  options.activation_checkpointing.reset();
  const plan::DeviceOverheads overheads = plan::default_gpu_overheads();
  // The composite forms (FTBENCH_FUSED_BLOCKS=0) have no selective cache points.
  const plan::CheckpointingChoice choice = plan::choose_checkpointing(
      spec_, options, device.is_cpu() ? nullptr : &overheads, *total * (1.0 - plan::kHeadroom),
      /*selective_allowed=*/options.fused_blocks);
  checkpointing_ = choice.policy;
  report::CheckpointingChoice record;
  record.usable_bytes = static_cast<int64_t>(std::llround(choice.usable_bytes));
  record.fits = choice.fits;
  for (const plan::PolicyEstimate& c : choice.candidates) {
    record.needed_bytes.push_back({c.policy, static_cast<int64_t>(std::llround(c.needed_bytes))});
  }
  checkpointing_choice_ = record;
  spdlog::info("model.activation_checkpointing auto: {}", choice.reason);
}

void Run::record_memory_prediction() {
  if (!backend_) return;
  try {
    const plan::MemoryOptions options =
        memory_options(!rep_.execution || rep_.execution->fused_blocks);
    const plan::MemoryEstimate estimate = plan::estimate_memory(spec_, options);
    rep_.memory.predicted_peak_bytes = static_cast<int64_t>(std::llround(estimate.peak_bytes));
    rep_.memory.prediction_basis = fmt::format(
        "ftbench plan: {} attention{}, dropout masks {}, peak at {}",
        plan::to_string(options.attention),
        !estimate.kv_heads_repeated   ? ""
        : *estimate.kv_heads_repeated ? " on repeated K/V heads"
                                      : " reading the shared K/V heads",
        options.gpu || options.fused_blocks ? "1 byte" : "in the input dtype", estimate.peak_at);
  } catch (const std::exception& e) {
    rep_.memory.prediction_basis = std::string("no prediction: ") + e.what();
  }
}

void Run::record_failure(const std::exception& e) {
  const bool interrupted = dynamic_cast<const train::Interrupted*>(&e) != nullptr;
  const bool diverged = dynamic_cast<const train::Diverged*>(&e) != nullptr;
  rep_.error = dynamic_cast<const std::bad_alloc*>(&e) != nullptr
                   ? "out of memory: an allocation failed (std::bad_alloc)"
                   : first_line(e.what());
  const std::string status = interrupted ? report::status::kInterrupted
                             : diverged  ? report::status::kDiverged
                                         : report::status::kFailed;
  if (!rep_.energy) rep_.energy = energy_->finish(recorder_.segment_steps(result_));
  phases_->after_each_phase(nullptr);
  phases_->end(interrupted ? phase::kInterrupted : phase::kFailed);
  assemble(status);
  update_journal(status, &rep_.segments.back());
  // A checkpoint that cannot be used was found before any training: no report of a run that
  // never started is left behind, and an existing one is kept. A resume that fails leaves the
  // interrupted run's report as it was (its own time is in the segment journal, billed by the
  // next resume).
  const bool keep_interrupted_report =
      resume_ && !interrupted && old_report_ && old_report_->status == report::status::kInterrupted;
  if (keep_interrupted_report) {
    spdlog::warn("{} is kept as the interrupted run left it; this attempt is segment {} in {}",
                 o_.output_path, recorder_.segment_index(),
                 (std::filesystem::path(cp_dir_) / train::kSegmentJournal).string());
  }
  // A launch that is not one job (dist::LaunchError) is bad input, found before training: no
  // report either.
  if (!lead() || keep_interrupted_report ||
      dynamic_cast<const train::CheckpointError*>(&e) != nullptr ||
      dynamic_cast<const dist::LaunchError*>(&e) != nullptr ||
      dynamic_cast<const hf::HfCheckpointError*>(&e) != nullptr) {
    return;
  }
  try {
    report::write_report(rep_, o_.output_path, replace_report_);
  } catch (const std::bad_alloc&) {
    spdlog::error("{}: the failed run's report was not written: out of memory", o_.output_path);
  } catch (const std::exception& write_error) {
    // The run's own error is the one to report; the lost report is logged (a full disk often
    // fails both).
    spdlog::error("{}", write_error.what());
  }
}

// The trainer's threads once the backend is up.
std::optional<int64_t> Run::intra_op_threads() const {
  if (!backend_) return std::nullopt;
  return at::get_num_threads();
}

// This process's record among the run's segments, as of now.
report::Segment Run::current_segment(const std::string& status) const {
  return recorder_.segment(status, result_, intra_op_threads());
}

// Everything measured so far into the report (Recorder::assemble), for the final report, a
// failed or interrupted one, and the partial report a checkpoint carries. Returns every step's
// FLOPs.
std::vector<metrics::StepFlops> Run::assemble(const std::string& status) {
  if (backend_) resolve_peak(o_, backend_->info(), summary_options_);
  std::vector<metrics::StepFlops> flops = recorder_.assemble(
      status, result_, summary_options_,
      {device::describe_environment(backend_.get()),
       device::run_memory(rep_.phases, *memory_, backend_.get()), intra_op_threads()});
  if (backend_) record_memory_prediction();
  if (o_.launch.distributed()) {
    // A run that ends before the ranks' records were gathered (failed, interrupted) has this
    // rank's own.
    if (!ranks_gathered_) {
      report::Distributed d = distributed_header();
      d.ranks.push_back(own_rank_record());
      rep_.distributed = std::move(d);
    }
    metrics::summarize_ranks(*rep_.distributed, spec_.train.timing_warmup_steps,
                             rep_.summary.tokens_per_second_real, o_.launch.world_size);
  }
  return flops;
}

// `recorded`: this segment as the report records it (so that the two agree), else as of now.
void Run::update_journal(const std::string& status, const report::Segment* recorded) {
  if (!journal_on_ || journal_failed_) return;
  const std::vector<report::Segment> all =
      recorder_.all_segments(recorded != nullptr ? *recorded : current_segment(status));
  try {
    train::write_segment_journal(cp_dir_, spec_fingerprint_, all);
    journal_written_ = clock_.now();
  } catch (const train::CheckpointWriteError& e) {
    journal_failed_ = true;  // said once; the run goes on
    spdlog::warn("{} (a later --resume may not bill this process)", e.what());
  }
}

}  // namespace ftbench::run::detail
