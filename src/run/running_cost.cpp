#include "run/running_cost.h"

#include <algorithm>

#include <fmt/format.h>

namespace ftbench::run {
namespace {

double billed_usd(const cost::Rate& rate, int64_t gpus, double seconds) {
  const double billed =
      cost::billed_seconds(std::max(0.0, seconds), rate.billing, rate.min_billed_seconds);
  return billed / 3600.0 * rate.usd_per_gpu_hour *
         static_cast<double>(cost::billed_gpus(gpus, rate.gpus_per_instance));
}

std::string dollars(double usd) {
  return usd < 100.0 ? fmt::format("${:.2f}", usd) : fmt::format("${:.0f}", usd);
}

}  // namespace

RunningCost running_cost(const cost::Rate& rate, int64_t gpus, double elapsed_seconds,
                         double eta_seconds) {
  return {billed_usd(rate, gpus, elapsed_seconds),
          billed_usd(rate, gpus, elapsed_seconds + std::max(0.0, eta_seconds))};
}

std::string running_cost_text(const RunningCost& c) {
  return dollars(c.so_far_usd) + " so far, ~" + dollars(c.projected_usd) + " at the end";
}

}  // namespace ftbench::run
