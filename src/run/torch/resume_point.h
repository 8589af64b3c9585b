// The checkpoint `--resume` names, with its manifest, checked against this run's spec before
// any machine time is spent on the model: a checkpoint of another job is refused, naming the
// keys that differ.
#pragma once

#include <string>

#include <ATen/Device.h>

#include "device/facts.h"
#include "report/report.h"
#include "spec/run_spec.h"
#include "train/checkpoint_files.h"

namespace ftbench::run {

struct ResumePoint {
  std::string folder;
  train::CheckpointManifest manifest;
  report::Report previous;  // the partial report saved with it
};

// `resume`: "latest" (the newest checkpoint in `checkpoint_dir`), a checkpoint folder, or a
// folder of checkpoints. train::CheckpointError naming the folder and what does not fit.
ResumePoint find_resume_point(const spec::RunSpec& spec, const std::string& resume,
                              const std::string& checkpoint_dir);

// A resume with another CPU thread count or on another device continues the same job, but not
// bit for bit (CPU reductions split differently; another GPU rounds differently): said when it
// starts, so that nobody takes the difference in the losses for a bug. Each segment records its
// thread count (report::Segment::intra_op_threads).
void warn_if_not_bit_exact(const report::Environment& saved, const device::DeviceFacts& device,
                           const at::Device& where);

}  // namespace ftbench::run
