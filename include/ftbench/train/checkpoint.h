// Training checkpoints, the LibTorch side: the trainer's state into a checkpoint folder
// (train/checkpoint_files.h: layout, manifest, atomic save) and back into a fresh process.
#pragma once

#include <functional>
#include <string>

#include <ATen/ATen.h>

#include "ftbench/model/llama.h"
#include "ftbench/train/checkpoint_files.h"
#include "ftbench/train/trainer.h"

namespace ftbench::train {

// Saves the state of `trainer` after its last finished step (call from the step callback):
// the adapter weights, AdamW's moments and step counts per parameter, the loss scale, the
// micro-batch split and the CPU and device random-number generators. `manifest` carries what
// the caller knows (reason, fingerprints, spec, partial report, step FLOPs, created_at_utc);
// the position, optimizer and RNG fields are filled here. Tensors are copied to the host and
// written as one safetensors file. Throws CheckpointWriteError; earlier checkpoints stay.
SavedCheckpointFolder save_checkpoint(
    const std::string& dir, int64_t keep_last, const Trainer& trainer, CheckpointManifest manifest,
    int64_t steps_per_epoch, at::Device device,
    const std::function<void(CheckpointManifest&)>& before_manifest = nullptr);

// Reads the checkpoint in `folder` (whose manifest the caller has read and checked against the
// spec and data): verifies the tensor file's size and SHA-256, checks that it holds every
// adapter of `model` with the same shape and dtype (and nothing else of that kind), copies the
// adapter weights into `model` and returns the rest for Trainer::resume. Throws
// CheckpointError naming the file and the tensor.
ResumeState load_checkpoint(const std::string& folder, const CheckpointManifest& manifest,
                            model::Llama& model, at::Device device);

}  // namespace ftbench::train
