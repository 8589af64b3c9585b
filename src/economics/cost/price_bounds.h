// Private to src/economics/cost: the bounds a catalog's prices must keep, checked by both catalog
// readers (YAML and SkyPilot CSV) so that billing (cost::check_rate) never refuses a price they
// took.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "economics/cost/billing.h"

namespace ftbench::cost::detail {

// "" when `usd_per_gpu_hour` (the price as written, `found`, divided over `gpus` GPUs) is from
// kMinUsdPerGpuHour to kMaxUsdPerGpuHour; else what is wrong, for the reader to add to its
// problems.
inline std::string price_per_gpu_problem(const std::string& found, int64_t gpus,
                                         double usd_per_gpu_hour) {
  if (usd_per_gpu_hour >= kMinUsdPerGpuHour && usd_per_gpu_hour <= kMaxUsdPerGpuHour) return "";
  std::string message = fmt::format("expected a price per GPU-hour from {} to {}, found {}",
                                    kMinUsdPerGpuHour, kMaxUsdPerGpuHour, found);
  if (gpus > 1) message += fmt::format(" for {} GPUs ({} per GPU-hour)", gpus, usd_per_gpu_hour);
  return message;
}

}  // namespace ftbench::cost::detail
