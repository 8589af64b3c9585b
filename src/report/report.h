// The run report: the contract between `ftbench run` and everything that reads its output.
//
// Schema "ftbench.report/1.11", every field documented in docs/report-schema.md. Unknown values
// are std::nullopt and serialise as JSON null (never NaN). Readers accept "ftbench.report/1" and
// any "ftbench.report/1.x" and reject other major versions; unknown fields are ignored. Fields
// added in a minor version are optional when reading (absent in older reports).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/measured_gemm.h"
#include "util/stats/summary.h"

namespace ftbench::report {

using stats::SampleSummary;

inline constexpr const char* kSchema = "ftbench.report/1.13";     // what this code writes
inline constexpr const char* kSchemaFamily = "ftbench.report/1";  // what it reads (any 1.x)
inline constexpr int kSchemaMajor = 1;

struct HostInfo {
  std::string hostname;
  std::string os;      // e.g. "Debian GNU/Linux 12 (bookworm)"
  std::string kernel;  // uname release
  std::string cpu_model;
  int64_t cpu_logical_cores = 0;
  int64_t memory_bytes = 0;
};

struct DeviceInfo {
  std::string backend;  // cpu, cuda, rocm
  std::string name;     // GPU name, or the CPU model on cpu
  std::string arch;     // "sm_90", "gfx942", or the CPU ISA level
  int64_t count = 0;    // devices visible to the process
  int64_t index = 0;    // the device used
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> multiprocessor_count;
  std::string driver_version;   // what the CUDA / HIP runtime reports for the driver
  std::string runtime_version;  // CUDA runtime / HIP version
  // Since 1.2 (optional when reading; null / "" in older reports and on cpu).
  std::optional<int64_t> l2_cache_bytes;
  std::optional<int64_t> clock_khz;  // peak SM / shader clock
  std::optional<int64_t> memory_clock_khz;
  std::optional<int64_t> memory_bus_width_bits;
  std::string pci_bus_id;
  std::string kernel_driver_version;  // NVIDIA kernel module / amdgpu version
  std::string query_error;            // why device facts are missing; "" when none are
};

struct SoftwareInfo {
  std::string ftbench_version;
  std::string git_commit;  // "unknown" outside a git checkout
  std::string libtorch_version;
  std::string compiler;  // e.g. "GCC 12.2.0"
  std::string build_type;
  int64_t intra_op_threads = 0;
  int64_t inter_op_threads = 0;
  std::string blas;             // what LibTorch's CPU BLAS resolved to, when known
  std::string omp_wait_policy;  // OMP_WAIT_POLICY in effect ("" when unset)
  std::string host_allocator;   // C allocator tuning in effect (device/host_allocator.h)
  std::string libtorch_build;   // cpu, cuda, rocm (since 1.2; "" when not recorded)
  // The base image of ftbench's container, e.g. pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel
  // (device::container_image(); since 1.6; "" outside one, or not recorded).
  std::string container_image;
};

// One allow-listed environment variable that was set (device/recorded_environment.h).
struct EnvironmentVariable {
  std::string name;
  std::string value;
};

struct Environment {
  HostInfo host;
  DeviceInfo device;
  SoftwareInfo software;
  // Since 1.2: the allow-listed variables set for the run, in the allow-list's order; nullopt:
  // not recorded (older reports).
  std::optional<std::vector<EnvironmentVariable>> variables;
};

// Memory over one phase (since 1.2). Peaks are reset when the phase starts, so each covers
// that phase alone (plus what was already held when it started). Unset: not measured (cpu
// has no device figures).
struct PhaseMemory {
  std::optional<int64_t> peak_allocated_bytes;    // caching allocator (GPU)
  std::optional<int64_t> peak_reserved_bytes;     // caching allocator (GPU)
  std::optional<int64_t> peak_active_bytes;       // caching allocator (GPU)
  std::optional<int64_t> device_used_peak_bytes;  // device-wide used, sampled (GPU)
  std::optional<int64_t> peak_rss_bytes;          // host, when the peak could be reset
  std::optional<int64_t> rss_at_end_bytes;        // host, resident when the phase ended
};

struct Phase {
  std::string name;            // one of report/phase_names.h
  double start_seconds = 0.0;  // offset from process start
  double seconds = 0.0;
  // nullopt for phases that end before the run measures memory (launch, spec_load) and in
  // reports before 1.2.
  std::optional<PhaseMemory> memory = std::nullopt;
};

// One optimizer step, raw samples as measured.
struct StepRecord {
  int64_t step = 0;           // 1-based
  int64_t epoch = 0;          // 1-based
  double wall_seconds = 0.0;  // host steady clock, device synchronised at both ends
  double data_wait_seconds = 0.0;
  int64_t real_tokens = 0;    // non-padding tokens fed to the model
  int64_t padded_tokens = 0;  // tokens computed including padding
  int64_t loss_tokens = 0;    // tokens the loss is taken over
  double loss = 0.0;          // mean token loss of the step
  double lr = 0.0;
  double grad_norm = 0.0;    // global L2 norm of trainable gradients before clipping
  double model_flops = 0.0;  // frozen-base LoRA count, for this step's real tokens
  // The process (Segment::index) that ran the step: 1 unless the run was resumed (since 1.3;
  // 1 when absent).
  int64_t segment = 1;
};

struct MfuEntry {
  std::string formula;          // lora_frozen_base, six_n
  bool recompute = false;       // counts the activation-checkpointing forward again
  double flops_per_step = 0.0;  // mean over measured steps
  double achieved_tflops = 0.0;
  std::optional<double> mfu;  // fraction of peak; null without a peak
  // achieved_tflops / Summary::gemm_peak_tflops (since 1.2); null without a measured peak.
  // Default-initialised so that brace initialisation of the first five stays warning-free.
  std::optional<double> mfu_gemm = std::nullopt;
};

struct Summary {
  int64_t warmup_steps_excluded = 0;
  // Steps of the profile window left out besides the warm-up (since 1.12; 0 when absent): the
  // profiler's recording slows them.
  int64_t profiled_steps_excluded = 0;
  int64_t measured_steps = 0;
  SampleSummary step_seconds;
  double tokens_per_second_real = 0.0;
  double tokens_per_second_padded = 0.0;
  double padding_fraction = 0.0;
  double data_wait_fraction = 0.0;  // data wait / step wall time over measured steps
  std::optional<double> peak_tflops;
  std::string peak_source;  // "--peak-tflops", "spec", "gpu table: <name>", "none"
  std::vector<MfuEntry> mfu;
  // The measured GEMM peak for the run's dtype, the second MFU denominator (since 1.2; absent
  // in older reports: null / "none").
  std::optional<double> gemm_peak_tflops;
  std::string gemm_peak_source = "none";  // "gemm file: <path> <dtype> <shape>", or why none
  double final_loss = 0.0;
  int64_t loss_window = 0;
  double mean_last_losses = 0.0;
};

struct Memory {
  std::optional<int64_t> peak_allocated_bytes;    // caching allocator peak (GPU)
  std::optional<int64_t> peak_reserved_bytes;     // caching allocator reserved peak (GPU)
  std::optional<int64_t> device_used_peak_bytes;  // device-wide used, sampled (GPU)
  std::optional<int64_t> device_total_bytes;
  std::optional<int64_t> peak_rss_bytes;  // process peak resident set (host)
  // Since 1.2 (optional when reading).
  std::optional<int64_t> peak_active_bytes;   // caching allocator active peak (GPU)
  std::optional<int64_t> allocation_retries;  // allocations retried after freeing the cache
  std::optional<int64_t> oom_count;           // allocations that failed out of memory
  // Since 1.10: the peak `ftbench plan` predicts for this run's spec (economics/plan/memory.h),
  // tensors only, for peak_allocated_bytes to be held against; and what it assumed ("" unset).
  std::optional<int64_t> predicted_peak_bytes;
  std::string prediction_basis;
};

struct ParameterInfo {
  int64_t base = 0;
  int64_t trainable = 0;
  int64_t total = 0;
};

struct Derived {
  int64_t effective_batch = 0;
  int64_t micro_batches_per_epoch = 0;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t max_tokens_per_step = 0;
};

// Example lengths and what reading the data left out (since 1.1; optional when reading).
// Lengths are in tokens, after truncation to data.seq_len.
struct DataStatistics {
  std::string format;       // alpaca, chat, text, tokenized (file data), or synthetic
  int64_t records = 0;      // records read (file data: the whole file); = examples for synthetic
  int64_t skipped_bad = 0;  // bad records left out (data.on_error: skip)
  int64_t dropped_too_long = 0;  // examples left out for length (data.too_long: drop)
  int64_t truncated = 0;         // examples of the training set cut to data.seq_len
  double mean_length = 0.0;
  double p50_length = 0.0;  // stats::percentile (numpy "linear")
  double p90_length = 0.0;
  int64_t max_length = 0;
  double masked_fraction = 0.0;  // 1 - loss_tokens / tokens
};

// The validation set (since 1.1; optional when reading).
struct ValidationDataInfo {
  std::string source;
  int64_t examples = 0;
  int64_t tokens = 0;
  int64_t loss_tokens = 0;
};

// A file the run read its data or tokenizer from (since 1.11), for a run re-created from its
// report (`ftbench run --from-report`) to find it and to check it holds the same bytes.
struct InputFile {
  std::string key;    // the spec key that names it: data.path, data.validation_path, data.tokenizer
  std::string path;   // absolute, as the run found it
  int64_t bytes = 0;  // its size
  std::string sha256;  // lower-case hex SHA-256 of its bytes
};

// The data set actually trained (since 1.1).
struct DataInfo {
  std::string source;       // the data set's own description, e.g. "synthetic(seed=1234, n=2000)"
  int64_t examples = 0;     // examples in the data set
  int64_t tokens = 0;       // tokens over all examples
  int64_t loss_tokens = 0;  // tokens the loss is taken over, over all examples
  // Lower-case hex SHA-256 over every example's token ids and loss mask (docs/report-schema.md
  // gives the byte layout). Equal fingerprints mean the model saw the same data.
  std::string fingerprint;
  // Default-initialised so that brace initialisation of the first five stays warning-free.
  std::optional<DataStatistics> statistics = std::nullopt;      // nullopt: not recorded
  std::optional<ValidationDataInfo> validation = std::nullopt;  // nullopt: no validation data
  // The files the data and the tokenizer were read from (since 1.11; empty for synthetic data
  // with the byte tokenizer, and in older reports).
  std::vector<InputFile> files = {};
};

// One validation pass (since 1.1; optional when reading: absent = none).
struct Evaluation {
  int64_t after_step = 0;  // the optimizer step it followed
  double loss = 0.0;       // mean token loss over the pass; NaN (null) when not finite
  int64_t loss_tokens = 0;
  int64_t batches = 0;   // micro-batches run
  double seconds = 0.0;  // the pass, device synchronised at both ends
};

// One out-of-memory fallback (since 1.2): the step ran out of memory at one micro-batch split
// and was redone from its start at a smaller one, at the same effective batch.
struct Fallback {
  int64_t step = 0;  // the optimizer step (1-based) that ran out of memory and was redone
  int64_t from_micro_batch_size = 0;
  int64_t from_grad_accum_steps = 0;
  int64_t to_micro_batch_size = 0;
  int64_t to_grad_accum_steps = 0;
  // From the failed attempt's start (the step's clock start) to the restart of the step at the
  // new split: the failed attempt, freeing its memory and rebuilding the data pipeline. In no
  // step's wall_seconds.
  double seconds_lost = 0.0;
  std::string error;  // first line of the out-of-memory error
};

// The micro-batch split that actually ran (since 1.2; the spec keeps what was asked for).
struct Batching {
  int64_t micro_batch_size = 0;  // in effect when the run ended
  int64_t grad_accum_steps = 0;
  std::vector<Fallback> fallbacks;  // in order; empty when the run never ran out of memory
};

// One process of a run (since 1.3). A run stopped by a signal and resumed from its checkpoint
// has several, each a separate rental as far as billing goes; a plain run has one.
struct Segment {
  int64_t index = 1;   // 1-based
  std::string status;  // completed, failed, diverged, interrupted
  std::string started_at_utc;
  std::string finished_at_utc;
  int64_t first_step = 0;  // the optimizer steps (1-based) it ran; 0, 0 when none
  int64_t last_step = 0;
  // Rented time it accounts for: from its t0 (process start, or --t0/FTBENCH_T0) to its last
  // timed phase; for an earlier segment, to its checkpoint's save (a process killed without a
  // signal also ran, unrecorded, from its last checkpoint until it died).
  double run_seconds = 0.0;
  double time_to_first_step_seconds = 0.0;  // from its t0 to the end of its first step; 0: none
  std::string resumed_from;  // the checkpoint folder it started from; "" for the first
  // Steps it ran that the report does not keep: a process that ran on past its last checkpoint
  // and was lost, whose steps a later segment redid (schema 1.5; 0 before).
  int64_t discarded_steps = 0;
  // The CPU intra-op threads it ran with (schema 1.5): a resume with another count continues
  // the same job, but not bit for bit (reductions split differently). nullopt: not recorded.
  std::optional<int64_t> intra_op_threads;
};

nlohmann::ordered_json to_json(const Segment& segment);
// One element of a report's "segments" (or of a checkpoint folder's segment journal); throws
// ReportError "<source>: <path>.<field>: ..." for one that is not.
Segment segment_from_json(const nlohmann::json& json, const std::string& source,
                          const std::string& path);

// A checkpoint saved during the run (since 1.3).
struct CheckpointSave {
  int64_t step = 0;      // optimizer steps done when saved
  int64_t segment = 1;   // the process that saved it
  std::string reason;    // every_steps, every_minutes, signal, stop_after_steps
  std::string path;      // the checkpoint folder
  int64_t bytes = 0;     // its files' sizes together
  double seconds = 0.0;  // host clock, device synchronised before: gathering, writing, fsync
};

// One optimizer step as one rank of a job of several processes saw it.
struct RankStep {
  double wall_seconds = 0.0;        // this rank's step time (host clock, device synchronised)
  double collective_seconds = 0.0;  // of which host time blocked in collectives
};

// One rank of a job of several processes, as measured by itself and gathered by rank 0 at the
// end (since 1.7).
struct RankRecord {
  int64_t rank = 0;
  std::string host;                 // host name
  std::string device;               // "cpu", "cuda:3"
  std::vector<RankStep> steps;      // this process's steps, in order (those of `steps`)
  double collective_seconds = 0.0;  // in those steps, together
  int64_t collective_bytes = 0;     // given to the collectives in those steps (this rank's share)
  int64_t collective_calls = 0;
  std::optional<int64_t> peak_rss_bytes;
  // Since 1.8. The ranks this rank's split of the base spans (1: it held the whole base; nodes
  // of different sizes split differently under shard_base node).
  int64_t shard_group_size = 1;
  // The frozen base weights this rank holds between gathers (its slices of a split base, or the
  // whole base; norms included); unset when not recorded.
  std::optional<int64_t> base_bytes;
  // A split base, in those steps: the units gathered, their bytes as assembled on this rank, and
  // the host time waiting for them (also in collective_seconds). 0 for a whole base.
  int64_t gathers = 0;
  int64_t gather_bytes = 0;
  double gather_wait_seconds = 0.0;
  // The device allocator's peak over the run's phases; unset on CPU.
  std::optional<int64_t> peak_allocated_bytes;
};

// A job of several processes (since 1.7; null for one process): how it was launched, every
// rank's record and what they say together, over this process's steps after the warm-up (all
// of them when no step is left).
struct Distributed {
  std::string launch;   // local, torchrun, slurm
  std::string backend;  // the process group's: gloo
  // Since 1.8: distributed.shard_base as run (none, node, all); each rank's split is in its
  // record.
  std::string shard_base = "none";
  // Every rank in order; only this one's when the others could not be reached at the end (a
  // failed run).
  std::vector<RankRecord> ranks;
  // Median over the steps of (slowest rank's time - fastest rank's time).
  double step_skew_seconds = 0.0;
  std::optional<int64_t> straggler_rank;  // the rank with the largest step time together
  // Host time in collectives over step time, the ranks' mean: an upper bound of the
  // communication a step exposes (on CPU all of it is exposed; on GPUs some overlaps).
  double collective_share = 0.0;
  // Real tokens per second of the job, and per device (the job's over world_size).
  double tokens_per_second = 0.0;
  double tokens_per_second_per_device = 0.0;
};

// The base weights (since 1.4; optional when reading: absent = not recorded).
struct WeightsInfo {
  std::string source;  // "random", or "checkpoint" (a Hugging Face folder, model.checkpoint)
  std::string path;    // the checkpoint folder as the spec names it; "" for random
  std::string format;  // "safetensors"; "" for random
  int64_t files = 0;   // tensor files read
  int64_t tensors = 0;
  int64_t bytes = 0;  // tensor data read from the files
  // Reading and converting into the model (device synchronised), within the weight_load phase.
  double seconds = 0.0;
  double bytes_per_second = 0.0;  // bytes / seconds; 0 for random
  // Lower-case hex SHA-256 over every tensor's name, dtype, shape and first and last 4096 bytes
  // (docs/report-schema.md): equal for the same checkpoint wherever it lives, different for
  // other weights of the same shape. "" for random weights.
  std::string fingerprint;
};

// A file set the run wrote after training (since 1.4): the trained adapter in PEFT's format
// (output.adapter) or merged into full weights in Hugging Face layout (output.merged).
struct ExportRecord {
  std::string kind;  // peft_adapter, merged
  std::string path;  // the folder
  int64_t tensors = 0;
  int64_t bytes = 0;     // its files' sizes together
  double seconds = 0.0;  // gathering, writing, fsync
};

// One device's board energy over the sampling window (since 1.6).
struct DeviceEnergy {
  int64_t index = 0;       // the runtime's device index, as environment.device.index
  std::string pci_bus_id;  // how the management library found it
  std::string method;      // energy_counter, power_integration (device/energy.h)
  std::string source;      // the library call: "nvmlDeviceGetTotalEnergyConsumption"
  std::string library;     // "libnvidia-ml.so.1", "libamd_smi.so"
  double joules = 0.0;
  double sampled_seconds = 0.0;      // time between readings that contributed
  std::optional<double> mean_watts;  // joules / sampled_seconds; null when nothing was covered
  std::optional<double> peak_watts;  // counter: highest interval average; power: highest reading
  int64_t samples = 0;               // readings with the figure the method uses
  int64_t failed_reads = 0;
  int64_t counter_resets = 0;  // intervals over which the counter went backwards
};

// The sums over a report's devices that its top-level energy figures are made from (the run)
// and checked against (the reader): joules, mean and peak watts (nullopt unless every device has
// them), and the least sampled time.
struct DeviceEnergyTotals {
  double joules = 0.0;
  std::optional<double> mean_watts;
  std::optional<double> peak_watts;
  double least_sampled_seconds = 0.0;  // 0 for no device
};
DeviceEnergyTotals sum_device_energy(const std::vector<DeviceEnergy>& devices);

// Board energy of the devices this process trained on, sampled on a background thread from the
// first step's start to the last step's end (validation passes and checkpoint saves between
// steps included), since 1.6. The figures are null, and `reason` says why, where nothing was
// measured (cpu, no management library, no device sensor, no step). docs/methodology.md.
struct Energy {
  std::string reason;             // why the figures are null; "" when measured
  std::string method;             // energy_counter, power_integration, mixed; "" when not measured
  std::string source;             // the library call(s), joined by ", "; "" when not measured
  int64_t segment = 1;            // the process (Segment::index) whose training it covers
  double interval_seconds = 0.0;  // backend.energy_sample_ms / 1000
  double window_start_seconds = 0.0;  // the first reading, from process start (as phases)
  double window_seconds = 0.0;        // first reading to last; 0 when none was taken
  int64_t steps = 0;                  // that segment's optimizer steps (all in the window)
  int64_t tokens = 0;                 // their real (non-padding) tokens
  std::optional<double> joules;       // every device together
  std::optional<double> joules_per_step;
  std::optional<double> joules_per_million_tokens;
  std::optional<double> mean_watts;  // the devices' means together
  std::optional<double> peak_watts;  // the devices' peaks together: an upper bound of the joint one
  std::optional<double> sampled_seconds;  // the least-covered device's
  std::optional<double> coverage;         // sampled_seconds / window_seconds
  int64_t sample_count = 0;               // the devices' samples together
  std::vector<DeviceEnergy> devices;
};

// How the step was executed where the spec leaves a choice to ftbench or to LibTorch (since
// 1.12; optional when reading).
// What model.activation_checkpointing auto chose from (since 1.13): each policy's memory need
// by the plan, against what the device had.
struct PolicyNeed {
  std::string policy;
  int64_t bytes = 0;
};
struct CheckpointingChoice {
  int64_t usable_bytes = 0;  // the device's memory less the plan's headroom
  bool fits = false;         // false: not even full fits; full was chosen, the least memory
  std::vector<PolicyNeed> needed_bytes;  // none, selective, full
};

struct Execution {
  // The attention kernel scaled_dot_product_attention dispatches to for the run's shapes, dtype
  // and device (LibTorch's own choice, at::_fused_sdp_choice): flash_attention,
  // efficient_attention, cudnn_attention, math, overrideable; blocked_math for ftbench's blocked
  // CPU attention (LibTorch before 2.2); "unknown" where this LibTorch cannot say.
  std::string attention_kernel;
  // The activation-checkpointing policy the run used: full, selective or none (1.12: full or
  // none).
  std::string activation_checkpointing;
  // model.activation_checkpointing auto: what it chose from (since 1.13; nullopt otherwise).
  std::optional<CheckpointingChoice> checkpointing_choice;
  // ftbench's own GPU kernels (model/torch/gpu_kernels.h) ran where they apply:
  // FTBENCH_GPU_KERNELS=1 on a GPU with a build that has them (since 1.13; false when absent).
  bool gpu_kernels = false;
  // The step's fused blocks (model/torch/fused_blocks.h) were on; off only with
  // FTBENCH_FUSED_BLOCKS=0, the benchmark aid that runs the step as it was before them.
  bool fused_blocks = true;
};

// An op of the profile: its calls and self time over the profiled steps.
struct ProfileOp {
  std::string name;
  int64_t calls = 0;
  double self_seconds = 0.0;
  double flops = 0.0;  // the profiler's FLOP count (a GEMM's 2mnk), 0 where it counts none
};

// One of ftbench's scopes (forward, loss, backward, recompute, optimizer) over the profiled
// steps: with what runs inside it, and without the scopes nested in it.
struct ProfileScope {
  std::string name;
  int64_t calls = 0;
  double seconds = 0.0;
  double self_seconds = 0.0;
};

// `ftbench run --profile-steps` (since 1.12; absent without it).
struct Profile {
  int64_t first_step = 0;        // as asked
  int64_t last_step = 0;         // the last step recorded (earlier than asked when the run stopped)
  std::string trace;             // the Chrome trace's path, as written
  std::string ops_table;         // the per-op table's path (CSV)
  std::string kernels_table;     // the per-kernel table's path (CSV)
  bool device_activity = false;  // the device's kernels were recorded (a GPU run)
  double op_self_seconds = 0.0;  // every op's self time together
  double kernel_seconds = 0.0;   // every kernel's and device copy's time together
  double flops = 0.0;            // the profiler's FLOP count of every op
  // The leaf ops' tensor inputs (ops that call no other op), over the calls whose bytes are
  // known, and the leaf calls whose are not.
  int64_t leaf_input_bytes = 0;
  int64_t leaf_calls_without_bytes = 0;
  std::vector<ProfileScope> scopes;
  std::vector<ProfileOp> top_ops;        // the first ops by self time (at most 12)
  std::vector<ProfileOp> attention_ops;  // the attention ops that ran
};

struct Report {
  std::string schema = kSchema;
  std::string run_name;
  std::string status;          // completed, failed, diverged, interrupted
  std::string error;           // why a failed run stopped (first line of the message); "" otherwise
  std::string started_at_utc;  // ISO 8601
  std::string finished_at_utc;
  std::string spec_path;
  // The folder the run started in, absolute (since 1.11; "" in older reports): what the spec's
  // relative paths were relative to.
  std::string working_directory;
  int64_t world_size = 1;       // processes (devices) the run used; 1 when absent (before 1.1)
  nlohmann::ordered_json spec;  // resolved spec (spec::to_json)
  std::string spec_fingerprint;
  Environment environment;
  std::optional<DataInfo> data;  // nullopt: not recorded (reports before 1.1)
  ParameterInfo parameters;
  Derived derived;
  std::optional<Batching> batching;        // nullopt: not recorded (reports before 1.2)
  std::string t0_source;                   // process_start, --t0, FTBENCH_T0
  double t0_before_process_seconds = 0.0;  // how far the external t0 lies before process start
  std::vector<Phase> phases;
  double time_to_first_step_seconds = 0.0;
  std::vector<StepRecord> steps;
  std::vector<Evaluation> evaluations;  // in order; empty without validation data
  std::optional<MeasuredGemm> gemm;     // nullopt: no --gemm given (and reports before 1.2)
  // Every process of the run in order (empty in reports before 1.3: one, implied).
  std::vector<Segment> segments;
  std::vector<CheckpointSave> checkpoints;  // in order, over every segment
  std::optional<WeightsInfo> weights;       // nullopt: not recorded (reports before 1.4)
  std::vector<ExportRecord> exports;        // in order; empty when nothing was exported
  Summary summary;
  Memory memory;
  std::optional<Energy> energy;            // nullopt: not recorded (reports before 1.6)
  std::optional<Distributed> distributed;  // nullopt: one process (and reports before 1.7)
  std::optional<Execution> execution;      // nullopt: not recorded (reports before 1.12)
  std::optional<Profile> profile;          // nullopt: no --profile-steps (and before 1.12)
};

// Always writes "schema": kSchema (the version this code produces), whatever report.schema
// holds. Non-finite doubles and unset optionals are written as null.
nlohmann::ordered_json to_json(const Report& report);

// Throws ReportError naming `source` and the offending field when the JSON is not a report of
// a supported schema, a required field is missing or of the wrong type, or its figures cannot
// all be true (docs/report-schema.md, Consistency: steps within their segments and the run,
// counts non-negative, durations plausible). Report::schema keeps
// the version string found. Unknown fields are ignored.
Report from_json(const nlohmann::json& json, const std::string& source);
// Same, keeping the key order of `spec` as written (nlohmann::json sorts object keys).
Report from_json(const nlohmann::ordered_json& json, const std::string& source);
// The partial report a checkpoint carries: as from_json, but its run.status may also be
// "unfinished" (a periodic save of a run that went on after it: the process may then have died
// without a word, and a resume continues from this report).
Report checkpoint_report_from_json(const nlohmann::ordered_json& json, const std::string& source);

// The `environment` object alone, as a report writes and reads it: for other files that say
// where they were measured (`ftbench gemm` results). The reader throws ReportError naming
// `source` and the path below "environment".
nlohmann::ordered_json to_json(const Environment& environment);
Environment environment_from_json(const nlohmann::json& json, const std::string& source);

}  // namespace ftbench::report
