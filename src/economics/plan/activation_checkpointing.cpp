#include "economics/plan/activation_checkpointing.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/shape_math.h"
#include "spec/choices.h"

namespace ftbench::plan {

namespace cp = spec::choice::checkpointing;

const std::vector<std::string>& policies_by_recompute() {
  static const std::vector<std::string> kOrder = {cp::kNone, cp::kSelective, cp::kFull};
  return kOrder;
}

bool recomputes_more(const std::string& policy, const std::string& than) {
  const auto& order = policies_by_recompute();
  const auto a = std::find(order.begin(), order.end(), policy);
  const auto b = std::find(order.begin(), order.end(), than);
  return a != order.end() && b != order.end() && a > b;
}

std::vector<PolicyEstimate> estimate_policies(const spec::RunSpec& spec,
                                              const MemoryOptions& options,
                                              const DeviceOverheads* overheads) {
  const model::ParamCounts counts = model::count_parameters(spec.model, spec.lora);
  std::vector<PolicyEstimate> out;
  for (const std::string& policy : policies_by_recompute()) {
    MemoryOptions o = options;
    o.activation_checkpointing = policy;
    PolicyEstimate e;
    e.policy = policy;
    e.memory = estimate_memory(spec, o);
    e.needed_bytes =
        overheads != nullptr ? device_bytes_needed(e.memory, *overheads) : e.memory.peak_bytes;
    e.flops_per_token = model::training_flops_per_token(spec.model, counts, spec.data.seq_len,
                                                        model::FlopFormula::kLoraFrozenBase,
                                                        /*recompute=*/policy == cp::kFull);
    out.push_back(std::move(e));
  }
  return out;
}

CheckpointingChoice choose_checkpointing(const spec::RunSpec& spec, const MemoryOptions& options,
                                         const DeviceOverheads* overheads, double usable_bytes,
                                         bool selective_allowed) {
  CheckpointingChoice c;
  c.usable_bytes = usable_bytes;
  for (PolicyEstimate& e : estimate_policies(spec, options, overheads)) {
    if (selective_allowed || e.policy != cp::kSelective) c.candidates.push_back(std::move(e));
  }
  std::vector<std::string> needs;
  for (const PolicyEstimate& e : c.candidates) {
    needs.push_back(fmt::format("{} {:.2f} GB", e.policy, e.needed_bytes / 1e9));
  }
  for (const PolicyEstimate& e : c.candidates) {
    if (e.needed_bytes <= usable_bytes) {
      c.policy = e.policy;
      c.fits = true;
      break;
    }
  }
  if (!c.fits) {
    const auto least = std::min_element(c.candidates.begin(), c.candidates.end(),
                                        [](const PolicyEstimate& a, const PolicyEstimate& b) {
                                          return a.needed_bytes < b.needed_bytes;
                                        });
    c.policy = least->policy;
  }
  c.reason = fmt::format(
      "{}: {} of {:.2f} GB usable (needed: {}){}", c.policy,
      c.fits ? "the least recompute that fits" : "nothing fits, the least memory",
      usable_bytes / 1e9, fmt::join(needs, ", "), c.fits ? "" : "; the run may run out of memory");
  return c;
}

}  // namespace ftbench::plan
