// The cost of a measured run, and of a larger job projected from it. Pure functions over the
// figures of a report; docs/cost-and-compare.md gives every formula.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "economics/cost/billing.h"
#include "report/report.h"

namespace ftbench::cost {

// What cost is computed from, taken from a report (run_times()) or written by hand in tests.
struct RunTimes {
  // Rented time the run accounts for: from t0 (process start, or --t0 / FTBENCH_T0 when a
  // wrapper passed the instance start) to the end of the last phase (the report written).
  // A resumed run: the sum over its segments (each its own rental), and the same for time to
  // first step (each process pays its set-up again).
  double run_seconds = 0.0;
  double time_to_first_step_seconds = 0.0;
  // Each segment's run_seconds, billed separately (rounding and minimum apply per rental);
  // empty: one rental of run_seconds.
  std::vector<double> segment_seconds;
  double training_seconds = 0.0;          // sum of the optimizer steps' wall time
  int64_t steps = 0;                      // optimizer steps finished
  double epochs = 0.0;                    // steps / steps per epoch (fractional when capped)
  int64_t examples = 0;                   // examples trained: steps * effective batch
  int64_t trained_tokens = 0;             // non-padding tokens fed to the model, over all steps
  double steady_tokens_per_second = 0.0;  // summary.tokens_per_second.real (after warm-up)
  int64_t gpus = 1;                       // devices the run used (run.world_size)
};

// Throws std::invalid_argument naming the field when the report cannot be costed (no phases).
RunTimes run_times(const report::Report& report);

struct Cost {
  int64_t gpus_billed = 1;
  double run_seconds = 0.0;
  double billed_seconds = 0.0;  // per instance, after rounding and minimum (per segment, summed)
  double linear_usd = 0.0;      // run_seconds * rate * gpus_billed, no rounding
  double billed_usd = 0.0;      // billed_seconds * rate * gpus_billed
  bool billing_known = true;    // false: the offer does not state its billing (billed = linear)
  // Per unit of output, from the billed cost; nullopt when the unit count is 0.
  std::optional<double> per_epoch_usd;           // billed_usd / epochs
  std::optional<double> per_epoch_training_usd;  // training time only, linear, / epochs
  std::optional<double> per_step_usd;            // billed_usd / steps
  std::optional<double> per_million_tokens_usd;  // billed_usd / trained tokens * 10^6
  double before_first_step_usd = 0.0;            // linear cost of time to first step
  double before_first_step_share = 0.0;  // time to first step / run_seconds (0 for a 0 s run)
};

Cost estimate(const RunTimes& times, const Rate& rate);

// A larger job of `tokens` trained tokens at the measured steady-state throughput, plus the
// run's fixed time: everything the measured run spent beyond its tokens at steady state
// (set-up, warm-up excess, report): fixed = run_seconds - trained_tokens / steady_tps.
struct Projection {
  double tokens = 0.0;
  double fixed_seconds = 0.0;
  double training_seconds = 0.0;  // tokens / steady_tps
  double total_seconds = 0.0;     // fixed + training
  Cost cost;                      // of total_seconds (per-epoch/step/token fields unset)
};

// Throws std::invalid_argument when the run has no steady-state throughput (no measured steps)
// or `tokens` is not finite and > 0.
Projection project(const RunTimes& times, const Rate& rate, double tokens);

// Tokens of a job of `examples` examples or `epochs` epochs, at the run's measured tokens per
// example and per epoch. Throw std::invalid_argument when the run trained nothing.
double tokens_for_examples(const RunTimes& times, double examples);
double tokens_for_epochs(const RunTimes& times, double epochs);

// The hourly rate per GPU at which `other` would cost exactly `target_usd` under `rate`'s
// billing rules (its usd_per_gpu_hour is ignored): target / (billed hours * billed GPUs).
double break_even_usd_per_gpu_hour(const RunTimes& other, const Rate& rate, double target_usd);

// The price of the run's measured board energy (report energy, since 1.6) at `usd_per_kwh`
// (`ftbench cost --energy-price`). Board energy of the devices the report measured, over its
// step loop only: not the host, cooling or the rest of the run (docs/methodology.md, Energy).
inline constexpr double kMaxUsdPerKwh = 10.0;  // far above any tariff: 15 is cents, not dollars
// Far below any tariff (a tenth of a cent): 0.00015 is a price per Wh, not per kWh.
inline constexpr double kMinUsdPerKwh = 0.001;
struct EnergyCost {
  double usd_per_kwh = 0.0;
  double kwh = 0.0;                              // energy.joules / 3.6e6
  double usd = 0.0;                              // kwh * usd_per_kwh
  double epochs = 0.0;                           // energy.steps / derived.steps_per_epoch
  std::optional<double> per_epoch_usd;           // usd / epochs
  std::optional<double> per_step_usd;            // usd / energy.steps
  std::optional<double> per_million_tokens_usd;  // usd / energy.tokens * 10^6
  int64_t devices = 0;                           // devices measured
};

// Throws std::invalid_argument "expected ..., found X" unless `usd_per_kwh` is finite and
// between kMinUsdPerKwh and kMaxUsdPerKwh.
void check_usd_per_kwh(double usd_per_kwh);

// nullopt when the report has no energy figures (before 1.6, or energy.reason says why).
std::optional<EnergyCost> energy_cost(const report::Report& report, double usd_per_kwh);

}  // namespace ftbench::cost
