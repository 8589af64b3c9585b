#include "economics/cost/estimate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ftbench::cost {
namespace {

std::optional<double> per_unit(double usd, double units) {
  if (!(units > 0.0)) return std::nullopt;
  return usd / units;
}

double usd(double seconds, double usd_per_gpu_hour, int64_t gpus) {
  return seconds / 3600.0 * usd_per_gpu_hour * static_cast<double>(gpus);
}

}  // namespace

RunTimes run_times(const report::Report& report) {
  if (report.phases.empty()) {
    throw std::invalid_argument("timing.phases is empty: the report has no timed span to cost");
  }
  RunTimes t;
  double end = 0.0;
  for (const report::Phase& p : report.phases) end = std::max(end, p.start_seconds + p.seconds);
  t.run_seconds = report.t0_before_process_seconds + end;
  t.time_to_first_step_seconds = report.time_to_first_step_seconds;
  if (report.segments.size() > 1) {
    t.run_seconds = 0.0;
    t.time_to_first_step_seconds = 0.0;
    for (const report::Segment& g : report.segments) {
      t.run_seconds += g.run_seconds;
      t.time_to_first_step_seconds += g.time_to_first_step_seconds;
      t.segment_seconds.push_back(g.run_seconds);
    }
  }
  for (const report::StepRecord& s : report.steps) {
    t.training_seconds += s.wall_seconds;
    t.trained_tokens += s.real_tokens;
  }
  t.steps = static_cast<int64_t>(report.steps.size());
  t.epochs =
      report.derived.steps_per_epoch > 0
          ? static_cast<double>(t.steps) / static_cast<double>(report.derived.steps_per_epoch)
          : 0.0;
  t.examples = t.steps * report.derived.effective_batch;
  t.steady_tokens_per_second = report.summary.tokens_per_second_real;
  t.gpus = report.world_size;
  return t;
}

Cost estimate(const RunTimes& times, const Rate& rate) {
  check_rate(rate);
  Cost c;
  c.gpus_billed = billed_gpus(times.gpus, rate.gpus_per_instance);
  c.run_seconds = times.run_seconds;
  if (times.segment_seconds.empty()) {
    c.billed_seconds = billed_seconds(times.run_seconds, rate.billing, rate.min_billed_seconds);
  } else {
    for (double seconds : times.segment_seconds) {
      c.billed_seconds += billed_seconds(seconds, rate.billing, rate.min_billed_seconds);
    }
  }
  c.billing_known = rate.billing != Billing::kUnknown;
  c.linear_usd = usd(times.run_seconds, rate.usd_per_gpu_hour, c.gpus_billed);
  c.billed_usd = usd(c.billed_seconds, rate.usd_per_gpu_hour, c.gpus_billed);
  c.per_epoch_usd = per_unit(c.billed_usd, times.epochs);
  c.per_epoch_training_usd =
      per_unit(usd(times.training_seconds, rate.usd_per_gpu_hour, c.gpus_billed), times.epochs);
  c.per_step_usd = per_unit(c.billed_usd, static_cast<double>(times.steps));
  c.per_million_tokens_usd =
      per_unit(c.billed_usd * 1e6, static_cast<double>(times.trained_tokens));
  c.before_first_step_usd =
      usd(times.time_to_first_step_seconds, rate.usd_per_gpu_hour, c.gpus_billed);
  c.before_first_step_share =
      times.run_seconds > 0.0 ? times.time_to_first_step_seconds / times.run_seconds : 0.0;
  return c;
}

Projection project(const RunTimes& times, const Rate& rate, double tokens) {
  if (!std::isfinite(tokens) || tokens <= 0.0) {
    throw std::invalid_argument(fmt::format("projected tokens must be > 0, found {}", tokens));
  }
  if (!(times.steady_tokens_per_second > 0.0)) {
    throw std::invalid_argument(
        "the report has no steady-state throughput (summary.tokens_per_second.real is 0: no "
        "steps after the timing warm-up), so nothing can be projected from it");
  }
  Projection p;
  p.tokens = tokens;
  const double measured_at_steady =
      static_cast<double>(times.trained_tokens) / times.steady_tokens_per_second;
  p.fixed_seconds = std::max(0.0, times.run_seconds - measured_at_steady);
  p.training_seconds = tokens / times.steady_tokens_per_second;
  p.total_seconds = p.fixed_seconds + p.training_seconds;
  // A throughput of 1e-320 tokens/s is a positive number: its job never ends.
  if (!std::isfinite(p.total_seconds)) {
    throw std::invalid_argument(fmt::format(
        "summary.tokens_per_second.real: {} tokens/s is too low to project {} tokens (no finite "
        "time)",
        times.steady_tokens_per_second, tokens));
  }
  RunTimes projected;
  projected.run_seconds = p.total_seconds;
  projected.gpus = times.gpus;
  p.cost = estimate(projected, rate);
  return p;
}

double tokens_for_examples(const RunTimes& times, double examples) {
  if (times.examples <= 0 || times.trained_tokens <= 0) {
    throw std::invalid_argument(
        "the report trained no examples (no steps, derived.effective_batch 0 or no real tokens), "
        "so tokens per example is unknown");
  }
  return examples * static_cast<double>(times.trained_tokens) / static_cast<double>(times.examples);
}

double tokens_for_epochs(const RunTimes& times, double epochs) {
  if (!(times.epochs > 0.0) || times.trained_tokens <= 0) {
    throw std::invalid_argument(
        "the report trained no full step (no steps, derived.steps_per_epoch 0 or no real "
        "tokens), so tokens per epoch is unknown");
  }
  return epochs * static_cast<double>(times.trained_tokens) / times.epochs;
}

double break_even_usd_per_gpu_hour(const RunTimes& other, const Rate& rate, double target_usd) {
  const int64_t gpus = billed_gpus(other.gpus, rate.gpus_per_instance);
  const double seconds = billed_seconds(other.run_seconds, rate.billing, rate.min_billed_seconds);
  if (!(seconds > 0.0)) {
    throw std::invalid_argument("a run of 0 billed seconds has no break-even rate");
  }
  return target_usd / (seconds / 3600.0 * static_cast<double>(gpus));
}

void check_usd_per_kwh(double usd_per_kwh) {
  if (!std::isfinite(usd_per_kwh) || !(usd_per_kwh >= kMinUsdPerKwh) ||
      usd_per_kwh > kMaxUsdPerKwh) {
    // A hint only where the slip it names would explain the figure: cents that make a price in
    // range (15 for $0.15), Wh that make one (0.00015 for $0.15).
    const bool cents = usd_per_kwh > kMaxUsdPerKwh && usd_per_kwh / 100.0 <= kMaxUsdPerKwh;
    const bool per_wh =
        usd_per_kwh > 0.0 && usd_per_kwh < kMinUsdPerKwh && usd_per_kwh * 1000.0 >= kMinUsdPerKwh;
    const char* why = cents    ? " (a price in cents is 100 times too high)"
                      : per_wh ? " (a price per Wh is 1000 times too low)"
                               : "";
    throw std::invalid_argument(
        fmt::format("expected a price in USD per kWh between {} and {}, found {}{}", kMinUsdPerKwh,
                    kMaxUsdPerKwh, usd_per_kwh, why));
  }
}

std::optional<EnergyCost> energy_cost(const report::Report& report, double usd_per_kwh) {
  check_usd_per_kwh(usd_per_kwh);
  if (!report.energy || !report.energy->joules) return std::nullopt;
  const report::Energy& e = *report.energy;
  EnergyCost c;
  c.usd_per_kwh = usd_per_kwh;
  c.kwh = *e.joules / 3.6e6;
  c.usd = c.kwh * usd_per_kwh;
  c.devices = static_cast<int64_t>(e.devices.size());
  if (report.derived.steps_per_epoch > 0) {
    c.epochs = static_cast<double>(e.steps) / static_cast<double>(report.derived.steps_per_epoch);
  }
  if (c.epochs > 0.0) c.per_epoch_usd = c.usd / c.epochs;
  if (e.steps > 0) c.per_step_usd = c.usd / static_cast<double>(e.steps);
  if (e.tokens > 0) c.per_million_tokens_usd = c.usd / static_cast<double>(e.tokens) * 1e6;
  return c;
}

}  // namespace ftbench::cost
