#include "ftbench/run/runner.h"

#include <chrono>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include "ftbench/data/batcher.h"
#include "ftbench/data/byte_tokenizer.h"
#include "ftbench/data/file_dataset.h"
#include "ftbench/data/fingerprint.h"
#include "ftbench/data/load_tokenizer.h"
#include "ftbench/data/synthetic_dataset.h"
#include "ftbench/device/backend.h"
#include "ftbench/device/host_info.h"
#include "ftbench/metrics/gpu_peaks.h"
#include "ftbench/metrics/run_summary.h"
#include "ftbench/model/llama.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/report/report_io.h"
#include "ftbench/run/host_allocator.h"
#include "ftbench/run/progress.h"
#include "ftbench/spec/canonical.h"
#include "ftbench/spec/derived.h"
#include "ftbench/spec/spec_error.h"
#include "ftbench/train/trainer.h"
#include "ftbench/version.h"

namespace ftbench::run {
namespace {

const char* compiler_name() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown";
#endif
}

// Records consecutive phases against the process clock.
class PhaseTimer {
 public:
  PhaseTimer(const metrics::ProcessClock& clock, std::vector<report::Phase>& phases,
             double start_seconds)
      : clock_(clock), phases_(phases), last_(start_seconds) {}
  void end(const std::string& name) { end_at(name, clock_.now()); }
  void end_at(const std::string& name, double at_seconds) {
    phases_.push_back({name, last_, at_seconds - last_});
    last_ = at_seconds;
  }

 private:
  const metrics::ProcessClock& clock_;
  std::vector<report::Phase>& phases_;
  double last_;
};

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

void fill_environment(const device::Backend* backend, report::Environment& env) {
  env.host = device::host_info();
  report::SoftwareInfo& sw = env.software;
  if (backend != nullptr) {
    env.device = backend->info();
    sw.intra_op_threads = backend->intra_op_threads();
    sw.inter_op_threads = backend->inter_op_threads();
  }
  sw.ftbench_version = version();
  sw.git_commit = git_commit();
  sw.libtorch_version = TORCH_VERSION;
  sw.compiler = compiler_name();
#ifdef NDEBUG
  sw.build_type = "release";
#else
  sw.build_type = "debug";
#endif
  sw.blas = device::resolved_blas();
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  sw.omp_wait_policy = wait_policy != nullptr ? wait_policy : "";
  sw.host_allocator = host_allocator_description();
}

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

  metrics::SummaryOptions so;
  so.warmup_steps = spec.train.timing_warmup_steps;
  so.loss_window = spec.train.loss_window;
  so.recompute = spec.model.activation_checkpointing;

  // Filled step by step, so that a run that fails part-way still reports what it measured.
  train::TrainResult result;
  std::unique_ptr<device::Backend> backend;
  double first_step_end = 0.0;
  try {
    backend = std::make_unique<device::Backend>(spec.backend);
    backend->check_dtype_supported(spec.model.dtype);
    at::manual_seed(spec.train.seed);
    backend->reset_peak_memory();
    phases.end("backend_init");

    model::Llama model(spec.model, spec.lora, spec.data.seq_len, backend->device());
    backend->synchronize();
    phases.end("model_build");

    model->init_random();
    backend->synchronize();
    phases.end("weight_load");

    // Not yet implemented: refuse rather than run something else than asked.
    if (spec.data.padding == "pack") {
      throw spec::SpecError({{spec.source_path, "data.padding", 0,
                              "\"pack\" is not implemented in this build yet; use longest or "
                              "max_length"}});
    }
    if (spec.data.validation_fraction > 0.0 || !spec.data.validation_path.empty()) {
      throw spec::SpecError({{spec.source_path, "data.validation_fraction", 0,
                              "validation passes are not implemented in this build yet"}});
    }
    // The tokenizer and the data set. A data file's size is known only now: the step counts
    // are derived again from it, and the trainer runs on a copy of the spec that says so.
    const std::unique_ptr<data::Tokenizer> tokenizer = data::load_tokenizer(spec.data.tokenizer);
    if (tokenizer->vocab_size() > spec.model.vocab_size) {
      throw spec::SpecError(
          {{spec.source_path, "model.vocab_size", 0,
            fmt::format("must hold the tokenizer's {} tokens ({}), found {}",
                        tokenizer->vocab_size(), tokenizer->name(), spec.model.vocab_size)}});
    }
    std::unique_ptr<data::Dataset> dataset_owner;
    spec::RunSpec effective = spec;
    if (spec.data.source == "file") {
      data::DataFileOptions fo;
      fo.path = spec.data.path;
      fo.format = spec.data.format;
      fo.train_on_input = spec.data.train_on_prompt;
      fo.max_tokens = spec.data.seq_len;
      fo.too_long = spec.data.too_long;
      fo.on_error = spec.data.on_error;
      fo.max_examples = spec.data.max_examples;
      fo.subset = spec.data.subset;
      fo.seed = spec.data.seed;
      auto file = std::make_unique<data::FileDataset>(fo, *tokenizer);
      effective.data.num_examples = file->size();
      const spec::DerivedCounts counts = spec::derive_counts(effective);
      if (counts.steps_per_epoch < 1) {
        throw spec::SpecError(
            {{spec.source_path, "data.path", 0,
              fmt::format("{} holds {} usable examples: 0 optimizer steps with micro_batch_size "
                          "{} x grad_accum_steps {}",
                          spec.data.path, file->size(), spec.train.micro_batch_size,
                          spec.train.grad_accum_steps)}});
      }
      rep.derived = {counts.effective_batch, counts.micro_batches_per_epoch, counts.steps_per_epoch,
                     counts.total_steps, counts.max_tokens_per_step};
      dataset_owner = std::move(file);
    } else {
      dataset_owner = std::make_unique<data::SyntheticDataset>(spec.data, *tokenizer);
    }
    const data::Dataset& dataset = *dataset_owner;
    data::BatcherOptions bo;
    bo.micro_batch_size = spec.train.micro_batch_size;
    bo.seq_len = spec.data.seq_len;
    bo.padding =
        spec.data.padding == "max_length" ? data::Padding::kMaxLength : data::Padding::kLongest;
    bo.shuffle = spec.data.shuffle;
    bo.train_on_prompt = spec.data.train_on_prompt;
    bo.seed = spec.data.seed;
    bo.pad_id = tokenizer->pad_id();
    data::Batcher batcher(dataset, bo, backend->device());
    const data::DataStats data_stats = data::fingerprint(dataset, spec.data.train_on_prompt);
    rep.data = report::DataInfo{dataset.description(), data_stats.examples, data_stats.tokens,
                                data_stats.loss_tokens, data_stats.fingerprint};
    phases.end("data_prepare");

    spdlog::info("{}: {} on {} ({}), {} steps, {} trainable of {} parameters", spec.output.name,
                 spec.model.preset, backend->info().name, backend->kind(), rep.derived.total_steps,
                 params.lora, params.base);
    train::Trainer trainer(effective, model, batcher, *backend);
    Progress progress(rep.derived.total_steps, spec.output.progress, spec.output.log_every_steps);
    const double train_start = clock.now();
    trainer.run(result, [&](const report::StepRecord& r) {
      const double now = clock.now();
      if (r.step == 1) first_step_end = now;
      progress.update(r, now - train_start);
    });
    progress.finish();
    phases.end_at("first_step", first_step_end);
    phases.end("training");
    rep.status = "completed";
  } catch (const std::exception& e) {
    // Keep what was measured: the phases that ended, the steps that finished, and why it
    // stopped. Then the error goes on to the CLI.
    rep.status = "failed";
    rep.error = first_line(e.what());
    if (first_step_end > 0.0) phases.end_at("first_step", first_step_end);
    phases.end("failed");
    rep.time_to_first_step_seconds =
        first_step_end > 0.0 ? first_step_end + rep.t0_before_process_seconds : 0.0;
    rep.steps = result.steps;
    if (backend) resolve_peak(o, backend->info(), so);
    rep.summary = metrics::summarize_run(rep.steps, result.flops, so);
    if (backend) rep.memory = backend->memory();
    fill_environment(backend.get(), rep.environment);
    rep.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + clock.now());
    report::write_report(rep, o.output_path, o.force);
    throw;
  }
  rep.time_to_first_step_seconds = first_step_end + rep.t0_before_process_seconds;
  rep.steps = std::move(result.steps);
  resolve_peak(o, backend->info(), so);
  rep.summary = metrics::summarize_run(rep.steps, result.flops, so);
  rep.memory = backend->memory();
  fill_environment(backend.get(), rep.environment);
  phases.end("summarize");

  // The write is timed on the real file, then the file is rewritten with that time in it (the
  // second write, of the same size, is not counted).
  const double write_start = clock.now();
  rep.finished_at_utc = metrics::iso8601_utc(clock.start_epoch_seconds() + write_start);
  report::write_report(rep, o.output_path, o.force);
  phases.end("report_write");
  report::write_report(rep, o.output_path, /*force=*/true);
  return rep;
}

}  // namespace ftbench::run
