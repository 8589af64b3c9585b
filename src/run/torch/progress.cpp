#include "run/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "run/running_cost.h"
#include "spec/choices.h"

namespace ftbench::run {

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

Progress::Progress(int64_t total_steps, const std::string& mode, int64_t log_every_steps,
                   std::optional<cost::Rate> rate, int64_t gpus)
    : total_steps_(total_steps),
      live_(mode == spec::choice::progress::kOn ||
            (mode == spec::choice::progress::kAuto && isatty(STDERR_FILENO))),
      log_every_(std::max<int64_t>(1, log_every_steps)),
      rate_(std::move(rate)),
      gpus_(gpus) {}

void Progress::update(const train::StepMeasurement& r, double elapsed_seconds,
                      double since_t0_seconds) {
  const double tps = r.wall_seconds > 0 ? double(r.real_tokens) / r.wall_seconds : 0.0;
  // The first step (allocation, kernel selection) says little about the rest.
  const double alpha = r.step <= 2 ? 1.0 : 0.2;
  recent_step_seconds_ = alpha * r.wall_seconds + (1 - alpha) * recent_step_seconds_;
  recent_tokens_per_second_ = alpha * tps + (1 - alpha) * recent_tokens_per_second_;
  const double eta = recent_step_seconds_ * double(total_steps_ - r.step);
  // Formatted only for a line that is printed (a log line every log_every_ steps).
  const auto money = [&]() -> std::string {
    return rate_ ? " | " + running_cost_text(running_cost(*rate_, gpus_, since_t0_seconds, eta))
                 : "";
  };
  if (live_) {
    std::fprintf(stderr, "\r\033[Kstep %lld/%lld | loss %.4f | %.0f tok/s | elapsed %s | ETA %s%s",
                 static_cast<long long>(r.step), static_cast<long long>(total_steps_), r.loss,
                 recent_tokens_per_second_, format_duration(elapsed_seconds).c_str(),
                 format_duration(eta).c_str(), money().c_str());
    std::fflush(stderr);
    return;
  }
  if (r.step % log_every_ == 0 || r.step == total_steps_ || r.step == 1) {
    spdlog::info(
        "step {}/{} loss {:.4f} lr {:.3e} grad_norm {:.3f} step {:.3f}s {:.0f} tok/s "
        "elapsed {} ETA {}{}",
        r.step, total_steps_, r.loss, r.lr, r.grad_norm, r.wall_seconds, tps,
        format_duration(elapsed_seconds), format_duration(eta), money());
  }
}

void Progress::finish() {
  if (live_) std::fprintf(stderr, "\n");
}

}  // namespace ftbench::run
