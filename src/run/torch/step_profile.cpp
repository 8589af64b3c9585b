#include "run/torch/step_profile.h"

#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "report/summary_text.h"
#include "run/profile_outputs.h"
#include "util/error.h"

namespace ftbench::run::detail {
namespace {

std::string window_text(const metrics::ProfileWindow& w) {
  return w.first_step == w.last_step ? fmt::format("{}", w.first_step)
                                     : fmt::format("{},{}", w.first_step, w.last_step);
}

}  // namespace

void check_profile_window(const RunContext& context, const StartState& start, int64_t total_steps) {
  const std::optional<metrics::ProfileWindow>& window = context.instrumentation.profile_steps;
  if (!window) return;
  const metrics::ProfileWindow& w = *window;
  // 0: a data file's steps are not counted yet (checked again once it is read).
  if (total_steps > 0 && w.last_step > total_steps) {
    throw BadInput(fmt::format(
        "--profile-steps {}: the run has {} optimizer step{}; profile steps from 1 to {}",
        window_text(w), total_steps, total_steps == 1 ? "" : "s", total_steps));
  }
  if (start.resume && w.first_step <= start.resume->manifest.step) {
    throw BadInput(fmt::format(
        "--profile-steps {}: this process resumes after step {}; profile steps from {} on",
        window_text(w), start.resume->manifest.step, start.resume->manifest.step + 1));
  }
}

StepProfile::StepProfile(const RunContext& context, const StartState& start,
                         RunMeasurements& measured, Components& built)
    : context_(context), start_(start), measured_(measured), built_(built) {
  const std::optional<metrics::ProfileWindow>& window = context.instrumentation.profile_steps;
  if (!window || !context.lead()) return;
  check_profile_window(context, start, measured.measurements.derived.total_steps);
  profiler_ = std::make_unique<metrics::StepProfiler>(*window, !built.backend->device().is_cpu());
  metrics::StepProfiler* profiler = profiler_.get();
  built.trainer->set_before_step([profiler](int64_t step) { profiler->step_begins(step); });
  measured.summary.profiled_steps = std::make_pair(window->first_step, window->last_step);
  spdlog::info(
      "--profile-steps {}: LibTorch's profiler records step{} {}; {} left out of the "
      "timing figures",
      window_text(*window), window->first_step == window->last_step ? "" : "s",
      window_text(*window), window->first_step == window->last_step ? "it is" : "they are");
}

StepProfile::~StepProfile() {
  if (profiler_ && built_.trainer) built_.trainer->set_before_step(nullptr);
}

void StepProfile::step_ended(int64_t step) {
  if (!profiler_) return;
  if (std::optional<std::vector<metrics::ProfileEvent>> events = profiler_->step_ended(step)) {
    write(std::move(*events), step);
  }
}

void StepProfile::end_early(int64_t last_step) noexcept {
  if (!profiler_ || !profiler_->recording()) return;
  std::optional<std::vector<metrics::ProfileEvent>> events;
  try {
    events = profiler_->stop();
  } catch (const std::exception& stop_error) {
    spdlog::warn("--profile-steps: the profiler did not stop: {}", stop_error.what());
  }
  if (events) write(std::move(*events), last_step);
}

void StepProfile::write(std::vector<metrics::ProfileEvent> events, int64_t last_step) noexcept {
  const metrics::ProfileWindow& w = *context_.instrumentation.profile_steps;
  if (last_step < w.first_step) {
    spdlog::warn("--profile-steps {}: no profiled step ended; no profile written", window_text(w));
    measured_.summary.profiled_steps.reset();
    return;
  }
  measured_.summary.profiled_steps = std::make_pair(w.first_step, last_step);
  try {
    measured_.measurements.profile =
        write_profile(events, w, last_step, !built_.backend->device().is_cpu(),
                      start_.profile_paths, context_.request.force);
    for (const std::string& line : report::profile_summary_lines(*measured_.measurements.profile)) {
      spdlog::info("{}", line);
    }
  } catch (const std::exception& e) {
    spdlog::warn("--profile-steps {}: the profile was not written: {}", window_text(w), e.what());
  }
}

}  // namespace ftbench::run::detail
