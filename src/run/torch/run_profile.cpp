// `ftbench run --profile-steps` and the report's execution record.
#include "run.h"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "ftbench/device/dtype.h"
#include "ftbench/model/sdpa.h"

namespace ftbench::run::detail {
namespace {

std::string window_text(const metrics::ProfileWindow& w) {
  return w.first_step == w.last_step ? fmt::format("{}", w.first_step)
                                     : fmt::format("{},{}", w.first_step, w.last_step);
}

}  // namespace

void Run::check_profile_window() const {
  if (!o_.profile_steps) return;
  const metrics::ProfileWindow& w = *o_.profile_steps;
  const int64_t total = rep_.derived.total_steps;
  // 0: a data file's steps are not counted yet (checked again once it is read).
  if (total > 0 && w.last_step > total) {
    throw BadInput(fmt::format(
        "--profile-steps {}: the run has {} optimizer step{}; profile steps from 1 to {}",
        window_text(w), total, total == 1 ? "" : "s", total));
  }
  if (resume_ && w.first_step <= resume_->manifest.step) {
    throw BadInput(fmt::format(
        "--profile-steps {}: this process resumes after step {}; profile steps from {} on",
        window_text(w), resume_->manifest.step, resume_->manifest.step + 1));
  }
}

void Run::start_profiler() {
  if (!o_.profile_steps || !lead()) return;
  check_profile_window();
  profiler_ =
      std::make_unique<metrics::StepProfiler>(*o_.profile_steps, !backend_->device().is_cpu());
  trainer_->set_before_step([this](int64_t step) { profiler_->step_begins(step); });
  summary_options_.profiled_steps =
      std::make_pair(o_.profile_steps->first_step, o_.profile_steps->last_step);
  spdlog::info(
      "--profile-steps {}: LibTorch's profiler records step{} {}; {} left out of the "
      "timing figures",
      window_text(*o_.profile_steps),
      o_.profile_steps->first_step == o_.profile_steps->last_step ? "" : "s",
      window_text(*o_.profile_steps),
      o_.profile_steps->first_step == o_.profile_steps->last_step ? "it is" : "they are");
}

void Run::finish_profile(std::vector<metrics::ProfileEvent> events, int64_t last_step) noexcept {
  const metrics::ProfileWindow& w = *o_.profile_steps;
  if (last_step < w.first_step) {
    spdlog::warn("--profile-steps {}: no profiled step ended; no profile written", window_text(w));
    summary_options_.profiled_steps.reset();
    return;
  }
  summary_options_.profiled_steps = std::make_pair(w.first_step, last_step);
  try {
    rep_.profile =
        write_profile(events, w, last_step, !backend_->device().is_cpu(), profile_paths_, o_.force);
    for (const std::string& line : profile_summary_lines(*rep_.profile)) spdlog::info("{}", line);
  } catch (const std::exception& e) {
    spdlog::warn("--profile-steps {}: the profile was not written: {}", window_text(w), e.what());
  }
}

void Run::record_execution() {
  report::Execution e;
  const spec::ModelSpec& m = spec_.model;
  e.attention_kernel = model::attention_kernel_name(
      backend_->device(), device::scalar_type_of(m.dtype), m.n_heads, m.n_kv_heads,
      m.dim / m.n_heads, spec_.data.padding == spec::choice::padding::kPack);
  e.activation_checkpointing = checkpointing_;
  e.checkpointing_choice = checkpointing_choice_;
  e.fused_blocks = model_->fused();
  e.gpu_kernels = model_->gpu_kernels();
  rep_.execution = e;
}

bool fused_blocks_from_environment() {
  const char* value = std::getenv("FTBENCH_FUSED_BLOCKS");
  if (value == nullptr || std::string_view(value) == "1") return true;
  if (std::string_view(value) == "0") return false;
  throw BadInput(
      "FTBENCH_FUSED_BLOCKS: expected 0 (the step as before the fused blocks, a "
      "benchmark aid) or 1, found " +
      text::quoted(value));
}

}  // namespace ftbench::run::detail

namespace ftbench::run {

void check_step_switches(const spec::RunSpec& spec) {
  const bool fused = detail::fused_blocks_from_environment();
  try {
    (void)model::gpu_kernels_enabled_from_environment();
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  if (!fused && spec.model.activation_checkpointing == spec::choice::checkpointing::kSelective) {
    throw BadInput(
        "FTBENCH_FUSED_BLOCKS=0 runs the step's composite forms, which keep no GEMM outputs for "
        "model.activation_checkpointing selective: use full or none with it");
  }
}

}  // namespace ftbench::run
