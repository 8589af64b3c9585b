// What reclaims cost a job on spot capacity: expected time and dollars of a job that is
// interrupted at random and resumes from its last checkpoint on a new machine, the chance of at
// least one interruption, and the checkpoint interval that minimises the expected time. Pure
// functions; docs/cost-and-compare.md ("Spot risk") gives every formula and its assumptions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "economics/cost/estimate.h"
#include "report/report.h"

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

// The job as segments of `segment_seconds` of work, each run again from its start when a reclaim
// hits it, after the restart: E = (W / s) (M + R) (e^(s/M) - 1), exact for Poisson reclaims.
struct SpotRisk {
  double mean_seconds_between = 0.0;  // M = 3600 / preemptions_per_hour
  double p_at_least_one = 0.0;        // 1 - e^(-W/M)
  // s: the checkpoint interval, or the whole work where there is none or it is longer than the
  // work (no checkpoint inside the job to resume from).
  double segment_seconds = 0.0;
  // R as counted: the restart where a checkpoint is resumed from; 0 where the job starts again
  // from nothing, whose own set-up is part of the work run again.
  double restart_counted_seconds = 0.0;
  // Expected wall time and reclaims, (W / s)(e^(s/M) - 1) of them, and the time each costs on
  // average ((E - W) / reclaims; 0 when none is expected). nullopt where e^(s/M) overflows (no
  // finite expectation: the job would practically never finish).
  std::optional<double> expected_seconds;
  std::optional<double> expected_interruptions;
  std::optional<double> lost_per_interruption_seconds;
  // Young's interval sqrt(2 * save * M), the first-order optimum; nullopt without a save time.
  std::optional<double> optimal_interval_seconds;
};

// Throws std::invalid_argument naming the input when one is negative, not finite, or the rate
// is not > 0 (an interval must be > 0).
SpotRisk spot_risk(const SpotInputs& in);

// The inputs for a measured run (`ftbench cost --preemptions-per-hour`): the work is the
// projected job's time when `projected_seconds` is given, else the run's time less the set-up of
// its resumed segments (a real interruption's restart is not work); the interval the spec's
// train.checkpoint.every_minutes, else every_steps times the run's mean step time, else none; the
// save time the mean of the run's checkpoint saves (0 when it saved none); the restart a resumed
// segment's time to first step (its resume's load in), else the run's own time to first step (a
// resume's load not measured). The texts say where each figure came from.
struct SpotBasis {
  SpotInputs inputs;
  std::string work_from;      // "the run's time", "the projected job's time", ...
  std::string interval_from;  // "train.checkpoint.every_minutes: 30", "no checkpoints"
  std::string save_from;      // "mean of the run's 3 saves", "no save measured"
  std::string restart_from;   // "segment 2's time to first step ...", "the run's time to ..."
};
SpotBasis spot_basis(const report::Report& report, const RunTimes& times,
                     std::optional<double> projected_seconds, double preemptions_per_hour);

}  // namespace ftbench::cost
