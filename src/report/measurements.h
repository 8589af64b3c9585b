// What one `ftbench run` process measures, in the measuring code's own terms: the run (run/)
// fills a Measured as its phases go, and the report builder (report_builder.h) maps it into the
// report's schema (report.h, through records.h) at every assembly. A change to the schema reaches
// the builder and the records, not the code that measures; none of these types is written to a
// file as it is. The exception is the measured GEMM peak, a file of `ftbench gemm` that the report
// carries verbatim (measured_gemm.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/file_dataset.h"
#include "data/fingerprint.h"
#include "data/length_statistics.h"
#include "device/energy_sampler.h"
#include "device/memory_reading.h"
#include "model/shape_math.h"
#include "report/measured_gemm.h"
#include "report/metrics/profile_table.h"
#include "spec/derived.h"

namespace ftbench::report {

// What is known of the run when its process starts.
struct RunStart {
  std::string run_name;  // output.name
  std::string working_directory;
  int64_t world_size = 1;
  std::string started_at_utc;  // ISO 8601
  std::string spec_path;
  nlohmann::ordered_json spec;  // the resolved spec (spec::to_json)
  std::string spec_fingerprint;
  // Where the clock's origin came from (--t0, FTBENCH_T0, or process_start) and how long before
  // this process it lies.
  std::string t0_source = "process_start";
  double t0_before_process_seconds = 0.0;
};

// A phase of the run on the process clock (report/phase_names.h), with the memory the device
// module read over it (none for the phases before the meter is attached).
struct TimedPhase {
  std::string name;
  double start_seconds = 0.0;
  double seconds = 0.0;
  std::optional<device::MemoryReading> memory = std::nullopt;
};

// A validation pass after an optimizer step.
struct EvaluationPass {
  int64_t after_step = 0;
  double loss = 0.0;  // mean token loss; not finite when the pass diverged
  int64_t loss_tokens = 0;
  int64_t batches = 0;   // micro-batches run
  double seconds = 0.0;  // device synchronised at both ends
};

// A checkpoint this process wrote.
struct CheckpointWrite {
  int64_t step = 0;     // optimizer steps done when saved
  int64_t segment = 1;  // this process's index among the run's segments
  std::string reason;   // every_steps, every_minutes, signal, stop_after_steps
  std::string path;     // the checkpoint folder
  int64_t bytes = 0;
  double seconds = 0.0;  // device synchronised before: gathering, writing, fsync
};

// A file set written after training: the adapter in PEFT's format, or the merged weights.
struct ExportWrite {
  std::string kind;  // peft_adapter, merged
  std::string path;  // the folder
  int64_t tensors = 0;
  int64_t bytes = 0;
  double seconds = 0.0;
};

// A file the data or the tokenizer was read from, with what a run re-created from the report
// checks it holds (run/rerun.h).
struct FileRead {
  std::string key;   // data.path, data.validation_path, data.tokenizer
  std::string path;  // absolute
  int64_t bytes = 0;
  std::string sha256;  // lower-case hex
};

// A data set as read: its own description ("synthetic(seed=1234, n=2000)") and its counts and
// fingerprint (data/fingerprint.h).
struct DataSetRead {
  std::string description;
  data::DataStats counts;
};

// The data the run trains on and validates with.
struct DataRead {
  DataSetRead train;
  std::string format = "synthetic";  // a data file's: alpaca, chat, text, tokenized
  // A data file's reader counts (records, skipped, dropped, truncated); none for synthetic data.
  std::optional<data::DataFileStats> file;
  data::LengthStatistics lengths;  // of the training set
  std::optional<DataSetRead> validation;
  std::vector<FileRead> files;
};

// The base weights: random, or read from a Hugging Face checkpoint folder.
struct WeightsRead {
  std::string checkpoint;  // model.checkpoint as the spec names it; "" for random weights
  int64_t files = 0;       // tensor files read
  int64_t tensors = 0;
  int64_t bytes = 0;
  double seconds = 0.0;     // reading and converting into the model, device synchronised
  std::string fingerprint;  // "" for random weights (model/hf/torch/hf_load.h)
};

// What model.activation_checkpointing auto chose from: the memory each policy needs against
// what the device has for it.
struct CheckpointingNeeds {
  int64_t usable_bytes = 0;  // the device's memory less the plan's headroom
  bool fits = false;         // false: not even full fits (full was chosen, the least memory)
  std::vector<std::pair<std::string, int64_t>>
      needed_bytes;  // policy, bytes: none, selective, full
};

// How the step runs on this device: the attention kernel LibTorch dispatches to, the
// activation-checkpointing policy, and ftbench's own step switches.
struct ExecutionChoices {
  std::string attention_kernel;
  std::string activation_checkpointing;                    // full, selective, none
  std::optional<CheckpointingNeeds> checkpointing_choice;  // auto's, when it chose
  bool gpu_kernels = false;
  bool fused_blocks = true;
};

// The peak `ftbench plan` predicts for this run (economics/plan/memory.h), or why there is none.
struct MemoryPrediction {
  std::optional<int64_t> peak_bytes;
  std::string basis;  // what the plan assumed, or "no prediction: <why>"
};

// `ftbench run --profile-steps`: the steps recorded, the tables made of them and the files
// written beside the report.
struct ProfileWritten {
  int64_t first_step = 0;  // as asked
  int64_t last_step = 0;   // the last step recorded
  bool device_activity = false;
  metrics::ProfileTables tables;
  std::string trace;
  std::string ops_table;
  std::string kernels_table;
};

// Everything one run process measured besides its steps (train::TrainResult) and the device's
// sections (environment, memory), which the builder's assembly takes as they are.
struct Measured {
  RunStart start;
  model::ParamCounts parameters;
  spec::DerivedCounts derived;  // from the spec, then from the data's real size once it is read
  std::vector<TimedPhase> phases;
  std::vector<EvaluationPass> evaluations;   // this process's
  std::vector<CheckpointWrite> checkpoints;  // this process's
  std::vector<ExportWrite> exports;
  std::optional<DataRead> data;
  std::optional<WeightsRead> weights;
  std::optional<ExecutionChoices> execution;
  std::optional<MemoryPrediction> memory_prediction;
  // The meter's readings over the step loop, once it stopped (device/torch/energy_meter.h).
  std::optional<device::EnergyReadings> energy;
  std::optional<ProfileWritten> profile;
  std::optional<MeasuredGemm> gemm;
  std::string error;  // why the run failed (the first line of the message); "" otherwise
};

}  // namespace ftbench::report
