#include "ftbench/run/runner.h"
#include "ftbench/io/output_file.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/Parallel.h>
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
#include "ftbench/device/energy_sampler.h"
#include "ftbench/device/env_knobs.h"
#include "ftbench/device/environment.h"
#include "ftbench/device/host_info.h"
#include "ftbench/device/host_memory.h"
#include "ftbench/hf/hf_load.h"
#include "ftbench/hf/peft_adapter.h"
#include "ftbench/metrics/energy.h"
#include "ftbench/metrics/gpu_peaks.h"
#include "ftbench/metrics/memory_peaks.h"
#include "ftbench/metrics/run_summary.h"
#include "ftbench/metrics/stats.h"
#include "ftbench/model/llama.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/report/report_io.h"
#include "ftbench/run/progress.h"
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
  // Called after each phase is recorded (the segment journal's heartbeat).
  void after_each_phase(std::function<void()> f) { after_ = std::move(f); }
  void end(const std::string& name) { end_at(name, clock_.now()); }
  void end_at(const std::string& name, double at_seconds) {
    phases_.push_back({name, last_, at_seconds - last_});
    if (meter_ != nullptr) phases_.back().memory = meter_->end_phase();
    last_ = at_seconds;
    if (after_) after_();
  }

 private:
  const metrics::ProcessClock& clock_;
  std::vector<report::Phase>& phases_;
  double last_;
  MemoryMeter* meter_ = nullptr;
  std::function<void()> after_;
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

namespace {

std::string with_name(std::string path, const std::string& name) {
  const std::string key = "{name}";
  for (size_t pos = path.find(key); pos != std::string::npos; pos = path.find(key)) {
    path.replace(pos, key.size(), name);
  }
  return path;
}

// The checkpoint `--resume` names, with its manifest, checked against this run's spec before
// any machine time is spent on the model: a checkpoint of another job is refused, naming the
// keys that differ.
struct ResumePoint {
  std::string folder;
  train::CheckpointManifest manifest;
  report::Report previous;  // the partial report saved with it
};

ResumePoint find_resume_point(const RunOptions& o) {
  const spec::RunSpec& spec = o.spec;
  ResumePoint r;
  const std::string where = o.resume == "latest" ? checkpoint_dir(spec) : o.resume;
  r.folder = train::resolve_checkpoint(where);
  if (r.folder != where) {
    // `latest` (or a folder of checkpoints) passes over incomplete saves newer than its pick.
    const std::optional<int64_t> chosen = train::step_of_checkpoint_folder(r.folder);
    for (const std::string& skipped : train::list_incomplete_checkpoints(where)) {
      const std::optional<int64_t> step = train::step_of_checkpoint_folder(skipped);
      if (chosen && step && *step > *chosen) {
        spdlog::warn("{}: no {} (an incomplete or damaged save): passed over for {}", skipped,
                     train::kCheckpointManifest, r.folder);
      }
    }
  }
  r.manifest = train::read_manifest(r.folder);
  // A folder named for one step holding another's state (a copy put back by hand under the
  // wrong name) would continue from the wrong place.
  if (const std::optional<int64_t> named = train::step_of_checkpoint_folder(r.folder);
      named && *named != r.manifest.step) {
    throw train::CheckpointError(fmt::format(
        "{}: named for step {}, its manifest holds step {}: not the checkpoint its name says",
        r.folder, *named, r.manifest.step));
  }
  const std::string fingerprint = spec::fingerprint(spec);
  if (r.manifest.spec_fingerprint != fingerprint) {
    const std::vector<std::string> keys = train::differing_keys(
        r.manifest.spec, nlohmann::json::parse(spec::canonical_job_json(spec)));
    throw train::CheckpointError(fmt::format(
        "{}: saved by another job (spec fingerprint {}, this spec's is {}); resuming needs the "
        "same job; differing keys: {}",
        r.folder, r.manifest.spec_fingerprint.substr(0, 12), fingerprint.substr(0, 12),
        keys.empty() ? std::string("none listed") : fmt::format("{}", fmt::join(keys, ", "))));
  }
  try {
    r.previous = report::from_json(r.manifest.report,
                                   r.folder + "/" + train::kCheckpointManifest + " (report)");
  } catch (const report::ReportError& e) {
    throw train::CheckpointError(e.what());
  }
  if (static_cast<int64_t>(r.previous.steps.size()) != r.manifest.step) {
    throw train::CheckpointError(fmt::format("{}: {} steps recorded for step {}", r.folder,
                                             r.previous.steps.size(), r.manifest.step));
  }
  if (r.previous.segments.empty()) {
    throw train::CheckpointError(r.folder + ": its report records no segment");
  }
  // Everything else the resume needs, before any machine time: the batch split it continues
  // in, the tensors (checksum, names, dtypes, shapes, random-number state).
  train::check_resume_split(r.folder, r.manifest, spec.train.micro_batch_size,
                            spec.train.grad_accum_steps, spec.train.oom_fallback,
                            spec.train.oom_max_fallbacks);
  train::check_checkpoint_for_resume(r.folder, r.manifest, spec);
  return r;
}

// The report now at `path`, when there is one ftbench can read; nullopt otherwise.
std::optional<report::Report> existing_report(const std::string& path) {
  std::error_code ec;
  // Only a regular file can be a report; opening a FIFO there would wait for a writer.
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    return report::read_report(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// With --resume, the report of the run being resumed may be replaced: same job, not finished.
bool may_replace_report(const std::optional<report::Report>& old, const std::string& fingerprint) {
  return old && old->spec_fingerprint == fingerprint && old->status != "completed";
}

}  // namespace

std::string default_report_path(const spec::RunSpec& spec) {
  return with_name(spec.output.report, spec.output.name);
}

std::string checkpoint_dir(const spec::RunSpec& spec) {
  return with_name(spec.train.checkpoint.dir, spec.output.name);
}

std::string adapter_export_dir(const spec::RunSpec& spec) {
  return with_name(spec.output.adapter, spec.output.name);
}

std::string merged_export_dir(const spec::RunSpec& spec) {
  return with_name(spec.output.merged, spec.output.name);
}

namespace {

// An export folder must be new (or --force given) and its parent a folder this process can
// create entries in: checked by creating and removing a folder there, so that a run never
// trains for hours and then cannot write its adapter. A dangling symbolic link counts as
// existing (the export would not replace it silently).
void check_export_writable(const std::string& dir, const char* key, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec)) && !force) {
    throw io::FileExistsError(fmt::format(
        "{}: exists ({}); pass --force to replace it, or choose another folder", dir, key));
  }
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(folder, ec);
  if (ec) {
    throw io::FileWriteError(fmt::format("cannot write {} ({}): cannot create folder {}: {}", dir,
                                         key, folder.string(), ec.message()));
  }
  const fs::path probe =
      folder / fmt::format(".{}.probe-{}", target.filename().string(), ::getpid());
  if (::mkdir(probe.c_str(), 0700) != 0) {
    throw io::FileWriteError(fmt::format("cannot write {} ({}): {}: {}", dir, key, folder.string(),
                                         std::strerror(errno)));
  }
  ::rmdir(probe.c_str());
}

// Why this process cannot create entries in `dir` or, when it does not exist yet, in the
// nearest folder above it that does: "" when it can.
std::string folder_not_writable(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path folder = fs::absolute(dir, ec).lexically_normal();
  while (!folder.empty() && !fs::exists(folder, ec) && folder != folder.root_path()) {
    folder = folder.parent_path();
  }
  if (!fs::is_directory(folder, ec)) return folder.string() + " is not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("{}: {}", folder.string(), std::strerror(errno));
  }
  return "";
}

// A folder the run will write into (it exists) must take new entries: checked by creating and
// removing one, so that a read-only folder is found before the model is built, not at the first
// checkpoint. io::FileWriteError (exit code 3) otherwise.
void check_folder_writable(const std::string& dir, const char* key) {
  const std::string probe = (std::filesystem::path(dir) / fmt::format(".probe-{}", ::getpid()));
  if (::mkdir(probe.c_str(), 0700) != 0) {
    throw io::FileWriteError(
        fmt::format("cannot write {} ({}): {}", dir, key, std::strerror(errno)));
  }
  ::rmdir(probe.c_str());
}

// A resume with another CPU thread count or on another device continues the same job, but not
// bit for bit (CPU reductions split differently; another GPU rounds differently): said when it
// starts, so that nobody takes the difference in the losses for a bug. Each segment records its
// thread count (report::Segment::intra_op_threads).
void warn_if_not_bit_exact(const report::Environment& saved, const report::DeviceInfo& device,
                           const at::Device& where) {
  const int64_t threads = at::get_num_threads();
  if (where.is_cpu() && saved.software.intra_op_threads != threads) {
    spdlog::warn(
        "resuming with {} CPU threads (backend.threads), where the checkpoint was saved with {}: "
        "the continuation is the same job, but its losses will not be bit-exact with an "
        "unbroken run's (reductions split differently)",
        threads, saved.software.intra_op_threads);
  }
  if (saved.device.name != device.name || saved.device.backend != device.backend) {
    spdlog::warn(
        "resuming on {} ({}), where the checkpoint was saved on {} ({}): the continuation is "
        "the same job, but not bit-exact, and its step times are another device's",
        device.name, device.backend, saved.device.name, saved.device.backend);
  }
}

// What the exported adapter names as its base: the checkpoint folder as the spec gives it; ""
// (null in adapter_config.json) for random weights, which no loader could fetch.
std::string base_model_name(const spec::RunSpec& spec) { return spec.model.checkpoint; }

// The first line of an error message (LibTorch appends a backtrace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

}  // namespace

// Board energy over the step loop (report::Energy): a sampler on the devices this process
// trains on, started just before the first step and stopped after the last one ends; or why
// there is none.
class EnergyMeter {
 public:
  EnergyMeter(const spec::BackendSpec& spec, int64_t segment)
      : interval_seconds_(static_cast<double>(spec.energy_sample_ms) * 1e-3),
        interval_ns_(spec.energy_sample_ms * 1'000'000),
        segment_(segment) {}

  void start(const device::Backend& backend, const metrics::ProcessClock& clock) {
    const device::GpuQuery* query = backend.gpu_query();
    if (backend.kind() == "cpu") {
      reason_ = "backend cpu: ftbench reads the board power of GPUs only";
    } else if (query == nullptr) {
      reason_ = "no GPU query module: " + backend.info().query_error;
    } else {
      try {
        sampler_ = std::make_unique<device::EnergySampler>(
            *query, std::vector<int64_t>{backend.info().index}, interval_ns_,
            [&clock] { return static_cast<int64_t>(std::llround(clock.now() * 1e9)); });
      } catch (const device::GpuQueryError& e) {
        reason_ = e.what();
        spdlog::warn("no energy figures: {}", reason_);
      }
    }
  }

  // The energy of `steps` (this segment's), stopping the sampler. Once.
  report::Energy finish(const std::vector<report::StepRecord>& steps) {
    if (sampler_ == nullptr) {
      return metrics::unmeasured_energy(reason_.empty() ? "training did not start" : reason_,
                                        interval_seconds_, segment_, steps);
    }
    const std::vector<metrics::DeviceReadings> readings = sampler_->stop();
    const std::string error = sampler_->last_error();
    sampler_.reset();
    return metrics::summarize_energy(readings, interval_seconds_, segment_, steps, error);
  }

 private:
  double interval_seconds_;
  int64_t interval_ns_;
  int64_t segment_;
  std::string reason_;
  std::unique_ptr<device::EnergySampler> sampler_;
};

report::Report run_benchmark(const RunOptions& o, const metrics::ProcessClock& clock,
                             const train::StopSignals& signals) {
  const spec::RunSpec& spec = o.spec;
  const std::string spec_fingerprint = spec::fingerprint(spec);
  const spec::CheckpointSpec& cp = spec.train.checkpoint;
  const std::string cp_dir = checkpoint_dir(spec);
  // The checkpoint folder is this run's alone while it runs (a second run writing into it is
  // refused now, not at a save), and whatever a killed process left in it is cleaned first.
  // A run that saves only on a stop signal takes the lock when it saves.
  std::optional<train::CheckpointDirLock> cp_lock;
  const bool checkpointing = !o.resume.empty() || cp.every_steps > 0 || cp.every_minutes > 0.0;
  if (checkpointing) {
    cp_lock.emplace(cp_dir);
    for (const std::string& cleaned : train::clean_checkpoint_leftovers(cp_dir)) {
      spdlog::warn("{}: {}", cp_dir, cleaned);
    }
    check_folder_writable(cp_dir, "train.checkpoint.dir");
  } else if (const std::string why = folder_not_writable(cp_dir); !why.empty()) {
    spdlog::warn("train.checkpoint.dir {}: {}: a stop signal could not save a checkpoint", cp_dir,
                 why);
  } else if (std::error_code ec; std::filesystem::is_directory(cp_dir, ec)) {
    // Held by another run now: this one could not save on a stop signal either.
    try {
      const train::CheckpointDirLock probe(cp_dir);
    } catch (const std::exception& e) {
      spdlog::warn("{}: a stop signal could not save a checkpoint", e.what());
    }
  }
  // A resumed run's checkpoint is read and checked first: a wrong one costs no machine time.
  std::optional<ResumePoint> resume;
  std::vector<report::Segment> previous_segments;
  if (!o.resume.empty()) {
    resume = find_resume_point(o);
    std::optional<std::vector<report::Segment>> journal;
    try {
      journal = train::read_segment_journal(cp_dir, spec_fingerprint,
                                            resume->previous.segments.front().started_at_utc);
    } catch (const train::CheckpointError& e) {
      throw train::CheckpointError(std::string(e.what()) +
                                   "; the segment journal is damaged: remove it to resume without "
                                   "the processes it records (they are then not billed)");
    }
    previous_segments =
        train::segments_to_resume(resume->previous.segments, journal, resume->manifest.step);
  }
  // The report in the way: the one of the run being resumed may be replaced, and so may one of
  // a run that failed (a corrected rerun needs no --force); a completed or interrupted run's is
  // kept unless --force.
  const std::optional<report::Report> old_report = existing_report(o.output_path);
  const bool old_report_failed = old_report && old_report->status == "failed";
  const bool replace_report =
      o.force || old_report_failed || (resume && may_replace_report(old_report, spec_fingerprint));
  // What a process killed while writing the report left beside it.
  for (const std::string& removed : io::remove_stale_temporary_files(o.output_path)) {
    spdlog::warn("removed {}, left by a process that did not finish writing the report", removed);
  }
  io::check_writable(o.output_path, replace_report);
  // The export folders are checked now too: a run must not train for hours and then find it
  // may not write its adapter.
  const std::string adapter_dir = adapter_export_dir(spec);
  const std::string merged_dir = merged_export_dir(spec);
  for (const auto& [key, dir] : {std::pair<const char*, std::string>{"output.adapter", adapter_dir},
                                 {"output.merged", merged_dir}}) {
    if (!dir.empty()) check_export_writable(dir, key, o.force);
  }

  report::Report rep;
  rep.run_name = spec.output.name;
  rep.started_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds());
  rep.spec_path = spec.source_path;
  rep.spec = spec::to_json(spec);
  rep.spec_fingerprint = spec_fingerprint;
  rep.t0_source = o.t0_epoch_seconds ? o.t0_source : "process_start";
  rep.t0_before_process_seconds =
      o.t0_epoch_seconds ? clock.start_epoch_seconds() - *o.t0_epoch_seconds : 0.0;
  // An external start before the end of an earlier segment overlaps it: a new machine booted
  // while the old one still ran is billed twice rightly; the same machine, given its boot time
  // again, is not (leave --t0 out on a resume there).
  if (o.t0_epoch_seconds && !previous_segments.empty()) {
    const report::Segment& last = previous_segments.back();
    const std::optional<double> ended = metrics::parse_iso8601_utc(last.finished_at_utc);
    if (ended && *o.t0_epoch_seconds < *ended) {
      spdlog::warn(
          "{} {:.3f} lies {:.1f} s before the end of segment {} ({}): this segment's rented time "
          "overlaps it; if this is the machine that ran it, leave {} out (its time is billed "
          "twice otherwise)",
          o.t0_source, *o.t0_epoch_seconds, *ended - *o.t0_epoch_seconds, last.index,
          last.finished_at_utc, o.t0_source);
    }
  }
  // Earlier segments of a resumed run: their steps, evaluations, checkpoints and segments.
  std::vector<metrics::StepFlops> previous_flops;
  if (resume) {
    rep.evaluations = resume->previous.evaluations;
    rep.segments = previous_segments;
    rep.checkpoints = resume->previous.checkpoints;
    for (const std::vector<double>& f : resume->manifest.step_flops) {
      previous_flops.push_back({f[0], f[1], f[2], f[3]});
    }
  }
  const int64_t segment_index = static_cast<int64_t>(rep.segments.size()) + 1;

  const model::ParamCounts params = model::count_parameters(spec.model, spec.lora);
  // A data file's counts are known once it is read (data_prepare, below); until then none.
  const spec::DerivedCounts derived = spec.data.source == "file"
                                          ? spec::derive_counts_from_batches(spec, 0)
                                          : spec::derive_counts(spec);
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
  std::unique_ptr<device::Backend> backend;
  EnergyMeter energy(spec.backend, segment_index);
  // This segment's steps as the report numbers them, for the energy per step and token.
  auto segment_steps = [&] {
    std::vector<report::StepRecord> out = result.steps;
    for (report::StepRecord& s : out) s.segment = segment_index;
    return out;
  };
  double first_step_end = 0.0;

  // This process's record among the run's segments, as of now.
  auto current_segment = [&](const std::string& status) {
    const double now = clock.now();
    report::Segment g;
    g.index = segment_index;
    g.status = status;
    g.started_at_utc = rep.started_at_utc;
    g.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + now);
    if (!result.steps.empty()) {
      g.first_step = result.steps.front().step;
      g.last_step = result.steps.back().step;
    }
    g.run_seconds = rep.t0_before_process_seconds + now;
    g.time_to_first_step_seconds =
        first_step_end > 0.0 ? first_step_end + rep.t0_before_process_seconds : 0.0;
    g.resumed_from = resume ? resume->folder : "";
    if (backend) g.intra_op_threads = at::get_num_threads();
    return g;
  };

  // Everything measured so far into `rep`, for the final report, a failed or interrupted one,
  // and the partial report a checkpoint carries: the earlier segments' steps and this one's,
  // the summary over them, and this segment's record.
  auto assemble = [&](const std::string& status) {
    rep.status = status;
    rep.time_to_first_step_seconds =
        first_step_end > 0.0 ? first_step_end + rep.t0_before_process_seconds : 0.0;
    rep.steps = resume ? resume->previous.steps : std::vector<report::StepRecord>{};
    std::vector<metrics::StepFlops> flops = previous_flops;
    for (report::StepRecord s : result.steps) {
      s.segment = segment_index;
      rep.steps.push_back(s);
    }
    flops.insert(flops.end(), result.flops.begin(), result.flops.end());
    rep.batching =
        report::Batching{result.micro_batch_size, result.grad_accum_steps, result.fallbacks};
    if (backend) resolve_peak(o, backend->info(), so);
    rep.summary = metrics::summarize_run(rep.steps, flops, so);
    rep.memory = run_memory(rep.phases, memory, backend.get());
    rep.environment = device::describe_environment(backend.get());
    rep.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + clock.now());
    rep.segments = previous_segments;
    rep.segments.push_back(current_segment(status));
    return flops;
  };

  // The segment journal next to the checkpoints (train/checkpoint_files.h): kept from the start
  // by a resumed run and from its first save by a fresh one (before, there is nothing to resume
  // from), updated at every phase's end, every save, every minute of training and at the end,
  // so that the next resume bills this process whatever becomes of it.
  bool journal_on = resume.has_value();
  bool journal_failed = false;
  double journal_written = 0.0;
  // `recorded`: this segment as the report records it (so that the two agree), else as of now.
  auto update_journal = [&](const std::string& status, const report::Segment* recorded = nullptr) {
    if (!journal_on || journal_failed) return;
    std::vector<report::Segment> all = previous_segments;
    all.push_back(recorded != nullptr ? *recorded : current_segment(status));
    try {
      train::write_segment_journal(cp_dir, spec_fingerprint, all);
      journal_written = clock.now();
    } catch (const train::CheckpointWriteError& e) {
      journal_failed = true;  // said once; the run goes on
      spdlog::warn("{} (a later --resume may not bill this process)", e.what());
    }
  };
  phases.after_each_phase([&] { update_journal("unfinished"); });
  // A resumed process is in the journal from now on, whatever becomes of it.
  update_journal("unfinished");

  // A stop asked for during set-up ends the run at the end of the phase: nothing of this
  // segment is worth a checkpoint yet (a resumed run's checkpoint is still there).
  auto stop_if_asked = [&](const char* phase) {
    if (const int signal = signals.received(); signal != 0) {
      throw train::Interrupted(
          fmt::format("stopped by {} during set-up (after {}), before any step of this process{}",
                      train::StopSignals::name(signal), phase,
                      resume ? "; resume again from " + resume->folder : std::string()));
    }
  };

  try {
    // A stop asked for since the process started (while LibTorch loaded, while the spec was
    // read) ends the run here, with its report: that time was rented too.
    stop_if_asked("spec_load");
    // Files the run needs must be there before any machine time goes into the model (an 8B
    // model takes minutes to build); their content is checked when they are read.
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
    backend = std::make_unique<device::Backend>(spec.backend);
    memory.set_backend(backend.get());
    backend->check_dtype_supported(spec.model.dtype);
    if (resume) {
      train::check_device_generator_state(resume->folder, resume->manifest, backend->device());
      warn_if_not_bit_exact(resume->previous.environment, backend->info(), backend->device());
    }
    resolve_gemm_peak(o, backend->info(), so);
    at::manual_seed(spec.train.seed);
    phases.end("backend_init");
    stop_if_asked("backend_init");

    model::Llama model(spec.model, spec.lora, spec.data.seq_len, backend->device());
    backend->synchronize();
    phases.end("model_build");
    stop_if_asked("model_build");

    if (spec.model.checkpoint.empty()) {
      model->init_random();
      rep.weights = report::WeightsInfo{"random", "", "", 0, 0, 0, 0.0, 0.0, ""};
    } else {
      // Base weights from the checkpoint, file by file straight into the model's dtype and
      // device; the adapters start as a fresh LoRA adapter does.
      model->init_adapters();
      backend->synchronize();
      const double load_start = clock.now();
      const hf::HfLoadStats loaded = hf::load_hf_weights(model, spec.model.checkpoint, spec.model);
      backend->synchronize();
      const double seconds = clock.now() - load_start;
      rep.weights = report::WeightsInfo{
          "checkpoint",      spec.model.checkpoint,
          "safetensors",     loaded.files,
          loaded.tensors,    loaded.bytes,
          seconds,           seconds > 0.0 ? double(loaded.bytes) / seconds : 0.0,
          loaded.fingerprint};
      spdlog::info("weights: {} tensors, {:.1f} MB from {} file{} of {} in {:.3f} s ({:.0f} MB/s)",
                   loaded.tensors, double(loaded.bytes) / 1e6, loaded.files,
                   loaded.files == 1 ? "" : "s", spec.model.checkpoint, seconds,
                   seconds > 0.0 ? double(loaded.bytes) / seconds / 1e6 : 0.0);
      // A resumed run continues on the weights it started from.
      if (resume && resume->previous.weights &&
          resume->previous.weights->fingerprint != loaded.fingerprint) {
        throw train::CheckpointError(fmt::format(
            "{}: saved by a run on other base weights (weights fingerprint {}, {} holds {}); "
            "resuming needs the same checkpoint",
            resume->folder, resume->previous.weights->fingerprint.substr(0, 12),
            spec.model.checkpoint, loaded.fingerprint.substr(0, 12)));
      }
    }
    backend->synchronize();
    phases.end("weight_load");
    stop_if_asked("weight_load");
    // The tokenizer and the data set. A data file's size is known only now: the step counts
    // are derived again below, from the batcher's micro-batches.
    const std::unique_ptr<data::Tokenizer> tokenizer = data::tokenizer_for(spec);
    data::check_tokenizer_fits(spec, *tokenizer);
    std::unique_ptr<data::Dataset> dataset_owner;
    std::unique_ptr<data::FileDataset> validation_owner;  // null without validation data
    std::optional<data::DataFileStats> file_stats;
    std::string file_format;
    if (spec.data.source == "file") {
      const data::DataFileOptions fo = data::data_file_options(spec);
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
    stop_if_asked("data_prepare");

    train::Trainer trainer(spec, model, batcher, *backend, o.inject_oom);
    if (resume) {
      if (resume->manifest.data_fingerprint != rep.data->fingerprint) {
        throw train::CheckpointError(fmt::format(
            "{}: saved with other training data (data fingerprint {}, this run's is {}): the "
            "tokens or loss masks differ (data file, tokenizer, data.* keys)",
            resume->folder, resume->manifest.data_fingerprint.substr(0, 12),
            rep.data->fingerprint.substr(0, 12)));
      }
      if (resume->manifest.step >= rep.derived.total_steps) {
        throw train::CheckpointError(
            fmt::format("{}: saved after step {}, the run has {} steps: "
                        "nothing left to run",
                        resume->folder, resume->manifest.step, rep.derived.total_steps));
      }
      train::ResumeState state =
          train::load_checkpoint(resume->folder, resume->manifest, model, backend->device());
      // The earlier segments' fallbacks, from the partial report the checkpoint carries, are
      // the trainer's now (TrainResult::fallbacks): the resumed report lists them all.
      if (resume->previous.batching) state.fallbacks = resume->previous.batching->fallbacks;
      trainer.resume(std::move(state));
      backend->synchronize();
      phases.end("checkpoint_load");
      spdlog::info("resuming after step {} from {}", resume->manifest.step, resume->folder);
    }

    spdlog::info("{}: {} on {} ({}), {} steps, {} parameters ({} base + {} trainable)",
                 spec.output.name, spec.model.preset, backend->info().name, backend->kind(),
                 rep.derived.total_steps, params.total(), params.base, params.lora);
    if (o.inject_oom) {
      spdlog::warn("FTBENCH_INJECT_OOM={}: simulated out-of-memory errors (a testing aid)",
                   o.inject_oom->rule());
    }
    const int64_t first_step = resume ? resume->manifest.step + 1 : 1;
    Progress progress(rep.derived.total_steps, spec.output.progress, spec.output.log_every_steps);
    // Validation passes and checkpoint saves run between steps, outside every step's wall time
    // (the trainer starts the next step's clock after the callback). Each is a phase of its
    // own that splits the step loop's time: first_step, [evaluation], training, evaluation,
    // checkpoint, training, ..., so the phases stay contiguous and in time order.
    const int64_t total_steps = rep.derived.total_steps;
    int64_t training_split_at = first_step;  // the step whose end last ended a phase
    auto between_steps = [&](int64_t step) {
      if (step > training_split_at) phases.end("training");
      training_split_at = step;
    };
    auto run_evaluation = [&](int64_t after_step) {
      const train::EvalResult e =
          train::evaluate(model, validation, *backend, spec.train.eval_max_batches);
      phases.end("evaluation");
      rep.evaluations.push_back({after_step, e.loss, e.loss_tokens, e.batches, e.seconds});
      spdlog::info("step {}: validation loss {:.4f} over {} tokens ({} micro-batches, {:.3f} s)",
                   after_step, e.loss, e.loss_tokens, e.batches, e.seconds);
    };
    const spec::CheckpointSpec& cp = spec.train.checkpoint;
    const std::string cp_dir = checkpoint_dir(spec);
    double last_save = clock.now();
    auto save = [&](int64_t step, const std::string& reason, bool stopping) {
      // A run that saves only on a stop signal takes the folder's lock now.
      if (!cp_lock) {
        try {
          cp_lock.emplace(cp_dir);
        } catch (const train::CheckpointError& e) {
          throw train::CheckpointWriteError(e.what());
        }
        train::clean_checkpoint_leftovers(cp_dir);
      }
      backend->synchronize();
      const double start = clock.now();
      train::CheckpointManifest m;
      m.created_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + start);
      m.reason = reason;
      m.ftbench_version = ftbench::version();
      m.spec_fingerprint = spec_fingerprint;
      m.data_fingerprint = rep.data->fingerprint;
      m.spec = nlohmann::ordered_json::parse(spec::canonical_job_json(spec));
      // The segment as of this save: "interrupted" when the run stops here, "unfinished" when
      // it goes on (a process that then dies records nothing more).
      const std::vector<metrics::StepFlops> flops =
          assemble(stopping ? "interrupted" : "unfinished");
      for (const metrics::StepFlops& f : flops) {
        m.step_flops.push_back(
            {f.lora_frozen_base, f.lora_frozen_base_recompute, f.six_n, f.six_n_recompute});
      }
      const std::string path =
          (std::filesystem::path(cp_dir) / train::checkpoint_folder_name(step)).string();
      // The report the checkpoint carries records this save too, measured up to the manifest's
      // write (the milliseconds of that write are only in the live report's figure).
      const train::SavedCheckpointFolder saved = train::save_checkpoint(
          cp_dir, cp.keep_last, trainer, std::move(m), rep.derived.steps_per_epoch,
          backend->device(), [&](train::CheckpointManifest& full) {
            rep.checkpoints.push_back(
                {step, segment_index, reason, path, full.tensors_bytes, clock.now() - start});
            full.report = report::to_json(rep);
            rep.checkpoints.pop_back();
          });
      const double seconds = clock.now() - start;
      rep.checkpoints.push_back({step, segment_index, reason, saved.path, saved.bytes, seconds});
      journal_on = true;
      phases.end("checkpoint");  // and the journal, with this save
      last_save = clock.now();
      spdlog::info("step {}: checkpoint {} ({}, {:.1f} MB in {:.3f} s)", step, saved.path, reason,
                   double(saved.bytes) / 1e6, seconds);
      return saved.path;
    };
    energy.start(*backend, clock);
    const double train_start = clock.now();
    trainer.run(result, [&](const report::StepRecord& r) {
      const double now = clock.now();
      if (r.step == first_step) {
        first_step_end = now;
        phases.end_at("first_step", now);
      }
      if (now - journal_written >= 60.0) update_journal("unfinished");
      progress.update(r, now - train_start);
      // The pass after the last step follows the training phase (below).
      if (!validation.empty() && r.step < total_steps &&
          train::evaluation_due(r.step, total_steps, spec.train.eval_every_steps)) {
        between_steps(r.step);
        run_evaluation(r.step);
      }
      // Periodic saves include the last step (the trained adapters are then on disk); a stop
      // request at the last step is moot.
      int signal = signals.received();
      bool stopping = r.step < total_steps &&
                      (signal != 0 || (o.stop_after_steps > 0 && r.step == o.stop_after_steps));
      std::string saved;
      const bool by_steps = cp.every_steps > 0 && r.step % cp.every_steps == 0;
      const bool by_time = cp.every_minutes > 0.0 && now - last_save >= cp.every_minutes * 60.0;
      if (by_steps || by_time) {
        between_steps(r.step);
        saved = save(r.step, by_steps ? "every_steps" : "every_minutes", stopping);
        // A stop asked for during the save: the checkpoint just written is the one to resume
        // from, rather than one more step and another save.
        if (!stopping && r.step < total_steps && (signal = signals.received()) != 0) {
          stopping = true;
        }
      }
      if (!stopping) return;
      if (saved.empty()) {
        between_steps(r.step);
        saved = save(r.step, signal != 0 ? "signal" : "stop_after_steps", true);
      }
      progress.finish();
      throw train::Interrupted(fmt::format(
          "{} after step {} of {}; checkpoint {}; to continue, run the same command with "
          "--resume latest",
          signal != 0 ? "stopped by " + train::StopSignals::name(signal)
                      : fmt::format("stopped by --stop-after-steps {}", o.stop_after_steps),
          r.step, total_steps, saved));
    });
    progress.finish();
    rep.energy = energy.finish(segment_steps());
    phases.end("training");
    if (!validation.empty() && !result.steps.empty()) run_evaluation(result.steps.back().step);
    // The trained adapter for the serving stack: PEFT's format, and merged full weights.
    auto export_to = [&](const char* kind, const char* phase, const std::string& dir) {
      backend->synchronize();
      const double start = clock.now();
      const hf::ExportStats x = std::string(kind) == "peft_adapter"
                                    ? hf::write_peft_adapter(model, spec.model, spec.lora,
                                                             base_model_name(spec), dir, o.force)
                                    : hf::write_merged_hf(model, spec.model, dir, o.force,
                                                          5'000'000'000, spec.model.checkpoint);
      const double seconds = clock.now() - start;
      rep.exports.push_back({kind, dir, x.tensors, x.bytes, seconds});
      phases.end(phase);
      spdlog::info("{}: {} ({} tensors, {:.1f} MB in {:.3f} s)", kind, dir, x.tensors,
                   double(x.bytes) / 1e6, seconds);
    };
    if (!adapter_dir.empty()) export_to("peft_adapter", "adapter_export", adapter_dir);
    if (!merged_dir.empty()) export_to("merged", "merged_export", merged_dir);
  } catch (const std::exception& e) {
    // Keep what was measured: the phases that ended, the steps that finished, and why it
    // stopped. Then the error goes on to the CLI.
    const bool interrupted = dynamic_cast<const train::Interrupted*>(&e) != nullptr;
    const bool diverged = dynamic_cast<const train::Diverged*>(&e) != nullptr;
    rep.error = first_line(e.what());
    const std::string status = interrupted ? "interrupted" : diverged ? "diverged" : "failed";
    if (!rep.energy) rep.energy = energy.finish(segment_steps());
    phases.after_each_phase(nullptr);
    phases.end(interrupted ? "interrupted" : "failed");
    assemble(status);
    update_journal(status, &rep.segments.back());
    // A checkpoint that cannot be used was found before any training: no report of a run that
    // never started is left behind, and an existing one is kept. A resume that fails leaves the
    // interrupted run's report as it was (its own time is in the segment journal, billed by the
    // next resume).
    const bool keep_interrupted_report =
        resume && !interrupted && old_report && old_report->status == "interrupted";
    if (keep_interrupted_report) {
      spdlog::warn("{} is kept as the interrupted run left it; this attempt is segment {} in {}",
                   o.output_path, segment_index,
                   (std::filesystem::path(cp_dir) / train::kSegmentJournal).string());
    }
    if (!keep_interrupted_report && dynamic_cast<const train::CheckpointError*>(&e) == nullptr &&
        dynamic_cast<const hf::HfCheckpointError*>(&e) == nullptr) {
      try {
        report::write_report(rep, o.output_path, replace_report);
      } catch (const std::exception& write_error) {
        // The run's own error is the one to report; the lost report is logged (a full disk
        // often fails both).
        spdlog::error("{}", write_error.what());
      }
    }
    throw;
  }
  assemble("completed");
  phases.end("summarize");
  phases.after_each_phase(nullptr);
  update_journal("completed");
  rep.memory = run_memory(rep.phases, memory, backend.get());

  // The write is timed on the real file, then the file is rewritten with that time in it (the
  // second write, of the same size, is not counted).
  const double write_start = clock.now();
  rep.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + write_start);
  report::write_report(rep, o.output_path, replace_report);
  phases.end("report_write");
  assemble("completed");
  report::write_report(rep, o.output_path, /*force=*/true);
  return rep;
}

}  // namespace ftbench::run
