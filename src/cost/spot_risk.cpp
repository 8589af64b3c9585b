#include "ftbench/cost/spot_risk.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ftbench::cost {
namespace {

void check(double value, const char* name, bool positive) {
  if (!std::isfinite(value) || value < 0.0 || (positive && value == 0.0)) {
    throw std::invalid_argument(std::string(name) + ": expected a finite number " +
                                (positive ? "> 0" : ">= 0") + ", found " + std::to_string(value));
  }
}

}  // namespace

SpotRisk spot_risk(const SpotInputs& in) {
  check(in.work_seconds, "work seconds", false);
  check(in.preemptions_per_hour, "preemptions per hour", true);
  if (in.checkpoint_interval_seconds) {
    check(*in.checkpoint_interval_seconds, "checkpoint interval", true);
  }
  check(in.save_seconds, "checkpoint save seconds", false);
  check(in.restart_seconds, "restart seconds", false);

  SpotRisk r;
  const double m = 3600.0 / in.preemptions_per_hour;  // mean time between interruptions
  const double lambda = 1.0 / m;
  r.mean_seconds_between = m;
  r.p_at_least_one = -std::expm1(-in.work_seconds * lambda);
  if (in.checkpoint_interval_seconds) {
    // Each interruption loses, on average, half an interval of work and the restart; the
    // interruptions come over the whole expected time E: E = W + (E / M) * lost.
    r.lost_per_interruption_seconds = *in.checkpoint_interval_seconds / 2.0 + in.restart_seconds;
    const double lost_share = r.lost_per_interruption_seconds * lambda;
    if (lost_share < 1.0) {
      r.expected_seconds = in.work_seconds / (1.0 - lost_share);
    }
  } else {
    // No checkpoint: the job must run W uninterrupted. With a restart R after each reclaim the
    // expected time is (M + R) * (exp(W / M) - 1) (a renewal argument; exact for Poisson).
    const double e = (m + in.restart_seconds) * std::expm1(in.work_seconds * lambda);
    if (std::isfinite(e)) r.expected_seconds = e;
  }
  if (r.expected_seconds) {
    if (in.checkpoint_interval_seconds) {
      r.expected_interruptions = *r.expected_seconds * lambda;
    } else {
      // exp(W / M) - 1 reclaims are expected before one attempt runs W through.
      r.expected_interruptions = std::expm1(in.work_seconds * lambda);
      r.lost_per_interruption_seconds =
          *r.expected_interruptions > 0.0
              ? (*r.expected_seconds - in.work_seconds) / *r.expected_interruptions
              : 0.0;
    }
  }
  if (in.save_seconds > 0.0) r.optimal_interval_seconds = std::sqrt(2.0 * in.save_seconds * m);
  return r;
}

}  // namespace ftbench::cost
