// Progress of the training loop: a live line on a terminal, plain log lines otherwise.
#pragma once

#include <cstdint>

#include <optional>
#include <string>

#include "economics/cost/billing.h"
#include "train/train_result.h"

namespace ftbench::run {

class Progress {
 public:
  // `mode`: auto (live line when stderr is a terminal), on, off (log lines only).
  // With a `rate`, each line also shows the dollars so far and the projected total for the run's
  // `gpus` (running_cost.h).
  Progress(int64_t total_steps, const std::string& mode, int64_t log_every_steps,
           std::optional<cost::Rate> rate = std::nullopt, int64_t gpus = 1);
  // After each step; `elapsed_seconds` since the first step began, `since_t0_seconds` since t0
  // (what is billed).
  void update(const train::StepMeasurement& step, double elapsed_seconds, double since_t0_seconds);
  // Ends the live line.
  void finish();

 private:
  int64_t total_steps_;
  bool live_;
  int64_t log_every_;
  double recent_step_seconds_ = 0.0;  // exponential average for the ETA
  double recent_tokens_per_second_ = 0.0;
  std::optional<cost::Rate> rate_;
  int64_t gpus_ = 1;
};

// "1:02:03" / "02:03".
std::string format_duration(double seconds);

}  // namespace ftbench::run
