// Training checkpoints, the LibTorch side: the trainer's state into a checkpoint folder
// (train/checkpoint_files.h: layout, manifest, atomic save) and back into a fresh process.
#pragma once

#include <functional>
#include <string>

#include <ATen/ATen.h>

#include "model/torch/llama.h"
#include "spec/run_spec.h"
#include "train/checkpoint_files.h"
#include "train/torch/trainer.h"

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

// Everything a resume of `spec` needs from the checkpoint in `folder` (whose manifest the
// caller has read and matched to the spec's fingerprint), checked before any machine time is
// spent: the tensor file's size and SHA-256; in its header, one weight and two AdamW moments of
// the same dtype (the adapters') and shape for each adapter the manifest lists, as many adapters
// as the spec's model has, and a CPU random-number state of the size this LibTorch's generator
// keeps (and a device one when the manifest says so). CheckpointError naming the file and
// tensor.
void check_checkpoint_for_resume(const std::string& folder, const CheckpointManifest& manifest,
                                 const spec::RunSpec& spec);

// After the backend is up: a checkpoint saved on the CPU cannot give a GPU run its generator's
// state, and a device state must have the size of this device generator's. CheckpointError.
void check_device_generator_state(const std::string& folder, const CheckpointManifest& manifest,
                                  at::Device device);

// Reads the checkpoint in `folder` (whose manifest the caller has read and checked against the
// spec and data, and whose files check_checkpoint_for_resume() has checked): checks that it
// holds every
// adapter of `model` with the same shape and dtype (and nothing else of that kind), copies the
// adapter weights into `model` and returns the rest for Trainer::resume. Throws
// CheckpointError naming the file and the tensor.
ResumeState load_checkpoint(const std::string& folder, const CheckpointManifest& manifest,
                            model::Llama& model, at::Device device);

}  // namespace ftbench::train
