// The files of a training checkpoint, torch-free: where checkpoints live, the manifest
// (checkpoint.json) and its checks, the atomic save of a checkpoint folder, pruning, and finding
// the latest. train/torch/checkpoint.h fills and restores the tensors.
//
// Layout: <train.checkpoint.dir>/step-00000010/ holds
//   checkpoint.json     the manifest: format, fingerprints, position, optimizer and loss-scaler
//                       scalars, RNG tensor names, the partial report so far, and the size and
//                       SHA-256 of the tensor file;
//   state.safetensors   the LoRA weights, AdamW's moments per parameter (by name) and the RNG
//                       states (CPU and device) as byte tensors.
// A save writes a hidden temporary folder next to it and renames it into place, so a folder
// named step-* is always complete; a crash mid-save leaves only the temporary folder, which
// the next save removes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace ftbench::train {

inline constexpr const char* kCheckpointFormat = "ftbench.checkpoint/1";
inline constexpr const char* kCheckpointManifest = "checkpoint.json";
// The manifest's SHA-256 as `sha256sum` writes it ("<hex>  checkpoint.json\n"): an edit to the
// manifest (a position, a batch split) is refused like a corrupted tensor file.
inline constexpr const char* kCheckpointManifestChecksum = "checkpoint.json.sha256";
inline constexpr const char* kCheckpointTensors = "state.safetensors";
// In train.checkpoint.dir, next to the step folders: every process (segment) of the run so far,
// kept up to date while it runs, so that a process that ends before saving a checkpoint (stopped
// or failed during set-up, killed) is still billed when the run is resumed.
inline constexpr const char* kSegmentJournal = "segments.json";

// A checkpoint that cannot be used: missing, truncated, corrupted, of another format, or of
// another job. Bad input (exit code 2). what() names the folder or file and what is wrong.
class CheckpointError : public BadInput {
 public:
  using BadInput::BadInput;
};

// A checkpoint that could not be saved (disk full, no permission): the run fails (exit code 3);
// the previous checkpoints are intact.
class CheckpointWriteError : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

// What a checkpoint says besides its tensors.
struct CheckpointManifest {
  std::string format = kCheckpointFormat;
  std::string created_at_utc;
  std::string reason;  // every_steps, every_minutes, signal, stop_after_steps
  std::string ftbench_version;
  std::string spec_fingerprint;
  std::string data_fingerprint;
  nlohmann::ordered_json spec;  // spec::to_json of the run that saved it
  int64_t step = 0;             // optimizer steps done; the next step is step + 1
  int64_t epoch = 0;            // epoch of the last step done (1-based)
  int64_t micro_batches_done = 0;
  int64_t micro_batch_size = 0;  // the split in effect (after any out-of-memory fallback)
  int64_t grad_accum_steps = 0;
  std::string device_type;  // cpu, cuda (ROCm is cuda to LibTorch)
  std::string optimizer_implementation;
  std::vector<std::string> parameters;   // trainable parameter names, in the trainer's order
  std::vector<int64_t> parameter_steps;  // AdamW's update count per parameter, same order
  bool loss_scaler_enabled = false;
  double loss_scale = 1.0;
  int64_t loss_scale_clean_steps = 0;
  bool has_device_rng = false;  // a "rng.device" tensor besides "rng.cpu"
  // Per step so far: the FLOP counts (lora_frozen_base, its recompute, six_n, its recompute,
  // executed; the last absent in checkpoints written before it) that the report's summary needs
  // for steps of earlier segments.
  std::vector<std::vector<double>> step_flops;
  nlohmann::ordered_json report;  // the partial report as of the save (report::to_json)
  int64_t tensors_bytes = 0;      // size of state.safetensors
  std::string tensors_sha256;     // its SHA-256, hex
};

nlohmann::ordered_json to_json(const CheckpointManifest& manifest);
// Throws CheckpointError "<source>: <json path>: expected ..., found ..." for a manifest that is
// not one: wrong types, missing fields, another format.
CheckpointManifest manifest_from_json(const nlohmann::json& json, const std::string& source);
// The manifest in `text` (checkpoint.json's bytes); CheckpointError "<source>: ..." when it is
// not JSON, nests too deep, or is not a manifest.
CheckpointManifest parse_manifest(std::string_view text, const std::string& source);
// Reads <folder>/checkpoint.json and checks it against checkpoint.json.sha256; CheckpointError
// when either is missing, they disagree, or the manifest is invalid.
CheckpointManifest read_manifest(const std::string& folder);

// "step-00000010" for step 10.
std::string checkpoint_folder_name(int64_t step);

// The complete checkpoints in `dir` (folders named step-<digits> holding a checkpoint.json), by
// step, oldest first. An absent `dir` has none.
std::vector<std::string> list_checkpoints(const std::string& dir);

// The folders named step-<digits> in `dir` that hold no checkpoint.json (incomplete or damaged
// saves), by step: `latest` passes over them, and the run says so.
std::vector<std::string> list_incomplete_checkpoints(const std::string& dir);

// The step a checkpoint folder's name says (step-00000010: 10), or nullopt for another name.
std::optional<int64_t> step_of_checkpoint_folder(const std::string& folder);

// Resolves what --resume was given: a checkpoint folder (one holding checkpoint.json), or a
// folder of checkpoints (its newest one). Throws CheckpointError when there is none.
std::string resolve_checkpoint(const std::string& path_or_dir);

// Checks that the tensor file of the checkpoint in `folder` has the size and SHA-256 the
// manifest records (a truncated or bit-flipped file is refused before it is read).
void verify_checkpoint_tensors(const std::string& folder, const CheckpointManifest& manifest);

struct SavedCheckpointFolder {
  std::string path;   // <dir>/step-00000010
  int64_t bytes = 0;  // the tensor file (the manifest adds kilobytes)
};

// Saves a checkpoint into <dir>/step-<manifest.step> atomically: `write_tensors(path)` writes
// the tensor file into a temporary folder, then the size and SHA-256 go into the manifest,
// which is written next to it; both are fsync'd, then the folder is renamed into place (over an
// older save of the same step) and `dir` fsync'd. Then only the newest `keep_last` checkpoints
// are kept, and temporary folders of dead processes are removed. On any failure the temporary
// folder is removed, the earlier checkpoints are left as they were, and CheckpointWriteError
// names the path and the reason. Honours FTBENCH_INJECT_WRITE_FAILURE (io::write_all, kind
// "checkpoint"). `before_manifest`, when given, may complete the manifest once the tensor file is
// written and measured (tensors_bytes and tensors_sha256 set), e.g. with the save's own record.
SavedCheckpointFolder save_checkpoint_folder(
    const std::string& dir, CheckpointManifest manifest, int64_t keep_last,
    const std::function<void(const std::string& tensors_path)>& write_tensors,
    const std::function<void(CheckpointManifest&)>& before_manifest = nullptr);

// An exclusive lock on a checkpoint folder (flock on the folder itself) for as long as it
// lives, so that two runs never write checkpoints into one folder: the second is refused at its
// start with a CheckpointError naming the folder. Creates the folder. Released on destruction
// (and by the kernel when the process dies, however it dies). Not copyable.
class CheckpointDirLock {
 public:
  // Throws CheckpointError when another process holds the lock, CheckpointWriteError when the
  // folder cannot be created or opened.
  explicit CheckpointDirLock(const std::string& dir);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int fd_ = -1;
};

// What a process killed mid-save left in `dir` (call with its lock held): temporary folders
// (".step-N.tmp-PID") are removed; a checkpoint moved aside to be replaced (".step-N.old-PID")
// is removed when its replacement is in place, and put back when it is not. Returns the names
// of what it removed or restored, for the log.
std::vector<std::string> clean_checkpoint_leftovers(const std::string& dir);

// Checks, before any work, that the micro-batch split the manifest records is one this spec's
// run could be in: the same effective batch, and the spec's split or one its out-of-memory
// fallback reaches (train/oom_fallback.h) within train.oom_max_fallbacks; and that the position
// agrees with it (micro_batches_done = step x grad_accum_steps). CheckpointError naming the
// folder, what the checkpoint says and what the spec says.
void check_resume_split(const std::string& folder, const CheckpointManifest& manifest,
                        int64_t micro_batch_size, int64_t grad_accum_steps, bool oom_fallback,
                        int64_t oom_max_fallbacks);

// The JSON document of a checkpoint folder's file (the manifest, the segment journal);
// CheckpointError "<source>: ..." when it nests too deep (`what` heads that message), gives a
// key twice (the key's path heads it) or is not JSON.
nlohmann::json parse_checkpoint_json(std::string_view text, const std::string& source,
                                     const char* what);

// The keys (dotted paths) whose values differ between two spec JSON objects, in order: what
// makes a checkpoint's spec another job.
std::vector<std::string> differing_keys(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace ftbench::train
