#include "run/torch/resume_point.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "report/records.h"
#include "report/report.h"
#include "report/report_io.h"
#include "spec/canonical.h"
#include "train/torch/checkpoint.h"

namespace ftbench::run {

ResumePoint find_resume_point(const spec::RunSpec& spec, const std::string& resume,
                              const std::string& checkpoint_dir) {
  ResumePoint r;
  const std::string where = resume == "latest" ? checkpoint_dir : resume;
  r.folder = train::resolve_checkpoint(where);
  if (r.folder != where) {
    // `latest` (or a folder of checkpoints) passes over incomplete saves newer than its pick.
    const std::optional<int64_t> chosen = train::step_of_checkpoint_folder(r.folder);
    for (const std::string& skipped : train::list_incomplete_checkpoints(where)) {
      const std::optional<int64_t> step = train::step_of_checkpoint_folder(skipped);
      if (chosen && step && *step > *chosen) {
        spdlog::warn("{}: no {} (an incomplete or damaged save): passed over for {}", skipped,
                     train::kCheckpointManifest, r.folder);
      }
    }
  }
  r.manifest = train::read_manifest(r.folder);
  // A folder named for one step holding another's state (a copy put back by hand under the
  // wrong name) would continue from the wrong place.
  if (const std::optional<int64_t> named = train::step_of_checkpoint_folder(r.folder);
      named && *named != r.manifest.step) {
    throw train::CheckpointError(fmt::format(
        "{}: named for step {}, its manifest holds step {}: not the checkpoint its name says",
        r.folder, *named, r.manifest.step));
  }
  const std::string fingerprint = spec::fingerprint(spec);
  if (r.manifest.spec_fingerprint != fingerprint) {
    const std::vector<std::string> keys = train::differing_keys(
        r.manifest.spec, nlohmann::json::parse(spec::canonical_job_json(spec)));
    throw train::CheckpointError(fmt::format(
        "{}: saved by another job (spec fingerprint {}, this spec's is {}); resuming needs the "
        "same job; differing keys: {}",
        r.folder, r.manifest.spec_fingerprint.substr(0, 12), fingerprint.substr(0, 12),
        keys.empty() ? std::string("none listed") : fmt::format("{}", fmt::join(keys, ", "))));
  }
  std::shared_ptr<report::Report> previous;
  try {
    previous = std::make_shared<report::Report>(report::checkpoint_report_from_json(
        r.manifest.report, r.folder + "/" + train::kCheckpointManifest + " (report)"));
  } catch (const report::ReportError& e) {
    throw train::CheckpointError(e.what());
  }
  if (static_cast<int64_t>(previous->steps.size()) != r.manifest.step) {
    throw train::CheckpointError(fmt::format("{}: {} steps recorded for step {}", r.folder,
                                             previous->steps.size(), r.manifest.step));
  }
  if (previous->segments.empty()) {
    throw train::CheckpointError(r.folder + ": its report records no segment");
  }
  if (previous->weights) r.weights_fingerprint = previous->weights->fingerprint;
  if (previous->execution) r.execution = report::execution_from_report(*previous->execution);
  if (previous->batching) {
    for (const report::Fallback& f : previous->batching->fallbacks) {
      r.fallbacks.push_back(report::fallback_from_report(f));
    }
  }
  r.device_name = previous->environment.device.name;
  r.device_backend = previous->environment.device.backend;
  r.intra_op_threads = previous->environment.software.intra_op_threads;
  r.previous = std::move(previous);
  // Everything else the resume needs, before any machine time: the batch split it continues
  // in, the tensors (checksum, names, dtypes, shapes, random-number state).
  train::check_resume_split(r.folder, r.manifest, spec.train.micro_batch_size,
                            spec.train.grad_accum_steps, spec.train.oom_fallback,
                            spec.train.oom_max_fallbacks);
  train::check_checkpoint_for_resume(r.folder, r.manifest, spec);
  return r;
}

void warn_if_not_bit_exact(const ResumePoint& saved, const device::DeviceFacts& device,
                           const at::Device& where) {
  const int64_t threads = at::get_num_threads();
  if (where.is_cpu() && saved.intra_op_threads != threads) {
    spdlog::warn(
        "resuming with {} CPU threads (backend.threads), where the checkpoint was saved with {}: "
        "the continuation is the same job, but its losses will not be bit-exact with an "
        "unbroken run's (reductions split differently)",
        threads, saved.intra_op_threads);
  }
  if (saved.device_name != device.name || saved.device_backend != device.backend) {
    spdlog::warn(
        "resuming on {} ({}), where the checkpoint was saved on {} ({}): the continuation is "
        "the same job, but not bit-exact, and its step times are another device's",
        device.name, device.backend, saved.device_name, saved.device_backend);
  }
}

}  // namespace ftbench::run
