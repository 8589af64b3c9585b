#include "ftbench/run/runner.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ftbench/data/batcher.h"
#include "ftbench/data/data_from_spec.h"
#include "ftbench/data/file_dataset.h"
#include "ftbench/data/fingerprint.h"
#include "ftbench/data/load_tokenizer.h"
#include "ftbench/data/slice_dataset.h"
#include "ftbench/data/synthetic_dataset.h"
#include "ftbench/device/backend.h"
#include "ftbench/device/energy_meter.h"
#include "ftbench/device/environment.h"
#include "ftbench/device/memory_meter.h"
#include "ftbench/hf/hf_load.h"
#include "ftbench/hf/peft_adapter.h"
#include "ftbench/io/output_file.h"
#include "ftbench/metrics/gpu_peaks.h"
#include "ftbench/metrics/run_summary.h"
#include "ftbench/metrics/stats.h"
#include "ftbench/model/llama.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/report/phase_names.h"
#include "ftbench/report/report_io.h"
#include "ftbench/run/outputs.h"
#include "ftbench/run/phase_timer.h"
#include "ftbench/run/progress.h"
#include "ftbench/run/resume_point.h"
#include "ftbench/spec/canonical.h"
#include "ftbench/spec/derived.h"
#include "ftbench/spec/spec_error.h"
#include "ftbench/text/messages.h"
#include "ftbench/train/checkpoint.h"
#include "ftbench/train/stop_signals.h"
#include "ftbench/train/trainer.h"
#include "ftbench/version.h"

namespace ftbench::run {
namespace {

namespace phase = report::phase;

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

// The second MFU denominator: the measured GEMM peak for the run's dtype, when the measurement
// was made on this run's device (same backend and device name); otherwise none, and the report
// says why.
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

// Example lengths and the share of tokens without loss, for any data set; the file reader's own
// counts (records, skipped, dropped, truncated) are filled in by the caller for file data.
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

// What the exported adapter names as its base: the checkpoint folder as the spec gives it; ""
// (null in adapter_config.json) for random weights, which no loader could fetch.
std::string base_model_name(const spec::RunSpec& spec) { return spec.model.checkpoint; }

// The first line of an error message (LibTorch appends a backtrace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

// One `ftbench run` process: the objects of the run, built phase by phase, and the report they
// fill. Constructed with the checks that cost no machine time (the checkpoint folder, the
// resume point, the outputs); execute() then runs the phases in order, each ended and metered
// by the phase timer, and writes the report. Not copyable; used from the run's thread.
class Run {
 public:
  Run(const RunOptions& o, const metrics::ProcessClock& clock, const train::StopSignals& signals);
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  report::Report execute();

 private:
  // Before any phase.
  void claim_checkpoint_folder();
  void read_resume_point();
  void check_outputs();
  void start_report();
  // The set-up phases, in order.
  void init_backend();
  void build_model();
  void load_weights();
  void prepare_data();
  void prepare_validation(const data::BatcherOptions& train_options);
  void load_checkpoint();
  // The step loop and what runs between steps.
  void train();
  void on_step(const report::StepRecord& r);
  void end_training_phase_at(int64_t step);
  void evaluate_after(int64_t step);
  std::string save_checkpoint(int64_t step, const std::string& reason, bool stopping);
  // After training.
  void export_outputs();
  void export_to(const char* kind, const char* phase_name, const std::string& dir);
  report::Report finish();
  void record_failure(const std::exception& e);
  // The objects the phases built, in the reverse of their order, when training is over.
  void release_run_objects();
  // Shared by the phases.
  void end_setup_phase(const char* name);
  void stop_if_asked(const char* phase_name) const;
  report::Segment current_segment(const std::string& status) const;
  std::vector<report::StepRecord> segment_steps() const;
  std::vector<metrics::StepFlops> assemble(const std::string& status);
  void update_journal(const std::string& status, const report::Segment* recorded = nullptr);

  const RunOptions& o_;
  const spec::RunSpec& spec_;
  const metrics::ProcessClock& clock_;
  const train::StopSignals& signals_;
  const std::string spec_fingerprint_;
  const std::string cp_dir_;
  const std::string adapter_dir_;
  const std::string merged_dir_;
  // The checkpoint folder is this run's alone while it runs (a second run writing into it is
  // refused at once, not at a save). A run that saves only on a stop signal takes it then.
  std::optional<train::CheckpointDirLock> cp_lock_;
  std::optional<ResumePoint> resume_;
  std::vector<report::Segment> previous_segments_;
  std::vector<metrics::StepFlops> previous_flops_;
  std::optional<report::Report> old_report_;
  bool replace_report_ = false;

  report::Report rep_;
  int64_t segment_index_ = 1;
  model::ParamCounts params_;
  std::optional<PhaseTimer> phases_;
  std::optional<device::MemoryMeter> memory_;
  metrics::SummaryOptions summary_options_;
  // Filled step by step, so that a run that fails part-way still reports what it measured.
  train::TrainResult result_;
  std::unique_ptr<device::Backend> backend_;
  std::optional<device::EnergyMeter> energy_;
  double first_step_end_ = 0.0;
  // The segment journal next to the checkpoints (train/checkpoint_files.h): kept from the
  // start by a resumed run and from its first save by a fresh one (before, there is nothing to
  // resume from), updated at every phase's end, every save, every minute of training and at
  // the end, so that the next resume bills this process whatever becomes of it.
  bool journal_on_ = false;
  bool journal_failed_ = false;
  double journal_written_ = 0.0;

  // Built by the set-up phases, released in reverse order after training.
  model::Llama model_{nullptr};
  std::unique_ptr<data::Tokenizer> tokenizer_;
  std::unique_ptr<data::Dataset> dataset_;
  std::unique_ptr<data::FileDataset> validation_data_;  // null without validation data
  std::unique_ptr<data::Batcher> batcher_;
  // The validation set: batched like the training data but in file order, unshuffled.
  std::vector<std::unique_ptr<data::Dataset>> validation_parts_;
  std::vector<std::unique_ptr<data::Batcher>> validation_batchers_;
  std::vector<data::Batcher*> validation_;
  std::unique_ptr<train::Trainer> trainer_;
  std::unique_ptr<Progress> progress_;

  // The step loop's state.
  int64_t first_step_ = 1;
  int64_t training_split_at_ = 1;  // the step whose end last ended a phase
  double last_save_ = 0.0;
  double train_start_ = 0.0;
};

Run::Run(const RunOptions& o, const metrics::ProcessClock& clock, const train::StopSignals& signals)
    : o_(o),
      spec_(o.spec),
      clock_(clock),
      signals_(signals),
      spec_fingerprint_(spec::fingerprint(o.spec)),
      cp_dir_(checkpoint_dir(o.spec)),
      adapter_dir_(adapter_export_dir(o.spec)),
      merged_dir_(merged_export_dir(o.spec)) {
  claim_checkpoint_folder();
  read_resume_point();
  check_outputs();
  start_report();
}

// Whatever a killed process left in the checkpoint folder is cleaned first.
void Run::claim_checkpoint_folder() {
  const spec::CheckpointSpec& cp = spec_.train.checkpoint;
  const bool checkpointing = !o_.resume.empty() || cp.every_steps > 0 || cp.every_minutes > 0.0;
  if (checkpointing) {
    cp_lock_.emplace(cp_dir_);
    for (const std::string& cleaned : train::clean_checkpoint_leftovers(cp_dir_)) {
      spdlog::warn("{}: {}", cp_dir_, cleaned);
    }
    check_folder_writable(cp_dir_, "train.checkpoint.dir");
  } else if (const std::string why = folder_not_writable(cp_dir_); !why.empty()) {
    spdlog::warn("train.checkpoint.dir {}: {}: a stop signal could not save a checkpoint", cp_dir_,
                 why);
  } else if (std::error_code ec; std::filesystem::is_directory(cp_dir_, ec)) {
    // Held by another run now: this one could not save on a stop signal either.
    try {
      const train::CheckpointDirLock probe(cp_dir_);
    } catch (const std::exception& e) {
      spdlog::warn("{}: a stop signal could not save a checkpoint", e.what());
    }
  }
}

// A resumed run's checkpoint is read and checked first: a wrong one costs no machine time.
void Run::read_resume_point() {
  if (o_.resume.empty()) return;
  resume_ = find_resume_point(spec_, o_.resume, cp_dir_);
  std::optional<std::vector<report::Segment>> journal;
  try {
    journal = train::read_segment_journal(cp_dir_, spec_fingerprint_,
                                          resume_->previous.segments.front().started_at_utc);
  } catch (const train::CheckpointError& e) {
    throw train::CheckpointError(std::string(e.what()) +
                                 "; the segment journal is damaged: remove it to resume without "
                                 "the processes it records (they are then not billed)");
  }
  previous_segments_ =
      train::segments_to_resume(resume_->previous.segments, journal, resume_->manifest.step);
}

// The report in the way: the one of the run being resumed may be replaced, and so may one of a
// run that failed (a corrected rerun needs no --force); a completed or interrupted run's is
// kept unless --force. The export folders are checked now too: a run must not train for hours
// and then find it may not write its adapter.
void Run::check_outputs() {
  old_report_ = existing_report(o_.output_path);
  const bool old_report_failed = old_report_ && old_report_->status == "failed";
  replace_report_ = o_.force || old_report_failed ||
                    (resume_ && may_replace_report(old_report_, spec_fingerprint_));
  // What a process killed while writing the report left beside it.
  for (const std::string& removed : io::remove_stale_temporary_files(o_.output_path)) {
    spdlog::warn("removed {}, left by a process that did not finish writing the report", removed);
  }
  io::check_writable(o_.output_path, replace_report_);
  for (const auto& [key, dir] :
       {std::pair<const char*, std::string>{"output.adapter", adapter_dir_},
        {"output.merged", merged_dir_}}) {
    if (!dir.empty()) check_export_writable(dir, key, o_.force);
  }
}

// The report's fixed part, the earlier segments of a resumed run, the launch and spec_load
// phases, and the meters.
void Run::start_report() {
  rep_.run_name = spec_.output.name;
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
  if (o_.t0_epoch_seconds && !previous_segments_.empty()) {
    const report::Segment& last = previous_segments_.back();
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
  // Earlier segments of a resumed run: their steps, evaluations, checkpoints and segments.
  if (resume_) {
    rep_.evaluations = resume_->previous.evaluations;
    rep_.segments = previous_segments_;
    rep_.checkpoints = resume_->previous.checkpoints;
    for (const std::vector<double>& f : resume_->manifest.step_flops) {
      previous_flops_.push_back({f[0], f[1], f[2], f[3]});
    }
  }
  segment_index_ = static_cast<int64_t>(rep_.segments.size()) + 1;

  params_ = model::count_parameters(spec_.model, spec_.lora);
  // A data file's counts are known once it is read (data_prepare); until then none.
  const spec::DerivedCounts derived = spec_.data.source == "file"
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
  summary_options_.loss_window = spec_.train.loss_window;
  summary_options_.recompute = spec_.model.activation_checkpointing;
  rep_.gemm = o_.gemm;
  result_.micro_batch_size = spec_.train.micro_batch_size;
  result_.grad_accum_steps = spec_.train.grad_accum_steps;
  energy_.emplace(spec_.backend, segment_index_);

  journal_on_ = resume_.has_value();
  phases_->after_each_phase([this] { update_journal("unfinished"); });
  // A resumed process is in the journal from now on, whatever becomes of it.
  update_journal("unfinished");
}

report::Report Run::execute() {
  try {
    // A stop asked for since the process started (while LibTorch loaded, while the spec was
    // read) ends the run here, with its report: that time was rented too.
    stop_if_asked(phase::kSpecLoad);
    init_backend();
    end_setup_phase(phase::kBackendInit);
    build_model();
    end_setup_phase(phase::kModelBuild);
    load_weights();
    end_setup_phase(phase::kWeightLoad);
    prepare_data();
    end_setup_phase(phase::kDataPrepare);
    trainer_ = std::make_unique<train::Trainer>(spec_, model_, *batcher_, *backend_, o_.inject_oom);
    if (resume_) {
      load_checkpoint();
      phases_->end(phase::kCheckpointLoad);
      spdlog::info("resuming after step {} from {}", resume_->manifest.step, resume_->folder);
    }
    train();
    export_outputs();
  } catch (const std::exception& e) {
    release_run_objects();
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
        fmt::format("stopped by {} during set-up (after {}), before any step of this process{}",
                    train::StopSignals::name(signal), phase_name,
                    resume_ ? "; resume again from " + resume_->folder : std::string()));
  }
}

// Files the run needs must be there before any machine time goes into the model (an 8B model
// takes minutes to build); their content is checked when they are read.
void check_needed_files(const spec::RunSpec& spec) {
  std::vector<std::pair<const char*, std::string>> needed;
  if (!spec.model.checkpoint.empty())
    needed.emplace_back("model.checkpoint", spec.model.checkpoint);
  if (spec.data.tokenizer != "byte" && spec.data.tokenizer != "none") {
    needed.emplace_back("data.tokenizer", spec.data.tokenizer);
  }
  if (spec.data.source == "file") needed.emplace_back("data.path", spec.data.path);
  if (!spec.data.validation_path.empty()) {
    needed.emplace_back("data.validation_path", spec.data.validation_path);
  }
  for (const auto& [key, path] : needed) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      throw spec::SpecError(
          {{spec.source_path, key, 0, fmt::format("{}: no such file or folder", path)}});
    }
  }
}

void Run::init_backend() {
  check_needed_files(spec_);
  backend_ = std::make_unique<device::Backend>(spec_.backend);
  memory_->set_backend(backend_.get());
  backend_->check_dtype_supported(spec_.model.dtype);
  if (resume_) {
    train::check_device_generator_state(resume_->folder, resume_->manifest, backend_->device());
    warn_if_not_bit_exact(resume_->previous.environment, backend_->info(), backend_->device());
  }
  resolve_gemm_peak(o_, backend_->info(), summary_options_);
  at::manual_seed(spec_.train.seed);
}

void Run::build_model() {
  model_ = model::Llama(spec_.model, spec_.lora, spec_.data.seq_len, backend_->device());
  backend_->synchronize();
}

void Run::load_weights() {
  if (spec_.model.checkpoint.empty()) {
    model_->init_random();
    rep_.weights = report::WeightsInfo{"random", "", "", 0, 0, 0, 0.0, 0.0, ""};
    backend_->synchronize();
    return;
  }
  // Base weights from the checkpoint, file by file straight into the model's dtype and
  // device; the adapters start as a fresh LoRA adapter does.
  model_->init_adapters();
  backend_->synchronize();
  const double load_start = clock_.now();
  const hf::HfLoadStats loaded = hf::load_hf_weights(model_, spec_.model.checkpoint, spec_.model);
  backend_->synchronize();
  const double seconds = clock_.now() - load_start;
  rep_.weights =
      report::WeightsInfo{"checkpoint",      spec_.model.checkpoint,
                          "safetensors",     loaded.files,
                          loaded.tensors,    loaded.bytes,
                          seconds,           seconds > 0.0 ? double(loaded.bytes) / seconds : 0.0,
                          loaded.fingerprint};
  spdlog::info("weights: {} tensors, {:.1f} MB from {} file{} of {} in {:.3f} s ({:.0f} MB/s)",
               loaded.tensors, double(loaded.bytes) / 1e6, loaded.files,
               loaded.files == 1 ? "" : "s", spec_.model.checkpoint, seconds,
               seconds > 0.0 ? double(loaded.bytes) / seconds / 1e6 : 0.0);
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
}

// The tokenizer and the data set. A data file's size is known only now: the step counts are
// derived again, from the batcher's micro-batches.
void Run::prepare_data() {
  tokenizer_ = data::tokenizer_for(spec_);
  data::check_tokenizer_fits(spec_, *tokenizer_);
  std::optional<data::DataFileStats> file_stats;
  std::string file_format;
  if (spec_.data.source == "file") {
    const data::DataFileOptions fo = data::data_file_options(spec_);
    data::ValidationOptions vo;
    vo.fraction = spec_.data.validation_fraction;
    vo.path = spec_.data.validation_path;
    data::TrainValidationData split = data::load_train_validation(fo, vo, *tokenizer_);
    std::unique_ptr<data::FileDataset> file = std::move(split.train);
    validation_data_ = std::move(split.validation);
    file_stats = file->stats();
    file_format = file->format();
    dataset_ = std::move(file);
  } else {
    dataset_ = std::make_unique<data::SyntheticDataset>(spec_.data, *tokenizer_);
  }
  const data::Dataset& dataset = *dataset_;
  data::BatcherOptions bo;
  bo.micro_batch_size = spec_.train.micro_batch_size;
  bo.seq_len = spec_.data.seq_len;
  bo.padding = spec_.data.padding == "pack"         ? data::Padding::kPack
               : spec_.data.padding == "max_length" ? data::Padding::kMaxLength
                                                    : data::Padding::kLongest;
  bo.shuffle = spec_.data.shuffle;
  bo.train_on_input = spec_.data.train_on_input;
  bo.seed = spec_.data.seed;
  bo.pad_id = tokenizer_->pad_id();
  batcher_ = std::make_unique<data::Batcher>(dataset, bo, backend_->device());
  // The step counts the run will make: from the data set's real size and, with packing, from
  // the packed rows.
  const spec::DerivedCounts counts =
      spec::derive_counts_from_batches(spec_, batcher_->batches_per_epoch());
  if (counts.steps_per_epoch < 1) {
    throw spec::SpecError(
        {{spec_.source_path, spec_.data.source == "file" ? "data.path" : "data.num_examples", 0,
          fmt::format("{} examples make {} micro-batches{}: 0 optimizer steps with "
                      "micro_batch_size {} x grad_accum_steps {}",
                      dataset.size(), batcher_->batches_per_epoch(),
                      spec_.data.padding == "pack" ? " of packed rows" : "",
                      spec_.train.micro_batch_size, spec_.train.grad_accum_steps)}});
  }
  rep_.derived = {counts.effective_batch, counts.micro_batches_per_epoch, counts.steps_per_epoch,
                  counts.total_steps, counts.max_tokens_per_step};
  const data::DataStats data_stats = data::fingerprint(dataset, spec_.data.train_on_input);
  rep_.data = report::DataInfo{dataset.description(), data_stats.examples, data_stats.tokens,
                               data_stats.loss_tokens, data_stats.fingerprint};
  report::DataStatistics statistics = length_statistics(dataset, data_stats, spec_.data.seq_len);
  if (file_stats) {
    statistics.format = file_format;
    statistics.records = file_stats->records;
    statistics.skipped_bad = file_stats->skipped_bad;
    statistics.dropped_too_long = file_stats->dropped_too_long;
    statistics.truncated = file_stats->truncated;
  }
  rep_.data->statistics = statistics;
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
  if (spec_.data.padding != "pack" && covered < n) {
    validation_parts_.push_back(
        std::make_unique<data::SliceDataset>(*validation_data_, covered, n - covered));
    data::BatcherOptions tail = vbo;
    tail.micro_batch_size = n - covered;
    validation_batchers_.push_back(
        std::make_unique<data::Batcher>(*validation_parts_.back(), tail, backend_->device()));
  }
  for (const auto& b : validation_batchers_) validation_.push_back(b.get());
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
    throw train::CheckpointError(
        fmt::format("{}: saved after step {}, the run has {} steps: "
                    "nothing left to run",
                    resume_->folder, resume_->manifest.step, rep_.derived.total_steps));
  }
  train::ResumeState state =
      train::load_checkpoint(resume_->folder, resume_->manifest, model_, backend_->device());
  // The earlier segments' fallbacks, from the partial report the checkpoint carries, are the
  // trainer's now (TrainResult::fallbacks): the resumed report lists them all.
  if (resume_->previous.batching) state.fallbacks = resume_->previous.batching->fallbacks;
  trainer_->resume(std::move(state));
  backend_->synchronize();
}

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
  progress_ = std::make_unique<Progress>(rep_.derived.total_steps, spec_.output.progress,
                                         spec_.output.log_every_steps);
  last_save_ = clock_.now();
  energy_->start(*backend_, clock_);
  train_start_ = clock_.now();
  trainer_->run(result_, [this](const report::StepRecord& r) { on_step(r); });
  progress_->finish();
  rep_.energy = energy_->finish(segment_steps());
  phases_->end(phase::kTraining);
  if (!validation_.empty() && !result_.steps.empty()) evaluate_after(result_.steps.back().step);
}

void Run::on_step(const report::StepRecord& r) {
  const int64_t total_steps = rep_.derived.total_steps;
  const spec::CheckpointSpec& cp = spec_.train.checkpoint;
  const double now = clock_.now();
  if (r.step == first_step_) {
    first_step_end_ = now;
    phases_->end_at(phase::kFirstStep, now);
  }
  if (now - journal_written_ >= 60.0) update_journal("unfinished");
  progress_->update(r, now - train_start_);
  // The pass after the last step follows the training phase (train()).
  if (!validation_.empty() && r.step < total_steps &&
      train::evaluation_due(r.step, total_steps, spec_.train.eval_every_steps)) {
    end_training_phase_at(r.step);
    evaluate_after(r.step);
  }
  // Periodic saves include the last step (the trained adapters are then on disk); a stop
  // request at the last step is moot.
  int signal = signals_.received();
  bool stopping = r.step < total_steps &&
                  (signal != 0 || (o_.stop_after_steps > 0 && r.step == o_.stop_after_steps));
  std::string saved;
  const bool by_steps = cp.every_steps > 0 && r.step % cp.every_steps == 0;
  const bool by_time = cp.every_minutes > 0.0 && now - last_save_ >= cp.every_minutes * 60.0;
  if (by_steps || by_time) {
    end_training_phase_at(r.step);
    saved = save_checkpoint(r.step, by_steps ? "every_steps" : "every_minutes", stopping);
    // A stop asked for during the save: the checkpoint just written is the one to resume from,
    // rather than one more step and another save.
    if (!stopping && r.step < total_steps && (signal = signals_.received()) != 0) {
      stopping = true;
    }
  }
  if (!stopping) return;
  if (saved.empty()) {
    end_training_phase_at(r.step);
    saved = save_checkpoint(r.step, signal != 0 ? "signal" : "stop_after_steps", true);
  }
  progress_->finish();
  throw train::Interrupted(fmt::format(
      "{} after step {} of {}; checkpoint {}; to continue, run the same command with "
      "--resume latest",
      signal != 0 ? "stopped by " + train::StopSignals::name(signal)
                  : fmt::format("stopped by --stop-after-steps {}", o_.stop_after_steps),
      r.step, total_steps, saved));
}

void Run::end_training_phase_at(int64_t step) {
  if (step > training_split_at_) phases_->end(phase::kTraining);
  training_split_at_ = step;
}

void Run::evaluate_after(int64_t step) {
  const train::EvalResult e =
      train::evaluate(model_, validation_, *backend_, spec_.train.eval_max_batches);
  phases_->end(phase::kEvaluation);
  rep_.evaluations.push_back({step, e.loss, e.loss_tokens, e.batches, e.seconds});
  spdlog::info("step {}: validation loss {:.4f} over {} tokens ({} micro-batches, {:.3f} s)", step,
               e.loss, e.loss_tokens, e.batches, e.seconds);
}

std::string Run::save_checkpoint(int64_t step, const std::string& reason, bool stopping) {
  const spec::CheckpointSpec& cp = spec_.train.checkpoint;
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
  const std::vector<metrics::StepFlops> flops = assemble(stopping ? "interrupted" : "unfinished");
  for (const metrics::StepFlops& f : flops) {
    m.step_flops.push_back(
        {f.lora_frozen_base, f.lora_frozen_base_recompute, f.six_n, f.six_n_recompute});
  }
  const std::string path =
      (std::filesystem::path(cp_dir_) / train::checkpoint_folder_name(step)).string();
  // The report the checkpoint carries records this save too, measured up to the manifest's
  // write (the milliseconds of that write are only in the live report's figure).
  const train::SavedCheckpointFolder saved = train::save_checkpoint(
      cp_dir_, cp.keep_last, *trainer_, std::move(m), rep_.derived.steps_per_epoch,
      backend_->device(), [&](train::CheckpointManifest& full) {
        rep_.checkpoints.push_back(
            {step, segment_index_, reason, path, full.tensors_bytes, clock_.now() - start});
        full.report = report::to_json(rep_);
        rep_.checkpoints.pop_back();
      });
  const double seconds = clock_.now() - start;
  rep_.checkpoints.push_back({step, segment_index_, reason, saved.path, saved.bytes, seconds});
  journal_on_ = true;
  phases_->end(phase::kCheckpoint);  // and the journal, with this save
  last_save_ = clock_.now();
  spdlog::info("step {}: checkpoint {} ({}, {:.1f} MB in {:.3f} s)", step, saved.path, reason,
               double(saved.bytes) / 1e6, seconds);
  return saved.path;
}

// The trained adapter for the serving stack: PEFT's format, and merged full weights.
void Run::export_outputs() {
  if (!adapter_dir_.empty()) export_to("peft_adapter", phase::kAdapterExport, adapter_dir_);
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
  spdlog::info("{}: {} ({} tensors, {:.1f} MB in {:.3f} s)", kind, dir, x.tensors,
               double(x.bytes) / 1e6, seconds);
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
  model_ = model::Llama(nullptr);
}

// The summary, then the report: the write is timed on the real file, then the file is
// rewritten with that time in it (the second write, of the same size, is not counted).
report::Report Run::finish() {
  assemble("completed");
  phases_->end(phase::kSummarize);
  phases_->after_each_phase(nullptr);
  update_journal("completed");
  rep_.memory = device::run_memory(rep_.phases, *memory_, backend_.get());
  const double write_start = clock_.now();
  rep_.finished_at_utc = metrics::iso8601_utc(clock_.start_epoch_seconds() + write_start);
  report::write_report(rep_, o_.output_path, replace_report_);
  phases_->end(phase::kReportWrite);
  assemble("completed");
  report::write_report(rep_, o_.output_path, /*force=*/true);
  return rep_;
}

// Keeps what was measured: the phases that ended, the steps that finished, and why it stopped.
// The error then goes on to the command line.
void Run::record_failure(const std::exception& e) {
  const bool interrupted = dynamic_cast<const train::Interrupted*>(&e) != nullptr;
  const bool diverged = dynamic_cast<const train::Diverged*>(&e) != nullptr;
  rep_.error = first_line(e.what());
  const std::string status = interrupted ? "interrupted" : diverged ? "diverged" : "failed";
  if (!rep_.energy) rep_.energy = energy_->finish(segment_steps());
  phases_->after_each_phase(nullptr);
  phases_->end(interrupted ? phase::kInterrupted : phase::kFailed);
  assemble(status);
  update_journal(status, &rep_.segments.back());
  // A checkpoint that cannot be used was found before any training: no report of a run that
  // never started is left behind, and an existing one is kept. A resume that fails leaves the
  // interrupted run's report as it was (its own time is in the segment journal, billed by the
  // next resume).
  const bool keep_interrupted_report =
      resume_ && !interrupted && old_report_ && old_report_->status == "interrupted";
  if (keep_interrupted_report) {
    spdlog::warn("{} is kept as the interrupted run left it; this attempt is segment {} in {}",
                 o_.output_path, segment_index_,
                 (std::filesystem::path(cp_dir_) / train::kSegmentJournal).string());
  }
  if (keep_interrupted_report || dynamic_cast<const train::CheckpointError*>(&e) != nullptr ||
      dynamic_cast<const hf::HfCheckpointError*>(&e) != nullptr) {
    return;
  }
  try {
    report::write_report(rep_, o_.output_path, replace_report_);
  } catch (const std::exception& write_error) {
    // The run's own error is the one to report; the lost report is logged (a full disk often
    // fails both).
    spdlog::error("{}", write_error.what());
  }
}

// This process's record among the run's segments, as of now.
report::Segment Run::current_segment(const std::string& status) const {
  const double now = clock_.now();
  report::Segment g;
  g.index = segment_index_;
  g.status = status;
  g.started_at_utc = rep_.started_at_utc;
  g.finished_at_utc = metrics::iso8601_utc(clock_.start_epoch_seconds() + now);
  if (!result_.steps.empty()) {
    g.first_step = result_.steps.front().step;
    g.last_step = result_.steps.back().step;
  }
  g.run_seconds = rep_.t0_before_process_seconds + now;
  g.time_to_first_step_seconds =
      first_step_end_ > 0.0 ? first_step_end_ + rep_.t0_before_process_seconds : 0.0;
  g.resumed_from = resume_ ? resume_->folder : "";
  if (backend_) g.intra_op_threads = at::get_num_threads();
  return g;
}

// This segment's steps as the report numbers them, for the energy per step and token.
std::vector<report::StepRecord> Run::segment_steps() const {
  std::vector<report::StepRecord> out = result_.steps;
  for (report::StepRecord& s : out) s.segment = segment_index_;
  return out;
}

// Everything measured so far into the report, for the final report, a failed or interrupted
// one, and the partial report a checkpoint carries: the earlier segments' steps and this
// one's, the summary over them, and this segment's record. Returns every step's FLOPs.
std::vector<metrics::StepFlops> Run::assemble(const std::string& status) {
  rep_.status = status;
  rep_.time_to_first_step_seconds =
      first_step_end_ > 0.0 ? first_step_end_ + rep_.t0_before_process_seconds : 0.0;
  rep_.steps = resume_ ? resume_->previous.steps : std::vector<report::StepRecord>{};
  std::vector<metrics::StepFlops> flops = previous_flops_;
  for (report::StepRecord s : result_.steps) {
    s.segment = segment_index_;
    rep_.steps.push_back(s);
  }
  flops.insert(flops.end(), result_.flops.begin(), result_.flops.end());
  rep_.batching =
      report::Batching{result_.micro_batch_size, result_.grad_accum_steps, result_.fallbacks};
  if (backend_) resolve_peak(o_, backend_->info(), summary_options_);
  rep_.summary = metrics::summarize_run(rep_.steps, flops, summary_options_);
  rep_.memory = device::run_memory(rep_.phases, *memory_, backend_.get());
  rep_.environment = device::describe_environment(backend_.get());
  rep_.finished_at_utc = metrics::iso8601_utc(clock_.start_epoch_seconds() + clock_.now());
  rep_.segments = previous_segments_;
  rep_.segments.push_back(current_segment(status));
  return flops;
}

// `recorded`: this segment as the report records it (so that the two agree), else as of now.
void Run::update_journal(const std::string& status, const report::Segment* recorded) {
  if (!journal_on_ || journal_failed_) return;
  std::vector<report::Segment> all = previous_segments_;
  all.push_back(recorded != nullptr ? *recorded : current_segment(status));
  try {
    train::write_segment_journal(cp_dir_, spec_fingerprint_, all);
    journal_written_ = clock_.now();
  } catch (const train::CheckpointWriteError& e) {
    journal_failed_ = true;  // said once; the run goes on
    spdlog::warn("{} (a later --resume may not bill this process)", e.what());
  }
}

}  // namespace

report::Report run_benchmark(const RunOptions& o, const metrics::ProcessClock& clock,
                             const train::StopSignals& signals) {
  Run run(o, clock, signals);
  return run.execute();
}

}  // namespace ftbench::run
