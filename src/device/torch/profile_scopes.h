// The scopes ftbench marks in its training step, so that a profile (`ftbench run
// --profile-steps`, report/metrics/step_profiler.h) says where the step's time goes: LibTorch user
// scopes (RecordScope::USER_SCOPE), which cost nothing while no profiler records. Here, below
// both the model and the trainer that mark them.
#pragma once

#include <ATen/record_function.h>

namespace ftbench::device {

inline constexpr const char* kScopeForward = "ftbench::forward";      // embedding to final norm
inline constexpr const char* kScopeLoss = "ftbench::loss";            // LM head and cross-entropy
inline constexpr const char* kScopeBackward = "ftbench::backward";    // the whole backward pass
inline constexpr const char* kScopeRecompute = "ftbench::recompute";  // a checkpointed unit again
inline constexpr const char* kScopeOptimizer = "ftbench::optimizer";  // norms, clipping, AdamW

// One of the scopes above, from construction to end() or destruction, whichever comes first
// (RECORD_USER_SCOPE where a block's end is the scope's end).
class ProfileScope {
 public:
  explicit ProfileScope(const char* name) : guard_(at::RecordScope::USER_SCOPE) {
    if (guard_.isActive()) guard_.before(name);
  }
  void end() { guard_.end(); }

 private:
  at::RecordFunction guard_;
};

}  // namespace ftbench::device
