// Learning-rate schedules: linear warm-up, then cosine, linear or constant.
#pragma once

#include <cstdint>
#include <string>

namespace ftbench::train {

struct LrSchedule {
  double base_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  std::string kind = "cosine";  // cosine, linear, constant
  double min_lr_ratio = 0.0;
};

// Learning rate for optimizer step `step_index` (0-based), the convention of Hugging Face's
// and torchtune's get_*_schedule_with_warmup: during warm-up lr * k / warmup (so the first
// step runs at 0 when there is warm-up); then, with progress p = (k - warmup) /
// max(1, total - warmup), cosine: min + (1 - min) * 0.5 * (1 + cos(pi p)); linear:
// min + (1 - min) * (1 - p); constant: lr. `min` is min_lr_ratio.
double lr_at(const LrSchedule& schedule, int64_t step_index);

}  // namespace ftbench::train
