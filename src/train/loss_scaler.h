// Dynamic loss scaling for fp16 training, with the rules of torch.cuda.amp.GradScaler.
#pragma once

#include <cstdint>

namespace ftbench::train {

class LossScaler {
 public:
  // Disabled: scale() is 1 and update() never skips.
  explicit LossScaler(bool enabled, double initial_scale = 65536.0, int64_t growth_interval = 2000)
      : enabled_(enabled),
        scale_(enabled ? initial_scale : 1.0),
        growth_interval_(growth_interval) {}

  bool enabled() const { return enabled_; }
  // Clean steps since the scale last changed (towards the next doubling).
  int64_t clean_steps() const { return clean_steps_; }
  // A checkpoint's state back: the scale and the clean-step count.
  void restore(double scale, int64_t clean_steps) {
    scale_ = scale;
    clean_steps_ = clean_steps;
  }
  // Multiply the loss by this before backward; divide the gradients by it after.
  double scale() const { return scale_; }

  // After the gradients of a step are known: returns true when the update must be skipped
  // (non-finite gradients), halving the scale; doubles it after growth_interval clean steps.
  bool update(bool gradients_finite) {
    if (!enabled_) return false;
    if (!gradients_finite) {
      scale_ *= 0.5;
      clean_steps_ = 0;
      return true;
    }
    if (++clean_steps_ == growth_interval_) {
      scale_ *= 2.0;
      clean_steps_ = 0;
    }
    return false;
  }

 private:
  bool enabled_;
  double scale_;
  int64_t growth_interval_;
  int64_t clean_steps_ = 0;
};

}  // namespace ftbench::train
