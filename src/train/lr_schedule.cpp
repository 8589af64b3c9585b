#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "spec/choices.h"

namespace ftbench::train {

double lr_at(const LrSchedule& s, int64_t k) {
  if (k < s.warmup_steps) {
    return s.base_lr * double(k) / double(std::max<int64_t>(1, s.warmup_steps));
  }
  if (s.kind == spec::choice::lr_schedule::kConstant) return s.base_lr;
  const double progress =
      std::min(1.0, double(k - s.warmup_steps) /
                        double(std::max<int64_t>(1, s.total_steps - s.warmup_steps)));
  const double m = s.min_lr_ratio;
  if (s.kind == spec::choice::lr_schedule::kLinear)
    return s.base_lr * (m + (1.0 - m) * (1.0 - progress));
  return s.base_lr * (m + (1.0 - m) * 0.5 * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace ftbench::train
