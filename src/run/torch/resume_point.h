// The checkpoint `--resume` names, with its manifest, checked against this run's spec before
// any machine time is spent on the model: a checkpoint of another job is refused, naming the
// keys that differ.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/Device.h>

#include "device/facts.h"
#include "report/measurements.h"
#include "spec/run_spec.h"
#include "train/checkpoint_files.h"
#include "train/train_result.h"

namespace ftbench::report {
struct Report;
}  // namespace ftbench::report

namespace ftbench::run {

struct ResumePoint {
  std::string folder;
  train::CheckpointManifest manifest;
  // The partial report saved with it, as read: the start checks (start_checks.h) take the
  // earlier segments, steps, evaluations and checkpoints from it.
  std::shared_ptr<const report::Report> previous;
  // What the resumed run takes over from that report, read here once:
  // The base weights it trained ("" for random ones); none when its report does not say.
  std::optional<std::string> weights_fingerprint;
  // How its steps ran: model.activation_checkpointing auto keeps the policy (and the figures it
  // chose by) for every step; none when not recorded.
  std::optional<report::ExecutionChoices> execution;
  // Its out-of-memory fallbacks, the trainer's again (train::TrainResult::fallbacks).
  std::vector<train::MicroBatchFallback> fallbacks;
  // Where it ran: the device's name and backend, and the CPU threads.
  std::string device_name;
  std::string device_backend;
  int64_t intra_op_threads = 0;
};

// `resume`: "latest" (the newest checkpoint in `checkpoint_dir`), a checkpoint folder, or a
// folder of checkpoints. train::CheckpointError naming the folder and what does not fit.
ResumePoint find_resume_point(const spec::RunSpec& spec, const std::string& resume,
                              const std::string& checkpoint_dir);

// A resume with another CPU thread count or on another device continues the same job, but not
// bit for bit (CPU reductions split differently; another GPU rounds differently): said when it
// starts, so that nobody takes the difference in the losses for a bug. Each segment records its
// thread count (report::Segment::intra_op_threads).
void warn_if_not_bit_exact(const ResumePoint& saved, const device::DeviceFacts& device,
                           const at::Device& where);

}  // namespace ftbench::run
