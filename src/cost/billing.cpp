#include "ftbench/cost/billing.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ftbench::cost {

double billed_seconds(double seconds, Billing billing, int64_t min_billed_seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0) {
    throw std::invalid_argument(fmt::format("duration must be >= 0 seconds, found {}", seconds));
  }
  const auto minimum = static_cast<double>(min_billed_seconds);
  if (billing == Billing::kUnknown) return std::max(seconds, minimum);
  const auto increment = static_cast<double>(increment_seconds(billing));
  // A timer reading a hair past a whole increment is that increment: 1 ns of slack.
  const double units = std::ceil((seconds - 1e-9) / increment);
  // units may be -0.0 for a 0 s run; 0.0 + ... makes the zero positive.
  return std::max(0.0 + std::max(units, 0.0) * increment, minimum);
}

int64_t billed_gpus(int64_t gpus_used, int64_t gpus_per_instance) {
  if (gpus_used < 1 || gpus_per_instance < 1 || gpus_used > kMaxGpus ||
      gpus_per_instance > kMaxGpus) {
    throw std::invalid_argument(
        fmt::format("GPU counts must be between 1 and {}, found {} used on {} per instance",
                    kMaxGpus, gpus_used, gpus_per_instance));
  }
  const int64_t instances = (gpus_used + gpus_per_instance - 1) / gpus_per_instance;
  return instances * gpus_per_instance;
}

void check_rate(const Rate& rate) {
  if (!std::isfinite(rate.usd_per_gpu_hour) || rate.usd_per_gpu_hour < kMinUsdPerGpuHour ||
      rate.usd_per_gpu_hour > kMaxUsdPerGpuHour) {
    throw std::invalid_argument(
        fmt::format("rate must be a number of USD per GPU-hour from {} to {}, found {}",
                    kMinUsdPerGpuHour, kMaxUsdPerGpuHour, rate.usd_per_gpu_hour));
  }
  if (rate.min_billed_seconds < 0 || rate.min_billed_seconds > kMaxMinBilledSeconds) {
    throw std::invalid_argument(fmt::format("minimum billed time must be 0 to {} seconds, found {}",
                                            kMaxMinBilledSeconds, rate.min_billed_seconds));
  }
  if (rate.gpus_per_instance < 1 || rate.gpus_per_instance > kMaxGpus) {
    throw std::invalid_argument(fmt::format("GPUs per instance must be between 1 and {}, found {}",
                                            kMaxGpus, rate.gpus_per_instance));
  }
}

}  // namespace ftbench::cost
