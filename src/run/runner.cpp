#include "ftbench/run/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ftbench/data/batcher.h"
#include "ftbench/data/byte_tokenizer.h"
#include "ftbench/data/data_from_spec.h"
#include "ftbench/data/file_dataset.h"
#include "ftbench/data/fingerprint.h"
#include "ftbench/data/load_tokenizer.h"
#include "ftbench/data/synthetic_dataset.h"
#include "ftbench/device/backend.h"
#include "ftbench/device/env_knobs.h"
#include "ftbench/device/host_info.h"
#include "ftbench/device/host_memory.h"
#include "ftbench/metrics/gpu_peaks.h"
#include "ftbench/metrics/memory_peaks.h"
#include "ftbench/metrics/run_summary.h"
#include "ftbench/metrics/stats.h"
#include "ftbench/model/llama.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/report/report_io.h"
#include "ftbench/run/environment.h"
#include "ftbench/run/progress.h"
#include "ftbench/spec/canonical.h"
#include "ftbench/spec/derived.h"
#include "ftbench/spec/spec_error.h"
#include "ftbench/train/trainer.h"

namespace ftbench::run {
namespace {

// Memory per phase: at each phase's end, the peaks since its start, then a reset for the next
// phase. Host: the process's peak resident size (reset through /proc/self/clear_refs) and its
// resident size at the end. Device (GPU): allocator peaks and the device-used maximum
// (device::Backend). Not thread-safe; used from the run's thread only.
class MemoryMeter {
 public:
  // The phase that starts now is the first measured; what the process reached before (launch,
  // spec_load) still counts towards the run's peak.
  MemoryMeter() {
    run_peak_rss_bytes_ = device::read_host_memory().peak_rss_bytes;
    host_peak_reset_ = device::reset_host_peak_rss();
  }

  // The GPU side, once the backend exists (null: none yet, or a failed start).
  void set_backend(device::Backend* backend) { backend_ = backend; }

  report::PhaseMemory end_phase() {
    report::PhaseMemory m = backend_ != nullptr ? backend_->phase_memory() : report::PhaseMemory{};
    const device::HostMemory host = device::read_host_memory();
    // Without a reset at the phase's start, VmHWM would be an older peak, not this phase's.
    if (host_peak_reset_) m.peak_rss_bytes = host.peak_rss_bytes;
    m.rss_at_end_bytes = host.rss_bytes;
    if (host.peak_rss_bytes) {
      run_peak_rss_bytes_ = std::max(run_peak_rss_bytes_.value_or(0), *host.peak_rss_bytes);
    }
    if (backend_ != nullptr) backend_->reset_peak_memory();
    host_peak_reset_ = host_peak_reset_ && device::reset_host_peak_rss();
    return m;
  }

  // The process's peak resident size over the whole run: the phases' peaks, what came before
  // them, and what getrusage still reports (the launcher's, before exec).
  std::optional<int64_t> run_peak_rss_bytes() const {
    std::optional<int64_t> peak = run_peak_rss_bytes_;
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) == 0) {
      peak = std::max(peak.value_or(0), int64_t(usage.ru_maxrss) * 1024);
    }
    return peak;
  }

 private:
  device::Backend* backend_ = nullptr;
  bool host_peak_reset_ = false;
  std::optional<int64_t> run_peak_rss_bytes_;
};

// Records consecutive phases against the process clock, with the memory of each once a meter
// is attached.
class PhaseTimer {
 public:
  PhaseTimer(const metrics::ProcessClock& clock, std::vector<report::Phase>& phases,
             double start_seconds)
      : clock_(clock), phases_(phases), last_(start_seconds) {}
  void measure_memory(MemoryMeter* meter) { meter_ = meter; }
  void end(const std::string& name) { end_at(name, clock_.now()); }
  void end_at(const std::string& name, double at_seconds) {
    phases_.push_back({name, last_, at_seconds - last_});
    if (meter_ != nullptr) phases_.back().memory = meter_->end_phase();
    last_ = at_seconds;
  }

 private:
  const metrics::ProcessClock& clock_;
  std::vector<report::Phase>& phases_;
  double last_;
  MemoryMeter* meter_ = nullptr;
};

// The run's memory: peaks over the phases, the host's whole-run peak, the device's totals.
report::Memory run_memory(const std::vector<report::Phase>& phases, const MemoryMeter& meter,
                          const device::Backend* backend) {
  report::Memory m = metrics::memory_peaks_over_phases(phases);
  m.peak_rss_bytes = meter.run_peak_rss_bytes();
  if (backend != nullptr) {
    const report::Memory device = backend->memory();
    m.device_total_bytes = device.device_total_bytes;
    m.allocation_retries = device.allocation_retries;
    m.oom_count = device.oom_count;
  }
  return m;
}

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
    s.gemm_peak_source =
        fmt::format("none: {} was measured on {} ({}), this run is on {} ({})", g.source,
                    g.device_name, g.backend, device.name, device.backend);
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
  s.gemm_peak_source = fmt::format("none: {} has no {} measurement", g.source, dtype);
  spdlog::warn("--gemm: {}: no MFU against the measured GEMM peak", s.gemm_peak_source);
}

// A contiguous run of another data set's examples: the validation examples a last partial
// micro-batch would leave out, batched on their own.
class SliceDataset final : public data::Dataset {
 public:
  SliceDataset(const data::Dataset& base, int64_t first, int64_t count)
      : base_(base), first_(first), count_(count) {}
  int64_t size() const override { return count_; }
  const data::Example& at(int64_t index) const override { return base_.at(first_ + index); }
  std::string description() const override { return base_.description(); }

 private:
  const data::Dataset& base_;
  int64_t first_;
  int64_t count_;
};

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

}  // namespace

std::string default_report_path(const spec::RunSpec& spec) {
  std::string path = spec.output.report;
  const std::string key = "{name}";
  for (size_t pos = path.find(key); pos != std::string::npos; pos = path.find(key)) {
    path.replace(pos, key.size(), spec.output.name);
  }
  return path;
}

namespace {

// The first line of an error message (LibTorch appends a backtrace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

}  // namespace

report::Report run_benchmark(const RunOptions& o, const metrics::ProcessClock& clock) {
  report::check_report_writable(o.output_path, o.force);
  const spec::RunSpec& spec = o.spec;
  report::Report rep;
  rep.run_name = spec.output.name;
  rep.started_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds());
  rep.spec_path = spec.source_path;
  rep.spec = spec::to_json(spec);
  rep.spec_fingerprint = spec::fingerprint(spec);
  rep.t0_source = o.t0_epoch_seconds ? o.t0_source : "process_start";
  rep.t0_before_process_seconds =
      o.t0_epoch_seconds ? clock.start_epoch_seconds() - *o.t0_epoch_seconds : 0.0;

  const model::ParamCounts params = model::count_parameters(spec.model, spec.lora);
  const spec::DerivedCounts derived = spec::derive_counts(spec);
  rep.parameters = {params.base, params.lora, params.total()};
  rep.derived = {derived.effective_batch, derived.micro_batches_per_epoch, derived.steps_per_epoch,
                 derived.total_steps, derived.max_tokens_per_step};

  rep.phases.push_back({"launch", 0.0, clock.launch_seconds()});
  PhaseTimer phases(clock, rep.phases, clock.launch_seconds());
  phases.end_at("spec_load", o.spec_loaded_seconds);
  MemoryMeter memory;
  phases.measure_memory(&memory);

  metrics::SummaryOptions so;
  so.warmup_steps = spec.train.timing_warmup_steps;
  so.loss_window = spec.train.loss_window;
  so.recompute = spec.model.activation_checkpointing;
  rep.gemm = o.gemm;

  // Filled step by step, so that a run that fails part-way still reports what it measured.
  train::TrainResult result;
  result.micro_batch_size = spec.train.micro_batch_size;
  result.grad_accum_steps = spec.train.grad_accum_steps;
  auto record_batching = [&] {
    rep.batching =
        report::Batching{result.micro_batch_size, result.grad_accum_steps, result.fallbacks};
  };
  std::unique_ptr<device::Backend> backend;
  double first_step_end = 0.0;
  try {
    // Files the run needs must be there before any machine time goes into the model (an 8B
    // model takes minutes to build); their content is checked when they are read.
    std::vector<std::pair<const char*, std::string>> needed;
    if (spec.data.tokenizer != "byte") needed.emplace_back("data.tokenizer", spec.data.tokenizer);
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
    backend = std::make_unique<device::Backend>(spec.backend);
    memory.set_backend(backend.get());
    backend->check_dtype_supported(spec.model.dtype);
    resolve_gemm_peak(o, backend->info(), so);
    at::manual_seed(spec.train.seed);
    phases.end("backend_init");

    model::Llama model(spec.model, spec.lora, spec.data.seq_len, backend->device());
    backend->synchronize();
    phases.end("model_build");

    model->init_random();
    backend->synchronize();
    phases.end("weight_load");

    // The tokenizer and the data set. A data file's size is known only now: the step counts
    // are derived again below, from the batcher's micro-batches.
    const std::unique_ptr<data::Tokenizer> tokenizer = data::load_tokenizer(spec.data.tokenizer);
    data::check_tokenizer_fits(spec, *tokenizer);
    std::unique_ptr<data::Dataset> dataset_owner;
    std::unique_ptr<data::FileDataset> validation_owner;  // null without validation data
    std::optional<data::DataFileStats> file_stats;
    std::string file_format;
    if (spec.data.source == "file") {
      const data::DataFileOptions fo = data::data_file_options(spec.data);
      data::ValidationOptions vo;
      vo.fraction = spec.data.validation_fraction;
      vo.path = spec.data.validation_path;
      data::TrainValidationData split = data::load_train_validation(fo, vo, *tokenizer);
      std::unique_ptr<data::FileDataset> file = std::move(split.train);
      validation_owner = std::move(split.validation);
      file_stats = file->stats();
      file_format = file->format();
      dataset_owner = std::move(file);
    } else {
      dataset_owner = std::make_unique<data::SyntheticDataset>(spec.data, *tokenizer);
    }
    const data::Dataset& dataset = *dataset_owner;
    data::BatcherOptions bo;
    bo.micro_batch_size = spec.train.micro_batch_size;
    bo.seq_len = spec.data.seq_len;
    bo.padding = spec.data.padding == "pack"         ? data::Padding::kPack
                 : spec.data.padding == "max_length" ? data::Padding::kMaxLength
                                                     : data::Padding::kLongest;
    bo.shuffle = spec.data.shuffle;
    bo.train_on_input = spec.data.train_on_input;
    bo.seed = spec.data.seed;
    bo.pad_id = tokenizer->pad_id();
    data::Batcher batcher(dataset, bo, backend->device());
    // The step counts the run will make: from the data set's real size and, with packing, from
    // the packed rows.
    const spec::DerivedCounts counts =
        spec::derive_counts_from_batches(spec, batcher.batches_per_epoch());
    if (counts.steps_per_epoch < 1) {
      throw spec::SpecError(
          {{spec.source_path, spec.data.source == "file" ? "data.path" : "data.num_examples", 0,
            fmt::format("{} examples make {} micro-batches{}: 0 optimizer steps with "
                        "micro_batch_size {} x grad_accum_steps {}",
                        dataset.size(), batcher.batches_per_epoch(),
                        spec.data.padding == "pack" ? " of packed rows" : "",
                        spec.train.micro_batch_size, spec.train.grad_accum_steps)}});
    }
    rep.derived = {counts.effective_batch, counts.micro_batches_per_epoch, counts.steps_per_epoch,
                   counts.total_steps, counts.max_tokens_per_step};
    const data::DataStats data_stats = data::fingerprint(dataset, spec.data.train_on_input);
    rep.data = report::DataInfo{dataset.description(), data_stats.examples, data_stats.tokens,
                                data_stats.loss_tokens, data_stats.fingerprint};
    report::DataStatistics statistics = length_statistics(dataset, data_stats, spec.data.seq_len);
    if (file_stats) {
      statistics.format = file_format;
      statistics.records = file_stats->records;
      statistics.skipped_bad = file_stats->skipped_bad;
      statistics.dropped_too_long = file_stats->dropped_too_long;
      statistics.truncated = file_stats->truncated;
    }
    rep.data->statistics = statistics;

    // The validation set: batched like the training data but in file order, unshuffled. The
    // examples a last partial micro-batch would leave out get a smaller micro-batch of their
    // own, so a full pass sees every validation example (packed rows: a last partial
    // micro-batch of rows is left out, as in training).
    std::vector<std::unique_ptr<data::Dataset>> validation_parts;
    std::vector<std::unique_ptr<data::Batcher>> validation_batchers;
    std::vector<data::Batcher*> validation;
    if (validation_owner) {
      const data::DataStats v = data::fingerprint(*validation_owner, spec.data.train_on_input);
      rep.data->validation = report::ValidationDataInfo{validation_owner->description(), v.examples,
                                                        v.tokens, v.loss_tokens};
      data::BatcherOptions vbo = bo;
      vbo.shuffle = false;
      validation_batchers.push_back(
          std::make_unique<data::Batcher>(*validation_owner, vbo, backend->device()));
      const int64_t n = validation_owner->size();
      const int64_t covered =
          validation_batchers.back()->batches_per_epoch() * vbo.micro_batch_size;
      if (spec.data.padding != "pack" && covered < n) {
        validation_parts.push_back(
            std::make_unique<SliceDataset>(*validation_owner, covered, n - covered));
        data::BatcherOptions tail = vbo;
        tail.micro_batch_size = n - covered;
        validation_batchers.push_back(
            std::make_unique<data::Batcher>(*validation_parts.back(), tail, backend->device()));
      }
      for (const auto& b : validation_batchers) validation.push_back(b.get());
    }
    phases.end("data_prepare");

    spdlog::info("{}: {} on {} ({}), {} steps, {} trainable of {} parameters", spec.output.name,
                 spec.model.preset, backend->info().name, backend->kind(), rep.derived.total_steps,
                 params.lora, params.base);
    if (o.inject_oom) {
      spdlog::warn("FTBENCH_INJECT_OOM={}: simulated out-of-memory errors (a testing aid)",
                   o.inject_oom->rule());
    }
    train::Trainer trainer(spec, model, batcher, *backend, o.inject_oom);
    Progress progress(rep.derived.total_steps, spec.output.progress, spec.output.log_every_steps);
    // Validation passes run between steps, outside every step's wall time (the trainer starts
    // the next step's clock after the callback). Each pass is an `evaluation` phase of its own
    // that splits the step loop's time: first_step, [evaluation], training, evaluation,
    // training, ..., evaluation, so the phases stay contiguous and in time order.
    const int64_t total_steps = rep.derived.total_steps;
    auto run_evaluation = [&](int64_t after_step) {
      const train::EvalResult e =
          train::evaluate(model, validation, *backend, spec.train.eval_max_batches);
      phases.end("evaluation");
      rep.evaluations.push_back({after_step, e.loss, e.loss_tokens, e.batches, e.seconds});
      spdlog::info("step {}: validation loss {:.4f} over {} tokens ({} micro-batches, {:.3f} s)",
                   after_step, e.loss, e.loss_tokens, e.batches, e.seconds);
    };
    const double train_start = clock.now();
    trainer.run(result, [&](const report::StepRecord& r) {
      const double now = clock.now();
      if (r.step == 1) {
        first_step_end = now;
        phases.end_at("first_step", now);
      }
      progress.update(r, now - train_start);
      // The pass after the last step follows the training phase (below).
      if (!validation.empty() && r.step < total_steps &&
          train::evaluation_due(r.step, total_steps, spec.train.eval_every_steps)) {
        if (r.step > 1) phases.end("training");
        run_evaluation(r.step);
      }
    });
    progress.finish();
    phases.end("training");
    if (!validation.empty() && !result.steps.empty()) run_evaluation(result.steps.back().step);
    rep.status = "completed";
  } catch (const std::exception& e) {
    // Keep what was measured: the phases that ended, the steps that finished, and why it
    // stopped. Then the error goes on to the CLI.
    rep.status = dynamic_cast<const train::Diverged*>(&e) != nullptr ? "diverged" : "failed";
    rep.error = first_line(e.what());
    phases.end("failed");
    rep.time_to_first_step_seconds =
        first_step_end > 0.0 ? first_step_end + rep.t0_before_process_seconds : 0.0;
    rep.steps = result.steps;
    record_batching();
    if (backend) resolve_peak(o, backend->info(), so);
    rep.summary = metrics::summarize_run(rep.steps, result.flops, so);
    rep.memory = run_memory(rep.phases, memory, backend.get());
    rep.environment = run::describe_environment(backend.get());
    rep.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + clock.now());
    report::write_report(rep, o.output_path, o.force);
    throw;
  }
  rep.time_to_first_step_seconds = first_step_end + rep.t0_before_process_seconds;
  rep.steps = std::move(result.steps);
  record_batching();
  resolve_peak(o, backend->info(), so);
  rep.summary = metrics::summarize_run(rep.steps, result.flops, so);
  rep.environment = run::describe_environment(backend.get());
  phases.end("summarize");
  rep.memory = run_memory(rep.phases, memory, backend.get());

  // The write is timed on the real file, then the file is rewritten with that time in it (the
  // second write, of the same size, is not counted).
  const double write_start = clock.now();
  rep.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + write_start);
  report::write_report(rep, o.output_path, o.force);
  phases.end("report_write");
  rep.memory = run_memory(rep.phases, memory, backend.get());
  report::write_report(rep, o.output_path, /*force=*/true);
  return rep;
}

}  // namespace ftbench::run
