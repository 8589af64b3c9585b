// The run driver's own header (src/run/torch): the Run that run_benchmark (runner.h) drives.
// runner.cpp holds its construction and set-up phases, run_training.cpp the step loop and
// what follows it.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>
#include "ftbench/run/runner.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include "ftbench/data/batcher.h"
#include "ftbench/data/data_from_spec.h"
#include "ftbench/data/file_dataset.h"
#include "ftbench/data/fingerprint.h"
#include "ftbench/data/load_tokenizer.h"
#include "ftbench/data/slice_dataset.h"
#include "ftbench/data/synthetic_dataset.h"
#include "ftbench/device/backend.h"
#include "ftbench/device/dtype.h"
#include "ftbench/device/energy_meter.h"
#include "ftbench/device/environment.h"
#include "ftbench/device/host_info.h"
#include "ftbench/device/host_memory.h"
#include "ftbench/device/memory_meter.h"
#include "ftbench/dist/communicator.h"
#include "ftbench/dist/sharded_base.h"
#include "ftbench/hf/hf_load.h"
#include "ftbench/hf/peft_adapter.h"
#include "ftbench/io/output_file.h"
#include "ftbench/io/output_rules.h"
#include "ftbench/metrics/gpu_peaks.h"
#include "ftbench/metrics/memory_peaks.h"
#include "ftbench/metrics/rank_figures.h"
#include "ftbench/metrics/run_summary.h"
#include "ftbench/metrics/stats.h"
#include "ftbench/metrics/step_profiler.h"
#include "ftbench/model/gpu_kernels.h"
#include "ftbench/model/llama.h"
#include "ftbench/model/sdpa.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/plan/checkpointing.h"
#include "ftbench/plan/memory.h"
#include "ftbench/plan/plan.h"
#include "ftbench/report/phase_names.h"
#include "ftbench/report/report_io.h"
#include "ftbench/report/run_status.h"
#include "ftbench/run/mllog.h"
#include "ftbench/run/outputs.h"
#include "ftbench/run/phase_timer.h"
#include "ftbench/run/profile_outputs.h"
#include "ftbench/run/progress.h"
#include "ftbench/run/recorder.h"
#include "ftbench/run/rerun.h"
#include "ftbench/run/resume_point.h"
#include "ftbench/spec/canonical.h"
#include "ftbench/spec/choices.h"
#include "ftbench/spec/derived.h"
#include "ftbench/spec/spec_error.h"
#include "ftbench/spec/spec_loader.h"
#include "ftbench/text/messages.h"
#include "ftbench/train/cadence.h"
#include "ftbench/train/checkpoint.h"
#include "ftbench/train/stop_signals.h"
#include "ftbench/train/trainer.h"
#include "ftbench/version.h"

namespace ftbench::run::detail {

namespace phase = report::phase;

// The MFU denominators: the peak (--peak-tflops, the spec, or the GPU table by device name) and
// the measured GEMM peak for the run's dtype, when it was measured on this run's device.
void resolve_peak(const RunOptions& o, const report::DeviceInfo& device,
                  metrics::SummaryOptions& s);
void resolve_gemm_peak(const RunOptions& o, const report::DeviceInfo& device,
                       metrics::SummaryOptions& s);

// FTBENCH_FUSED_BLOCKS: unset or "1" on, "0" off (BadInput otherwise).
bool fused_blocks_from_environment();

// Example lengths and the share of tokens without loss, for any data set; the file reader's own
// counts (records, skipped, dropped, truncated) are filled in by the caller for file data.
report::DataStatistics length_statistics(const data::Dataset& dataset,
                                         const data::DataStats& counts, int64_t seq_len);

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
  void continue_after_setup_stop();
  void start_report();
  // The set-up phases, in order.
  void init_backend();
  void build_model();
  void load_weights();
  void check_weights() const;
  void count_base_bytes();
  void prepare_data();
  void prepare_validation(const data::BatcherOptions& train_options);
  void load_checkpoint();
  // The step loop and what runs between steps.
  void train();
  void on_step(const report::StepRecord& r);
  // --profile-steps: the window checked against the run's steps, the profiler started before
  // the window's first step, the files written after its last (or when the run ends inside it).
  void check_profile_window() const;
  void start_profiler();
  void finish_profile(std::vector<metrics::ProfileEvent> events, int64_t last_step) noexcept;
  // execution: the attention kernel and the checkpointing policy.
  void record_execution();
  // checkpointing_: the spec's policy, or auto's choice by the memory plan on this device.
  void resolve_checkpointing();
  // The memory plan's options for this run's device, LibTorch and step (plan/memory.h).
  plan::MemoryOptions memory_options(bool fused_blocks) const;
  void end_training_phase_at(int64_t step);
  void evaluate_after(int64_t step);
  std::string save_checkpoint(int64_t step, train::SaveReason why, bool stopping);
  // After training.
  void export_outputs();
  void export_to(const char* kind, const char* phase_name, const std::string& dir);
  report::Report finish();
  // memory.predicted_peak_bytes: the memory plan of this run (plan/memory.h), for its measured
  // peak.
  void record_memory_prediction();
  void record_failure(const std::exception& e);
  // The objects the phases built, in the reverse of their order, when training is over.
  void release_run_objects();
  // Shared by the phases.
  void end_setup_phase(const char* name);
  // The event log's job description and its epoch of a step.
  MlLogJob mllog_job() const;
  // A run that ends by an error: run_stop "aborted"; by a stop after a step (`resumable`: its
  // checkpoint is saved), the block closed and the log left for the resume to continue.
  void stop_mllog(bool resumable) noexcept;
  int64_t epoch_of(int64_t step) const;
  void stop_if_asked(const char* phase_name) const;
  std::optional<int64_t> intra_op_threads() const;
  // Rank 0 (or the only process): the one that writes the report, checkpoints and exports.
  bool lead() const { return o_.launch.rank == 0; }
  // Data parallel: the ranks agree at each step's end whether to stop (a signal on any rank) and
  // whether a periodic save is due (by rank 0's clock). Returns the signal to stop for (0: none)
  // and sets `since_save` to rank 0's seconds since the last save.
  int agree_on_stop(double& since_save);
  void check_launch() const;
  // Data parallel: every rank runs rank 0's job (spec and data fingerprints), checked before any
  // collective whose shape depends on it; dist::LaunchError on every rank otherwise.
  void check_same_job();
  // Data parallel, right after the process group formed: every rank runs the job the same way
  // (the spec's distributed section, outside the fingerprint); dist::LaunchError otherwise.
  void check_same_launch_settings();
  // distributed.shard_base: the group the frozen base is split over (the node's ranks or the
  // job's), formed in init_backend; null when the base stays whole on this rank.
  dist::Communicator* shard_group() const;
  // Data parallel, after the last step and before the exports (which only rank 0 writes, and
  // which may take longer than a collective may wait): every rank's record to rank 0, into the
  // report's `distributed`. A failed run's report has only this rank's.
  void gather_rank_records();
  report::RankRecord own_rank_record() const;
  // The report's `distributed` without its ranks: the launch, the group, the base's split.
  report::Distributed distributed_header() const;
  report::Segment current_segment(const std::string& status) const;
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
  std::optional<report::Report> old_report_;
  bool replace_report_ = false;
  std::optional<io::OutputClaim> report_claim_;
  // --resume latest found no checkpoint in the folder: the run starts at step 1 (when nothing
  // of this job's steps would be lost, continue_after_setup_stop()).
  bool resume_found_no_checkpoint_ = false;
  // The report at -o is of this job stopped before its first step: its processes are earlier
  // segments of this run, and the report (and its event log) are this run's to replace.
  bool continues_setup_stop_ = false;

  // The report, fed by the phases and assembled from what they measured.
  Recorder recorder_;
  report::Report& rep_ = recorder_.report();
  model::ParamCounts params_;
  std::optional<PhaseTimer> phases_;
  std::optional<device::MemoryMeter> memory_;
  metrics::SummaryOptions summary_options_;
  // Filled step by step, so that a run that fails part-way still reports what it measured.
  train::TrainResult result_;
  std::unique_ptr<device::Backend> backend_;
  std::unique_ptr<dist::Communicator> comm_;  // a group of one for a single process
  // The node's ranks, for distributed.shard_base node in a job of several nodes (within one
  // node, comm_ is that group).
  std::unique_ptr<dist::Communicator> node_comm_;
  bool ranks_gathered_ = false;  // rep_.distributed holds every rank's record
  std::optional<device::EnergyMeter> energy_;
  // The segment journal next to the checkpoints (train/checkpoint_files.h): kept from the
  // start by a resumed run and from its first save by a fresh one (before, there is nothing to
  // resume from), updated at every phase's end, every save, every minute of training and at
  // the end, so that the next resume bills this process whatever becomes of it.
  // model.activation_checkpointing as the model is built: full, selective or none
  // (resolve_checkpointing(); auto's choice and why in checkpointing_choice_).
  std::string checkpointing_;
  std::optional<report::CheckpointingChoice> checkpointing_choice_;
  bool journal_on_ = false;
  bool journal_failed_ = false;
  double journal_written_ = 0.0;

  // Built by the set-up phases, released in reverse order after training.
  model::Llama model_{nullptr};
  // The frozen base split over shard_group() (distributed.shard_base); null: whole. Declared
  // after the model, whose units it holds, so that it goes first.
  std::unique_ptr<dist::ShardedBase> sharded_;
  // The frozen base weights this rank holds between gathers, once they are loaded, and the ranks
  // its split spans (1: whole).
  std::optional<int64_t> base_bytes_;
  int64_t shard_group_size_ = 1;
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
  // The MLPerf-style event log (output.mllog), rank 0's; unset without one.
  std::unique_ptr<MlLog> mllog_;
  // --profile-steps, rank 0's; unset without it.
  std::unique_ptr<metrics::StepProfiler> profiler_;
  ProfilePaths profile_paths_;

  // The step loop's state: when it pauses for a validation pass, a save or a stop.
  std::optional<train::Cadence> cadence_;
  int64_t first_step_ = 1;
  int64_t training_split_at_ = 1;  // the step whose end last ended a phase
  double last_save_ = 0.0;
  double train_start_ = 0.0;
};

}  // namespace ftbench::run::detail
