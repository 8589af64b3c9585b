#include "run/torch/run_driver.h"

#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "data/data_from_spec.h"
#include "device/address_space_reserve.h"
#include "device/process_clock.h"
#include "device/torch/dtype.h"
#include "device/torch/memory_meter.h"
#include "model/hf/torch/hf_load.h"
#include "model/hf/torch/peft_adapter.h"
#include "model/shape_math.h"
#include "model/torch/sdpa.h"
#include "report/phase_names.h"
#include "report/report.h"
#include "report/report_io.h"
#include "report/run_status.h"
#include "report/summary_text.h"
#include "run/torch/run_memory_plan.h"
#include "run/torch/step_profile.h"
#include "run/torch/training_loop.h"
#include "spec/canonical.h"
#include "spec/checkpoint_config.h"
#include "spec/choices.h"
#include "spec/derived.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"
#include "train/checkpoint_files.h"
#include "train/dist/launch.h"
#include "train/torch/checkpoint.h"
#include "train/torch/trainer.h"
#include "util/text/iso8601.h"
#include "util/text/units.h"

namespace ftbench::run::detail {

namespace phase = report::phase;

namespace {

// What the exported adapter names as its base: the checkpoint folder as the spec gives it; ""
// (null in adapter_config.json) for random weights, which no loader could fetch.
std::string base_model_name(const spec::RunSpec& spec) { return spec.model.checkpoint; }

// The first line of an error message (LibTorch appends a backtrace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

// A job of several processes needs c10d's Gloo group in this build and an accumulation that
// splits over its ranks; refused before any machine time goes into it.
void check_launch(const RunContext& context) {
  const dist::Launch& l = context.request.launch;
  if (!l.distributed()) return;
  if (!dist::available()) {
    throw dist::LaunchError(fmt::format(
        "{}: this ftbench was built without c10d's Gloo group (LibTorch's ProcessGroupGloo.hpp "
        "with the gloo headers, Debian's libgloo-dev), so it runs one process only",
        dist::describe(l)));
  }
  // A CPU run is known to be one from its spec: refused here, before any report, as a build
  // without NCCL is (a device of auto on a machine without a GPU is found out at the backend).
  if (context.spec.distributed.backend == spec::choice::dist_backend::kNccl &&
      context.spec.backend.device == spec::choice::device::kCpu) {
    throw spec::SpecError({spec::issue_at(
        context.spec, "distributed.backend",
        "nccl moves GPU tensors, and this run is on the CPU (backend.device: cpu): use auto or "
        "gloo")});
  }
  if (context.spec.distributed.backend == spec::choice::dist_backend::kNccl &&
      !dist::nccl_available()) {
    throw spec::SpecError({spec::issue_at(
        context.spec, "distributed.backend",
        "nccl: this ftbench was built without c10d's NCCL group (a CUDA or ROCm LibTorch with "
        "ProcessGroupNCCL.hpp and nccl.h or rccl.h); use auto or gloo (the GPU tensors then "
        "go through host memory)")});
  }
  if (context.spec.distributed.shard_base == spec::choice::shard_base::kNode && !l.node_known) {
    throw dist::LaunchError(fmt::format(
        "{}: distributed.shard_base node splits the base among the ranks of each node, and this "
        "job spans nodes ({} ranks here of {}) without saying which node this rank is on: set "
        "GROUP_RANK (torchrun sets it) or SLURM_NODEID (srun does), or use shard_base all",
        dist::describe(l), l.local_world_size, l.world_size));
  }
  const int64_t a = context.spec.train.grad_accum_steps;
  if (a % l.world_size != 0) {
    throw spec::SpecError({spec::issue_at(
        context.spec, "train.grad_accum_steps",
        fmt::format("{} micro-batches per step do not split over {} ranks: the key counts the "
                    "job's micro-batches per optimizer step, over every rank, so each rank runs "
                    "grad_accum_steps / {}; use a multiple of {} (e.g. {}) and keep "
                    "micro_batch_size x grad_accum_steps the effective batch",
                    a, l.world_size, l.world_size, l.world_size,
                    (a / l.world_size + 1) * l.world_size))});
  }
}

}  // namespace

RunDriver::RunDriver(const RunOptions& options, const device::ProcessClock& clock,
                     const train::StopSignals& signals)
    : context_(options, clock, signals),
      measured_(clock),
      assembly_(context_, measured_, built_, checkpointing_.policy),
      journal_(context_, measured_, assembly_) {
  check_launch(context_);
  check_before_start(context_, start_, measured_.builder);
  record_start();
  // The steps are counted now, but for a data file's (checked again once it is read).
  check_stop_after_steps(context_, start_, measured_.measurements.derived.total_steps);
  if (context_.lead())
    check_profile_window(context_, start_, measured_.measurements.derived.total_steps);
  if (context_.lead() && !context_.instrumentation.mllog_path.empty()) {
    observers_.add(std::make_unique<EventLogObserver>(
        context_, measured_.measurements, context_.request.force || start_.continues_setup_stop,
        start_.resume.has_value(), start_.first_step()));
  }
}

int64_t RunDriver::last_step() const {
  // Before the step loop, 0, even for a resumed run (the event log's run_stop of a stop during
  // set-up counts no samples).
  return last_step_made(measured_.result, loop_started_ ? start_.first_step() : 1);
}

void RunDriver::record_start() {
  report::RunStart& run = measured_.measurements.start;
  run.run_name = context_.spec.output.name;
  std::error_code cwd_error;
  run.working_directory = std::filesystem::current_path(cwd_error).string();
  run.world_size = context_.request.launch.world_size;
  run.started_at_utc = text::iso8601_utc(context_.clock.start_epoch_seconds());
  run.spec_path = context_.spec.source_path;
  run.spec = spec::to_json(context_.spec);
  run.spec_fingerprint = context_.spec_fingerprint;
  run.t0_source = context_.instrumentation.t0_epoch_seconds ? context_.instrumentation.t0_source
                                                            : "process_start";
  run.t0_before_process_seconds =
      context_.instrumentation.t0_epoch_seconds
          ? context_.clock.start_epoch_seconds() - *context_.instrumentation.t0_epoch_seconds
          : 0.0;

  const model::ParamCounts params =
      model::count_parameters(context_.spec.model, context_.spec.lora);
  // A data file's counts are known once it is read (data_prepare); until then none.
  const spec::DerivedCounts derived = data::source_of(context_.spec.data) == data::Source::kFile
                                          ? spec::derive_counts_from_batches(context_.spec, 0)
                                          : spec::derive_counts(context_.spec);
  measured_.measurements.parameters = params;
  measured_.measurements.derived = derived;

  measured_.measurements.phases.push_back({phase::kLaunch, 0.0, context_.clock.launch_seconds()});
  measured_.phases.emplace(context_.clock, measured_.measurements.phases,
                           context_.clock.launch_seconds());
  measured_.phases->end_at(phase::kSpecLoad, context_.instrumentation.spec_loaded_seconds);
  measured_.memory.emplace();
  measured_.phases->measure_memory(&*measured_.memory);

  measured_.summary.warmup_steps = context_.spec.train.timing_warmup_steps;
  measured_.summary.devices = context_.request.launch.world_size;
  measured_.summary.loss_window = context_.spec.train.loss_window;
  measured_.measurements.gemm = context_.instrumentation.gemm;
  measured_.result.micro_batch_size = context_.spec.train.micro_batch_size;
  measured_.result.grad_accum_steps = context_.spec.train.grad_accum_steps;

  // Every process of a run that saves checkpoints is in the journal from its start: one killed
  // before its first save is billed by the next (start_checks.cpp, continue_after_setup_stop).
  if (start_.resume || start_.checkpoint_lock) journal_.keep();
  observers_.add(&journal_);
  observers_.add(std::make_unique<EnergyObserver>(context_, measured_, built_.backend));
  measured_.phases->after_each_phase(
      [this] { observers_.on_phase(measured_.measurements.phases.back()); });
  // A resumed process is in the journal from now on, whatever becomes of it.
  journal_.update(report::status::kUnfinished);
}

report::Report RunDriver::execute() {
  try {
    // A stop asked for since the process started (while LibTorch loaded, while the spec was
    // read) ends the run here, with its report: that time was rented too.
    stop_if_asked(context_, start_, phase::kSpecLoad);
    set_up();
    observers_.add(std::make_unique<ProgressObserver>(context_, measured_.measurements));
    observers_.add(std::make_unique<RankFaultObserver>(context_));
    loop_started_ = true;
    TrainingLoop(context_, start_, measured_, built_, observers_, journal_, assembly_).run();
    // An observer that fails here (the event log's last write) fails the run.
    observers_.on_finish(RunEnd::kCompleted, context_.clock.now(), last_step());
    assembly_.gather_rank_records();
    export_outputs();
  } catch (const std::exception& e) {
    const bool stopped = dynamic_cast<const train::Interrupted*>(&e) != nullptr;
    try {
      observers_.on_finish(stopped ? RunEnd::kStopped : RunEnd::kFailed, context_.clock.now(),
                           last_step());
    } catch (const std::exception& observer_error) {
      // The run's own error is the one to report.
      spdlog::warn("{}", observer_error.what());
    }
    built_.release();
    record_failure(e);
    throw;
  }
  built_.release();
  return finish();
}

void RunDriver::set_up() {
  start_backend(context_, start_, built_, measured_);
  end_setup_phase(phase::kBackendInit);
  checkpointing_ = resolve_checkpointing(context_, start_, built_);
  measured_.summary.recompute = checkpointing_.policy == spec::choice::checkpointing::kFull;
  build_model(context_, checkpointing_, built_);
  record_execution();
  end_setup_phase(phase::kModelBuild);
  load_weights(context_, start_, built_, measured_.measurements);
  end_setup_phase(phase::kWeightLoad);
  observers_.on_run_start(
      context_.clock.now(),
      fmt::format("{}x{}", context_.request.launch.world_size, built_.backend->info().name));
  prepare_data(context_, built_, measured_.measurements);
  check_stop_after_steps(context_, start_, measured_.measurements.derived.total_steps);
  end_setup_phase(phase::kDataPrepare);
  check_same_job(context_, built_, measured_.measurements.data->train.counts.fingerprint);
  build_trainer(context_, built_);
  if (start_.resume) {
    load_checkpoint(context_, start_, built_, measured_.measurements);
    measured_.phases->end(phase::kCheckpointLoad);
    spdlog::info("resuming after step {} from {}", start_.resume->manifest.step,
                 start_.resume->folder);
  }
}

void RunDriver::end_setup_phase(const char* name) {
  measured_.phases->end(name);
  stop_if_asked(context_, start_, name);
}

void RunDriver::record_execution() {
  report::ExecutionChoices e;
  const spec::ModelSpec& m = context_.spec.model;
  e.attention_kernel = model::attention_kernel_name(
      built_.backend->device(), device::scalar_type_of(m.dtype), m.n_heads, m.n_kv_heads,
      m.dim / m.n_heads, context_.spec.data.padding == spec::choice::padding::kPack);
  e.activation_checkpointing = checkpointing_.policy;
  e.checkpointing_choice = checkpointing_.choice;
  e.fused_blocks = built_.model->fused();
  e.gpu_kernels = built_.model->gpu_kernels();
  measured_.measurements.execution = e;
}

void RunDriver::export_outputs() {
  if (!context_.lead()) {
    // The adapters are bitwise equal on every rank (Trainer::run checked); a split base's
    // merged export gathers every unit from every rank while rank 0 writes it. The device waits
    // for this rank's part (on NCCL the gathers are only queued) before anything ends.
    if (!context_.merged_dir.empty()) built_.model->follow_pass(model::GatherPass::kMergedExport);
    built_.backend->synchronize();
    return;
  }
  try {
    if (!context_.adapter_dir.empty())
      export_to("peft_adapter", phase::kAdapterExport, context_.adapter_dir);
  } catch (const std::exception&) {
    // The other ranks are in the merged export's gathers already: met, so that they end too.
    if (!context_.merged_dir.empty()) {
      try {
        built_.model->follow_pass(model::GatherPass::kMergedExport);
      } catch (const std::exception&) {
        // The peers are gone too; the export's own failure is the one to report.
      }
    }
    throw;
  }
  if (!context_.merged_dir.empty()) export_to("merged", phase::kMergedExport, context_.merged_dir);
}

void RunDriver::export_to(const char* kind, const char* phase_name, const std::string& dir) {
  built_.backend->synchronize();
  const double start = context_.clock.now();
  const hf::ExportStats x =
      std::string(kind) == "peft_adapter"
          ? hf::write_peft_adapter(built_.model, context_.spec.model, context_.spec.lora,
                                   base_model_name(context_.spec), dir, context_.request.force)
          : hf::write_merged_hf(built_.model, context_.spec.model, dir, context_.request.force,
                                5'000'000'000, context_.spec.model.checkpoint);
  const double seconds = context_.clock.now() - start;
  measured_.measurements.exports.push_back({kind, dir, x.tensors, x.bytes, seconds});
  measured_.phases->end(phase_name);
  spdlog::info("{}: {} ({} tensors, {} in {:.3f} s)", kind, dir, x.tensors,
               text::format_bytes(x.bytes), seconds);
}

report::Report RunDriver::finish() {
  assembly_.assemble(report::status::kCompleted);
  measured_.phases->end(phase::kSummarize);
  measured_.phases->after_each_phase(nullptr);
  journal_.update(report::status::kCompleted);
  assembly_.before_write();
  const report::ReportBuilder& builder = measured_.builder;
  if (!context_.lead()) return builder.report();  // rank 0 writes the job's report
  report::write_report(builder.report(), context_.request.output_path, start_.replace_report);
  measured_.phases->end(phase::kReportWrite);
  assembly_.assemble(report::status::kCompleted);
  report::write_report(builder.report(), context_.request.output_path, /*force=*/true);
  return builder.report();
}

void RunDriver::record_failure(const std::exception& e) {
  // Room to build the failed report in when the run failed for want of memory: the JSON library
  // cannot fail an allocation while it frees a document (address_space_reserve.h). Without room,
  // no report, journal entry or record is built: the error alone goes on (exit 3).
  if (!device::release_room_for_failure_path()) {
    spdlog::error(
        "{}: the failed run's report was not written: out of memory (less than {} MiB "
        "of address space left to build it)",
        context_.request.output_path, device::kFailureReserveBytes >> 20);
    return;
  }
  const bool interrupted = dynamic_cast<const train::Interrupted*>(&e) != nullptr;
  const bool diverged = dynamic_cast<const train::Diverged*>(&e) != nullptr;
  measured_.measurements.error = dynamic_cast<const std::bad_alloc*>(&e) != nullptr
                                     ? "out of memory: an allocation failed (std::bad_alloc)"
                                     : first_line(e.what());
  const std::string status = interrupted ? report::status::kInterrupted
                             : diverged  ? report::status::kDiverged
                                         : report::status::kFailed;
  measured_.phases->after_each_phase(nullptr);
  measured_.phases->end(interrupted ? phase::kInterrupted : phase::kFailed);
  assembly_.assemble(status);
  journal_.update(status, &measured_.builder.report().segments.back());
  // A checkpoint that cannot be used was found before any training: no report of a run that
  // never started is left behind, and an existing one is kept. A resume that fails leaves the
  // interrupted run's report as it was (its own time is in the segment journal, billed by the
  // next resume).
  const bool keep_interrupted_report =
      start_.resume && !interrupted && start_.old_report_status == report::status::kInterrupted;
  if (keep_interrupted_report) {
    spdlog::warn(
        "{} is kept as the interrupted run left it; this attempt is segment {} in {}",
        context_.request.output_path, measured_.builder.segment_index(),
        (std::filesystem::path(context_.checkpoint_dir) / train::kSegmentJournal).string());
  }
  // A launch that is not one job (dist::LaunchError) is bad input, found before training: no
  // report either.
  if (!context_.lead() || keep_interrupted_report ||
      dynamic_cast<const train::CheckpointError*>(&e) != nullptr ||
      dynamic_cast<const dist::LaunchError*>(&e) != nullptr ||
      dynamic_cast<const spec::HfCheckpointError*>(&e) != nullptr) {
    return;
  }
  try {
    report::write_report(measured_.builder.report(), context_.request.output_path,
                         start_.replace_report);
  } catch (const std::bad_alloc&) {
    spdlog::error("{}: the failed run's report was not written: out of memory",
                  context_.request.output_path);
  } catch (const std::exception& write_error) {
    // The run's own error is the one to report; the lost report is logged (a full disk often
    // fails both).
    spdlog::error("{}", write_error.what());
  }
}

}  // namespace ftbench::run::detail

namespace ftbench::run {

report::Report run_benchmark(const RunOptions& options, const device::ProcessClock& clock,
                             const train::StopSignals& signals) {
  detail::RunDriver driver(options, clock, signals);
  return driver.execute();
}

}  // namespace ftbench::run
