// model.activation_checkpointing policy by policy (none, selective, full): the memory each needs
// and the work each does, and what `auto` chooses: the least recompute that fits the device by
// the memory model (memory.h). The plan prints every policy; a run with `auto` asks
// choose_checkpointing() before it builds the model and its report says what was chosen.
#pragma once

#include <string>
#include <vector>

#include "economics/plan/memory.h"
#include "spec/run_spec.h"

namespace ftbench::plan {

// none, selective, full: less memory and more recompute down the list.
const std::vector<std::string>& policies_by_recompute();

// Whether `policy` recomputes more than `than` (full > selective > none).
bool recomputes_more(const std::string& policy, const std::string& than);

struct PolicyEstimate {
  std::string policy;
  MemoryEstimate memory;
  // What the device must have: device_bytes_needed() with overheads, else the tensors' peak.
  double needed_bytes = 0.0;
  // Training FLOPs a token (the plan's model FLOPs: the frozen base's, methodology section 5),
  // full's recomputed forward of the decoder layers included; selective recomputes elementwise
  // work only, which no FLOP count includes.
  double flops_per_token = 0.0;
};

// The three policies for `spec` (its own value of the key is not read). `overheads` null: the
// tensors' peak alone (a CPU).
std::vector<PolicyEstimate> estimate_policies(const spec::RunSpec& spec,
                                              const MemoryOptions& options,
                                              const DeviceOverheads* overheads);

struct CheckpointingChoice {
  std::string policy;  // what auto runs with
  bool fits = false;   // false: none fits; `policy` is then the one that needs least
  double usable_bytes = 0.0;
  std::vector<PolicyEstimate> candidates;  // policies_by_recompute() order (those allowed)
  std::string reason;                      // "selective: 61.2 GB needed of 70.2 GB usable ..."
};

// Auto: the first of none, selective, full whose need fits `usable_bytes`; when none fits, the one
// that needs least. Selective is not always below none (it keeps every projection's output, which
// a job with few adapters does not): the order is of recompute, the test is of memory.
// `selective_allowed` false leaves selective out (the composite forms, FTBENCH_FUSED_BLOCKS=0,
// have no selective checkpointing).
CheckpointingChoice choose_checkpointing(const spec::RunSpec& spec, const MemoryOptions& options,
                                         const DeviceOverheads* overheads, double usable_bytes,
                                         bool selective_allowed = true);

}  // namespace ftbench::plan
