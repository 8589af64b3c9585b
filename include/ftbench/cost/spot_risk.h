// What reclaims cost a job on spot capacity: expected time and dollars of a job that is
// interrupted at random and resumes from its last checkpoint on a new machine, the chance of at
// least one interruption, and the checkpoint interval that minimises the expected time. Pure
// functions; docs/cost-and-compare.md ("Spot risk") gives every formula and its assumptions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ftbench/cost/estimate.h"
#include "ftbench/report/report.h"

namespace ftbench::cost {

// Interruptions arrive as a Poisson process of `preemptions_per_hour` (an offer's, or
// `ftbench cost --preemptions-per-hour`).
struct SpotInputs {
  double work_seconds = 0.0;          // the job without interruptions, its checkpoint saves in
  double preemptions_per_hour = 0.0;  // > 0
  // Time between checkpoints; nullopt: none are saved, and a reclaim restarts the job.
  std::optional<double> checkpoint_interval_seconds;
  double save_seconds = 0.0;     // one checkpoint save (for the optimal interval)
  double restart_seconds = 0.0;  // a new machine to its first step, the resume's load in
};

struct SpotRisk {
  double mean_seconds_between = 0.0;           // 3600 / preemptions_per_hour
  double p_at_least_one = 0.0;                 // 1 - exp(-work / mean_between)
  double lost_per_interruption_seconds = 0.0;  // interval / 2 + restart (with checkpoints)
  // Expected wall time with the interruptions, and their expected count (expected_seconds /
  // mean_between). nullopt when the job is not expected to finish: with checkpoints, when an
  // interruption loses on average as much as the mean time between two.
  std::optional<double> expected_seconds;
  std::optional<double> expected_interruptions;
  // Young's interval sqrt(2 * save * mean_between), the first-order optimum (Daly); nullopt
  // without a save time.
  std::optional<double> optimal_interval_seconds;
};

// Throws std::invalid_argument naming the input when one is negative, not finite, or the rate
// is not > 0 (an interval must be > 0).
SpotRisk spot_risk(const SpotInputs& in);

// The inputs for a measured run (`ftbench cost --preemptions-per-hour`): the work is
// `work_seconds` (the run's time, or a projected job's); the interval the spec's
// train.checkpoint.every_minutes, else every_steps times the run's mean step time, else none;
// the save time the mean of the run's checkpoint saves (0 when it saved none); the restart a
// resumed segment's time to first step (its resume's load included), else the run's own time to
// first step (a resume's load not measured). The texts say where each figure came from.
struct SpotBasis {
  SpotInputs inputs;
  std::string interval_from;  // "every_minutes: 30", "every_steps: 50 x 3.1 s", "no checkpoints"
  std::string save_from;      // "mean of 3 saves", "no save measured"
  std::string restart_from;   // "resumed segment 2's time to first step", "time to first step"
};
SpotBasis spot_basis(const report::Report& report, const RunTimes& times, double work_seconds,
                     double preemptions_per_hour);

}  // namespace ftbench::cost
