#include "economics/cost/spot_risk.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "util/text/units.h"

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
  const double w = in.work_seconds;
  const double m = 3600.0 / in.preemptions_per_hour;  // mean time between reclaims
  r.mean_seconds_between = m;
  r.p_at_least_one = -std::expm1(-w / m);
  const bool resumes = in.checkpoint_interval_seconds && *in.checkpoint_interval_seconds < w;
  r.segment_seconds = resumes ? *in.checkpoint_interval_seconds : w;
  r.restart_counted_seconds = resumes ? in.restart_seconds : 0.0;
  if (w == 0.0) {
    r.expected_seconds = 0.0;
    r.expected_interruptions = 0.0;
    r.lost_per_interruption_seconds = 0.0;
  } else {
    // Each segment must run through once without a reclaim: e^(s/M) - 1 reclaims are expected
    // before it does, each followed by the restart (a renewal argument).
    const double segments = w / r.segment_seconds;
    const double reclaims = segments * std::expm1(r.segment_seconds / m);
    const double expected =
        segments * (m + r.restart_counted_seconds) * std::expm1(r.segment_seconds / m);
    if (std::isfinite(expected) && std::isfinite(reclaims)) {
      r.expected_seconds = expected;
      r.expected_interruptions = reclaims;
      r.lost_per_interruption_seconds = reclaims > 0.0 ? (expected - w) / reclaims : 0.0;
    }
  }
  if (in.save_seconds > 0.0) r.optimal_interval_seconds = std::sqrt(2.0 * in.save_seconds * m);
  return r;
}

namespace {

// train.checkpoint.<key> of the report's resolved spec, 0 when absent.
double checkpoint_setting(const report::Report& report, const char* key) {
  const auto train = report.spec.find("train");
  if (train == report.spec.end() || !train->is_object()) return 0.0;
  const auto checkpoint = train->find("checkpoint");
  if (checkpoint == train->end() || !checkpoint->is_object()) return 0.0;
  const auto value = checkpoint->find(key);
  return value != checkpoint->end() && value->is_number() ? value->get<double>() : 0.0;
}

}  // namespace

SpotBasis spot_basis(const report::Report& report, const RunTimes& times,
                     std::optional<double> projected_seconds, double preemptions_per_hour) {
  SpotBasis b;
  b.inputs.preemptions_per_hour = preemptions_per_hour;
  if (projected_seconds) {
    b.inputs.work_seconds = *projected_seconds;
    b.work_from = "the projected job's time";
  } else {
    double restarts = 0.0;
    int64_t resumed = 0;
    for (const report::Segment& s : report.segments) {
      if (s.resumed_from.empty()) continue;
      restarts += s.time_to_first_step_seconds;
      ++resumed;
    }
    b.inputs.work_seconds = std::max(0.0, times.run_seconds - restarts);
    b.work_from = resumed == 0 ? "the run's time"
                               : fmt::format(
                                     "the run's time less the set-up of its {} resumed "
                                     "segment{}",
                                     resumed, resumed == 1 ? "" : "s");
  }
  const double minutes = checkpoint_setting(report, "every_minutes");
  const double steps = checkpoint_setting(report, "every_steps");
  if (minutes > 0.0) {
    b.inputs.checkpoint_interval_seconds = minutes * 60.0;
    b.interval_from = fmt::format("train.checkpoint.every_minutes: {}", minutes);
  } else if (steps > 0.0 && times.steps > 0 && times.training_seconds > 0.0) {
    const double step_seconds = times.training_seconds / static_cast<double>(times.steps);
    b.inputs.checkpoint_interval_seconds = steps * step_seconds;
    b.interval_from = fmt::format("train.checkpoint.every_steps: {} x the mean step, {}", steps,
                                  text::format_duration(step_seconds));
  } else {
    b.interval_from = "no checkpoints: a reclaim restarts the job";
  }
  double saved = 0.0;
  for (const report::CheckpointSave& c : report.checkpoints) saved += c.seconds;
  if (!report.checkpoints.empty()) {
    b.inputs.save_seconds = saved / static_cast<double>(report.checkpoints.size());
    b.save_from = fmt::format("mean of the run's {} save{}", report.checkpoints.size(),
                              report.checkpoints.size() == 1 ? "" : "s");
  } else {
    b.save_from = "no save measured";
  }
  for (const report::Segment& s : report.segments) {
    if (!s.resumed_from.empty() && s.time_to_first_step_seconds > 0.0) {
      b.inputs.restart_seconds = s.time_to_first_step_seconds;
      b.restart_from =
          fmt::format("segment {}'s time to first step (a resume, its load in)", s.index);
      return b;
    }
  }
  b.inputs.restart_seconds = report.time_to_first_step_seconds;
  b.restart_from = "the run's time to first step; a resume's load not measured";
  return b;
}

}  // namespace ftbench::cost
