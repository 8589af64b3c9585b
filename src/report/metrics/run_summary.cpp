#include "report/metrics/run_summary.h"

#include <algorithm>
#include <cmath>

#include "util/stats/summary.h"

namespace ftbench::metrics {

std::vector<bool> warmup_mask(const std::vector<report::StepRecord>& steps, int64_t warmup_steps) {
  // The warm-up is left out of each segment: a resumed process starts cold again (kernels,
  // allocator, caches), so its first steps are as unrepresentative as the run's first.
  std::vector<bool> excluded(steps.size(), false);
  std::size_t skip = 0;
  for (std::size_t i = 0, in_segment = 0; i < steps.size(); ++i) {
    in_segment = i > 0 && steps[i].segment == steps[i - 1].segment ? in_segment + 1 : 0;
    if (static_cast<int64_t>(in_segment) < warmup_steps) {
      excluded[i] = true;
      ++skip;
    }
  }
  if (skip == steps.size()) excluded.assign(excluded.size(), false);
  return excluded;
}

namespace {

// warmup_mask(report) without the profiled steps.
std::vector<bool> warmup_only_mask(const report::Report& report) {
  if (report.summary.warmup_steps_excluded <= 0) return std::vector<bool>(report.steps.size());
  // A report whose spec does not say (it always does since 1.0) has one segment.
  int64_t per_segment = report.summary.warmup_steps_excluded;
  const auto train = report.spec.find("train");
  if (train != report.spec.end() && train->is_object()) {
    const auto warmup = train->find("timing_warmup_steps");
    if (warmup != train->end() && warmup->is_number_integer()) per_segment = warmup->get<int64_t>();
  }
  std::vector<bool> mask = warmup_mask(report.steps, per_segment);
  // Held to the summary's count: a report whose spec and summary disagree (edited by hand) has
  // its first warmup_steps_excluded steps left out, as a report of one segment would.
  const auto excluded = static_cast<int64_t>(std::count(mask.begin(), mask.end(), true));
  if (excluded != report.summary.warmup_steps_excluded) {
    const auto first = std::min<std::size_t>(
        mask.size(), static_cast<std::size_t>(report.summary.warmup_steps_excluded));
    mask.assign(mask.size(), false);
    std::fill(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(first), true);
  }
  return mask;
}

}  // namespace

std::vector<bool> warmup_mask(const report::Report& report) {
  std::vector<bool> mask = warmup_only_mask(report);
  if (report.summary.profiled_steps_excluded > 0 && report.profile) {
    exclude_profiled_steps(report.steps, {report.profile->first_step, report.profile->last_step},
                           mask);
  }
  return mask;
}

int64_t exclude_profiled_steps(const std::vector<report::StepRecord>& steps,
                               std::pair<int64_t, int64_t> profiled, std::vector<bool>& excluded) {
  std::vector<bool> more = excluded;
  int64_t added = 0;
  for (std::size_t i = 0; i < steps.size() && i < more.size(); ++i) {
    if (more[i] || steps[i].step < profiled.first || steps[i].step > profiled.second) continue;
    more[i] = true;
    ++added;
  }
  if (std::count(more.begin(), more.end(), false) == 0) return 0;
  excluded = std::move(more);
  return added;
}

report::Summary summarize_run(const std::vector<report::StepRecord>& steps,
                              const std::vector<model::StepFlops>& flops, const SummaryOptions& o) {
  report::Summary s;
  const int64_t n = static_cast<int64_t>(steps.size());
  std::vector<bool> excluded = warmup_mask(steps, o.warmup_steps);
  const int64_t warmup = std::count(excluded.begin(), excluded.end(), true);
  const int64_t profiled =
      o.profiled_steps ? exclude_profiled_steps(steps, *o.profiled_steps, excluded) : 0;
  s.warmup_steps_excluded = warmup;
  s.profiled_steps_excluded = profiled;
  s.measured_steps = n - warmup - profiled;
  s.peak_tflops = o.peak_tflops;
  s.peak_source = o.peak_source;
  s.gemm_peak_tflops = o.gemm_peak_tflops;
  s.gemm_peak_source = o.gemm_peak_source;

  std::vector<double> seconds;
  double wall = 0.0;
  double wait = 0.0;
  double real = 0.0;
  double padded = 0.0;
  model::StepFlops flop_sum;
  for (int64_t i = 0; i < n; ++i) {
    if (excluded[static_cast<size_t>(i)]) continue;
    const report::StepRecord& r = steps[static_cast<size_t>(i)];
    seconds.push_back(r.wall_seconds);
    wall += r.wall_seconds;
    wait += r.data_wait_seconds;
    real += double(r.real_tokens);
    padded += double(r.padded_tokens);
    if (static_cast<size_t>(i) < flops.size()) {
      const model::StepFlops& f = flops[static_cast<size_t>(i)];
      flop_sum.lora_frozen_base += f.lora_frozen_base;
      flop_sum.lora_frozen_base_recompute += f.lora_frozen_base_recompute;
      flop_sum.six_n += f.six_n;
      flop_sum.six_n_recompute += f.six_n_recompute;
      flop_sum.executed += f.executed;
    }
  }
  s.step_seconds = stats::summarize(seconds);
  if (wall > 0.0) {
    s.tokens_per_second_real = real / wall;
    s.tokens_per_second_padded = padded / wall;
    s.data_wait_fraction = wait / wall;
  }
  s.padding_fraction = padded > 0.0 ? 1.0 - real / padded : 0.0;

  auto entry = [&](const char* formula, bool recompute, double total_flops) {
    report::MfuEntry e;
    e.formula = formula;
    e.recompute = recompute;
    e.flops_per_step = s.measured_steps > 0 ? total_flops / double(s.measured_steps) : 0.0;
    e.achieved_tflops = wall > 0.0 ? total_flops / wall / 1e12 : 0.0;
    const double devices = double(std::max<int64_t>(1, o.devices));
    if (o.peak_tflops && *o.peak_tflops > 0.0) {
      e.mfu = e.achieved_tflops / (*o.peak_tflops * devices);
    }
    if (o.gemm_peak_tflops && *o.gemm_peak_tflops > 0.0) {
      e.mfu_gemm = e.achieved_tflops / (*o.gemm_peak_tflops * devices);
    }
    s.mfu.push_back(e);
  };
  entry("lora_frozen_base", false, flop_sum.lora_frozen_base);
  entry("six_n", false, flop_sum.six_n);
  if (o.recompute) {
    entry("lora_frozen_base", true, flop_sum.lora_frozen_base_recompute);
    entry("six_n", true, flop_sum.six_n_recompute);
  }
  entry("executed", o.recompute, flop_sum.executed);

  s.loss_window = std::min<int64_t>(std::max<int64_t>(o.loss_window, 1), n);
  if (n > 0) {
    s.final_loss = steps.back().loss;
    double sum = 0.0;
    for (int64_t i = n - s.loss_window; i < n; ++i) sum += steps[static_cast<size_t>(i)].loss;
    s.mean_last_losses = sum / double(s.loss_window);
  }
  return s;
}

report::Summary summary_of_steps(const report::Report& report) {
  report::Summary s = report.summary;
  const std::vector<bool> excluded = warmup_mask(report);
  std::vector<double> seconds;
  double wall = 0.0;
  double wait = 0.0;
  double real = 0.0;
  double padded = 0.0;
  double model_flops = 0.0;
  for (std::size_t i = 0; i < report.steps.size(); ++i) {
    if (excluded[i]) continue;
    const report::StepRecord& r = report.steps[i];
    seconds.push_back(r.wall_seconds);
    wall += r.wall_seconds;
    wait += r.data_wait_seconds;
    real += double(r.real_tokens);
    padded += double(r.padded_tokens);
    model_flops += r.model_flops;
  }
  const auto measured = static_cast<int64_t>(seconds.size());
  s.measured_steps = measured;
  const std::vector<bool> warmup = warmup_only_mask(report);
  s.warmup_steps_excluded = std::count(warmup.begin(), warmup.end(), true);
  s.profiled_steps_excluded =
      static_cast<int64_t>(report.steps.size()) - measured - s.warmup_steps_excluded;
  s.step_seconds = stats::summarize(seconds);
  const auto over_wall = [&](double x) { return wall > 0.0 ? x / wall : 0.0; };
  s.tokens_per_second_real = over_wall(real);
  s.tokens_per_second_padded = over_wall(padded);
  s.data_wait_fraction = over_wall(wait);
  s.padding_fraction = padded > 0.0 ? 1.0 - real / padded : 0.0;
  const double devices = double(std::max<int64_t>(1, report.world_size));
  const auto fraction_of = [&](double achieved,
                               const std::optional<double>& peak) -> std::optional<double> {
    if (!peak || !(*peak > 0.0)) return std::nullopt;
    return achieved / (*peak * devices);
  };
  for (report::MfuEntry& e : s.mfu) {
    if (e.formula == "lora_frozen_base" && !e.recompute) {
      e.flops_per_step = measured > 0 ? model_flops / double(measured) : 0.0;
    }
    e.achieved_tflops = over_wall(e.flops_per_step * double(measured)) / 1e12;
    e.mfu = fraction_of(e.achieved_tflops, s.peak_tflops);
    e.mfu_gemm = fraction_of(e.achieved_tflops, s.gemm_peak_tflops);
  }
  const auto n = static_cast<int64_t>(report.steps.size());
  s.loss_window = std::min<int64_t>(std::max<int64_t>(s.loss_window, 1), n);
  s.final_loss = n > 0 ? report.steps.back().loss : 0.0;
  double sum = 0.0;
  for (int64_t i = n - s.loss_window; i < n; ++i) sum += report.steps[static_cast<size_t>(i)].loss;
  s.mean_last_losses = n > 0 ? sum / double(s.loss_window) : 0.0;
  return s;
}

}  // namespace ftbench::metrics
