// The objects one run trains with, built from the spec phase by phase (torchtitan's
// components): the backend and the process group, the model with its split base, the tokenizer
// and the data sets with their batchers, and the trainer. Each builder is one set-up phase's
// work; the driver (run_driver.h) times the phases between them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/file_dataset.h"
#include "data/fingerprint.h"
#include "data/tokenizer.h"
#include "data/torch/batcher.h"
#include "device/torch/backend.h"
#include "model/torch/llama.h"
#include "report/measurements.h"
#include "run/torch/run_context.h"
#include "run/torch/start_checks.h"
#include "train/dist/torch/communicator.h"
#include "train/dist/torch/sharded_base.h"
#include "train/torch/trainer.h"

namespace ftbench::run::detail {

// Declared in the order they are built; released in the reverse order (release()).
struct Components {
  std::unique_ptr<device::Backend> backend;
  std::unique_ptr<dist::Communicator> comm;  // a group of one for a single process
  // The node's ranks, for distributed.shard_base node in a job of several nodes (within one
  // node, comm is that group).
  std::unique_ptr<dist::Communicator> node_comm;
  model::Llama model{nullptr};
  // The frozen base split over shard_group() (distributed.shard_base); null: whole. Declared
  // after the model, whose units it holds, so that it goes first.
  std::unique_ptr<dist::ShardedBase> sharded;
  // The frozen base weights this rank holds between gathers, once they are loaded, and the ranks
  // its split spans (1: whole).
  std::optional<int64_t> base_bytes;
  int64_t shard_group_size = 1;
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::unique_ptr<data::Dataset> dataset;
  std::unique_ptr<data::FileDataset> validation_data;  // null without validation data
  std::unique_ptr<data::Batcher> batcher;
  // The validation set: batched like the training data but in file order, unshuffled.
  std::vector<std::unique_ptr<data::Dataset>> validation_parts;
  std::vector<std::unique_ptr<data::Batcher>> validation_batchers;
  std::vector<data::Batcher*> validation;
  std::unique_ptr<train::Trainer> trainer;

  // distributed.shard_base: the group the frozen base is split over (the node's ranks or the
  // job's), formed with the backend; null when the base stays whole on this rank.
  dist::Communicator* shard_group(const RunContext& context) const;
  // The trainer's threads once the backend is up.
  std::optional<int64_t> intra_op_threads() const;
  // What the phases built, in the reverse of their order, when training is over.
  void release();
};

// model.activation_checkpointing as the model is built: full, selective or none, and auto's
// choice with the figures it chose by (run_memory_plan.h).
struct CheckpointingPolicy {
  std::string policy;
  std::optional<report::CheckpointingNeeds> choice;
};

// backend_init: the device and, for a job of several processes, the process groups (the ranks
// checked to run the job the same way). The measured GEMM peak is matched to the device.
void start_backend(const RunContext& context, const StartState& start, Components& built,
                   RunMeasurements& measured);
// model_build: the Llama with its adapters, the step switches and the base's split.
void build_model(const RunContext& context, const CheckpointingPolicy& checkpointing,
                 Components& built);
// weight_load: random weights, or the checkpoint's file by file, and what was loaded
// (measured.weights). A run re-created from a report (--from-report) or resumed must load the
// weights it trained.
void load_weights(const RunContext& context, const StartState& start, Components& built,
                  report::Measured& measured);
// data_prepare: the tokenizer, the data sets and their batchers, the step counts from the data's
// real size, and what the data is (measured.derived, measured.data).
void prepare_data(const RunContext& context, Components& built, report::Measured& measured);
// Data parallel: every rank runs rank 0's job (spec and data fingerprints), checked before any
// collective whose shape depends on it; dist::LaunchError on every rank otherwise.
void check_same_job(const RunContext& context, Components& built,
                    const std::string& data_fingerprint);
// The trainer, with every rank on rank 0's adapters.
void build_trainer(const RunContext& context, Components& built);
// checkpoint_load: the resumed checkpoint's adapters and training state, checked against the
// data and the step count.
void load_checkpoint(const RunContext& context, const StartState& start, Components& built,
                     const report::Measured& measured);

}  // namespace ftbench::run::detail
