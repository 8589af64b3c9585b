#include "analysis/compare/side_by_side.h"

#include "report/metrics/run_summary.h"
#include "report/summary_text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace ftbench::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t spec_integer(const report::Report& r, const char* section, const char* key,
                     int64_t fallback) {
  const auto s = r.spec.find(section);
  if (s == r.spec.end() || !s->is_object()) return fallback;
  const auto k = s->find(key);
  if (k == s->end() || !k->is_number_integer()) return fallback;
  return k->get<int64_t>();
}

// A ratio against a vanishing baseline (1e-320 tokens/s) is no figure: unset, never infinite.
std::optional<double> finite_or_unset(double ratio) {
  if (!std::isfinite(ratio)) return std::nullopt;
  return ratio;
}

// Step times the summary is computed over: after the timing warm-up.
std::vector<double> measured_step_seconds(const report::Report& r) {
  // The warm-up is left out of each segment of a resumed run, as the summary left it out.
  std::vector<double> out;
  const std::vector<bool> warmup = metrics::warmup_mask(r);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (!warmup[i]) out.push_back(r.steps[i].wall_seconds);
  }
  return out;
}

// The ranks of the run on the host of its first process: those whose records name that host,
// or every one of a job launched on one host; 1 for a run of one process.
int64_t ranks_on_first_host(const report::Report& r) {
  if (!r.distributed || r.world_size <= 1) return 1;
  const std::vector<report::RankRecord>& ranks = r.distributed->ranks;
  if (ranks.empty()) return r.distributed->launch == "local" ? r.world_size : 1;
  const std::string& host = ranks.front().host;
  return std::count_if(ranks.begin(), ranks.end(),
                       [&](const report::RankRecord& k) { return k.host == host; });
}

// "2 ranks x 2 threads on the 2 logical cores of one host": what the report records of how its
// processes used the CPU (environment.host.cpu_logical_cores, software.intra_op_threads, which
// every rank of `ftbench run` sets alike, and distributed.ranks[].host).
std::string cpu_use(const report::Report& r) {
  const int64_t ranks = ranks_on_first_host(r);
  return fmt::format("{} rank{} x {} threads on the {} logical cores of one host", ranks,
                     ranks == 1 ? "" : "s", r.environment.software.intra_op_threads,
                     r.environment.host.cpu_logical_cores);
}

// The cores each rank of a CPU run could have to itself; nullopt when the report does not say.
std::optional<double> cores_per_rank(const report::Report& r) {
  const int64_t threads = r.environment.software.intra_op_threads;
  const int64_t cores = r.environment.host.cpu_logical_cores;
  if (r.environment.device.backend != "cpu" || threads <= 0 || cores <= 0) return std::nullopt;
  return std::min(static_cast<double>(threads),
                  static_cast<double>(cores) / static_cast<double>(ranks_on_first_host(r)));
}

// Scaling: the same device (name and backend) in another number, the same job at the same
// effective batch (strong) or the same batch per device (weak). Ranks that got fewer cores each
// than the baseline's process are not more devices: no figure, and the caveat says why (two
// ranks on the two cores one process used read as 254 % strong scaling).
void scale_against(const report::Report& base_report, const Column& base, const report::Report& r,
                   Column& c) {
  if (c.gpus == base.gpus || c.gpu != base.gpu || c.backend != base.backend) return;
  const std::optional<double> cores = cores_per_rank(r);
  const std::optional<double> base_cores = cores_per_rank(base_report);
  if (!c.shared_cores.empty() || (cores && base_cores && *cores < *base_cores)) {
    if (c.backend != "cpu") {
      c.scaling_caveat = "ranks share a device: " + c.shared_cores;
      return;
    }
    const int64_t base_ranks = ranks_on_first_host(base_report);
    c.scaling_caveat = fmt::format("ranks share cores: {} (A: {} rank{} x {} threads on {})",
                                   cpu_use(r), base_ranks, base_ranks == 1 ? "" : "s",
                                   base_report.environment.software.intra_op_threads,
                                   base_report.environment.host.cpu_logical_cores);
    return;
  }
  if (!c.throughput_ratio || base.gpus < 1 || c.gpus < 1) return;
  const int64_t base_batch = base_report.derived.effective_batch;
  const int64_t batch = r.derived.effective_batch;
  if (base_batch <= 0 || batch <= 0) return;
  if (r.spec_fingerprint == base_report.spec_fingerprint && batch == base_batch) {
    c.scaling = "strong";
  } else if (batch * base.gpus == base_batch * c.gpus) {
    c.scaling = "weak";
  } else {
    return;
  }
  c.scaling_efficiency = finite_or_unset(*c.throughput_ratio * double(base.gpus) / double(c.gpus));
}

// How the run's ranks share a host: more intra-op threads than it has logical cores (CPU), or
// one device (GPU); "" when they do not or the report does not say.
std::string shared_cores(const report::Report& r) {
  if (r.world_size <= 1) return "";
  const int64_t ranks = ranks_on_first_host(r);
  if (r.environment.device.backend == "cpu") {
    const int64_t threads = r.environment.software.intra_op_threads;
    const int64_t cores = r.environment.host.cpu_logical_cores;
    if (ranks > 1 && threads > 0 && cores > 0 && ranks * threads > cores) return cpu_use(r);
    return "";
  }
  if (!r.distributed) return "";
  const std::vector<report::RankRecord>& all = r.distributed->ranks;
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      if (all[i].host == all[j].host && all[i].device == all[j].device) {
        return fmt::format("ranks {} and {} on one device ({} of one host)", all[i].rank,
                           all[j].rank, all[i].device);
      }
    }
  }
  return "";
}

}  // namespace

std::vector<double> smooth_losses(const std::vector<report::StepRecord>& steps, int64_t window) {
  if (window < 1) throw std::invalid_argument("loss smoothing window must be >= 1");
  std::vector<double> out(steps.size(), kNaN);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::size_t first =
        i + 1 >= static_cast<std::size_t>(window) ? i + 1 - static_cast<std::size_t>(window) : 0;
    double sum = 0.0;
    int64_t n = 0;
    for (std::size_t k = first; k <= i; ++k) {
      if (std::isfinite(steps[k].loss)) {
        sum += steps[k].loss;
        ++n;
      }
    }
    if (n > 0) out[i] = sum / static_cast<double>(n);
  }
  return out;
}

LossGap loss_curve_gap(const std::vector<report::StepRecord>& a,
                       const std::vector<report::StepRecord>& b, int64_t window,
                       int64_t skip_steps) {
  const std::vector<double> sa = smooth_losses(a, window);
  const std::vector<double> sb = smooth_losses(b, window);
  LossGap gap;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = static_cast<std::size_t>(std::max<int64_t>(0, skip_steps)); i < n; ++i) {
    // Same position means same step number: steps are 1-based and consecutive in a report.
    if (!std::isfinite(a[i].loss) || !std::isfinite(b[i].loss)) continue;
    if (!std::isfinite(sa[i]) || !std::isfinite(sb[i])) continue;
    const double d = std::fabs(sa[i] - sb[i]);
    ++gap.steps_compared;
    if (gap.at_step == 0 || d > gap.max_abs_gap) {
      gap.max_abs_gap = d;
      gap.at_step = a[i].step;
    }
  }
  return gap;
}

std::vector<Column> side_by_side(const std::vector<report::Report>& reports,
                                 const SideBySideOptions& options) {
  if (!options.rates.empty() && options.rates.size() != reports.size()) {
    throw std::invalid_argument("side_by_side: one rate per report expected");
  }
  std::vector<Column> columns;
  if (reports.empty()) return columns;

  int64_t skip = 0;
  for (const report::Report& r : reports) {
    skip = std::max(
        {skip, spec_integer(r, "train", "lr_warmup_steps", 0), r.summary.warmup_steps_excluded});
  }
  if (options.loss_skip_steps) skip = *options.loss_skip_steps;
  const int64_t window = options.loss_window.value_or(
      std::max<int64_t>(1, spec_integer(reports.front(), "train", "loss_window", 10)));

  const std::vector<double> base_steps = measured_step_seconds(reports.front());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const report::Report& r = reports[i];
    Column c;
    c.label = std::string(1, static_cast<char>('A' + std::min<std::size_t>(i, 25)));
    if (i < options.sources.size()) c.source = options.sources[i];
    c.run_name = r.run_name;
    c.gpu = r.environment.device.name;
    c.backend = r.environment.device.backend;
    c.gpus = r.world_size;
    c.times = cost::run_times(r);
    c.step_p50_seconds = r.summary.step_seconds.median;
    c.step_p90_seconds = r.summary.step_seconds.p90;
    c.measured_steps = r.summary.measured_steps;
    c.shared_cores = shared_cores(r);
    c.warmup_caveat = report::warmup_caveat(r);
    if (!r.summary.mfu.empty()) {
      c.mfu = r.summary.mfu.front().mfu;
      c.mfu_formula = r.summary.mfu.front().formula;
      c.mfu_gemm = r.summary.mfu.front().mfu_gemm;
    }
    c.gemm_peak_tflops = r.summary.gemm_peak_tflops;
    if (r.memory.peak_allocated_bytes) {
      c.peak_memory_bytes = r.memory.peak_allocated_bytes;
      c.peak_memory_kind =
          r.environment.device.backend == "cpu" ? "tensors (CPU, counted)" : "allocated (device)";
    } else if (r.memory.peak_rss_bytes) {
      c.peak_memory_bytes = r.memory.peak_rss_bytes;
      c.peak_memory_kind = "RSS (host)";
    }
    c.predicted_peak_bytes = r.memory.predicted_peak_bytes;
    if (r.memory.predicted_peak_bytes && r.memory.peak_allocated_bytes &&
        *r.memory.peak_allocated_bytes > 0) {
      c.prediction_error = static_cast<double>(*r.memory.predicted_peak_bytes) /
                               static_cast<double>(*r.memory.peak_allocated_bytes) -
                           1.0;
    }
    if (r.energy && r.energy->joules) {
      c.energy_joules = r.energy->joules;
      c.energy_joules_per_million_tokens = r.energy->joules_per_million_tokens;
      c.energy_mean_watts = r.energy->mean_watts;
      c.energy_method = r.energy->method;
      c.energy_scope = report::energy_scope(r);
    } else {
      c.energy_reason = r.energy ? r.energy->reason : "not recorded (report schema 1.5 or older)";
    }
    c.final_loss = r.summary.mean_last_losses;
    c.loss_window = r.summary.loss_window;
    if (!options.rates.empty() && options.rates[i]) {
      c.rate = options.rates[i];
      c.cost = cost::estimate(c.times, *c.rate);
    }

    if (i > 0) {
      const Column& base = columns.front();
      if (base.times.run_seconds > 0.0) {
        c.run_time_ratio = finite_or_unset(c.times.run_seconds / base.times.run_seconds);
      }
      if (base.times.steady_tokens_per_second > 0.0) {
        c.throughput_ratio =
            finite_or_unset(c.times.steady_tokens_per_second / base.times.steady_tokens_per_second);
      }
      if (base.step_p50_seconds > 0.0 && base.measured_steps > 0 && c.measured_steps > 0) {
        c.step_p50_change =
            finite_or_unset((c.step_p50_seconds - base.step_p50_seconds) / base.step_p50_seconds);
      }
      if (c.cost && base.cost && base.cost->billed_usd > 0.0) {
        c.cost_ratio = finite_or_unset(c.cost->billed_usd / base.cost->billed_usd);
        // A run billed 0 s costs 0 at any rate: no break-even (and billing would refuse it).
        if (cost::billed_seconds(c.times.run_seconds, c.rate->billing, c.rate->min_billed_seconds) >
            0.0) {
          c.break_even_usd_per_gpu_hour = finite_or_unset(
              cost::break_even_usd_per_gpu_hour(c.times, *c.rate, base.cost->billed_usd));
        }
      }
      if (c.energy_joules_per_million_tokens && base.energy_joules_per_million_tokens &&
          *base.energy_joules_per_million_tokens > 0.0) {
        c.energy_per_token_ratio = finite_or_unset(*c.energy_joules_per_million_tokens /
                                                   *base.energy_joules_per_million_tokens);
      }
      scale_against(reports.front(), base, r, c);
      const std::vector<double> steps = measured_step_seconds(r);
      if (!base_steps.empty() && !steps.empty()) {
        c.step_test = stats::mann_whitney_u(base_steps, steps);
      }
      c.loss_gap = loss_curve_gap(reports.front().steps, r.steps, window, skip);
    }
    columns.push_back(std::move(c));
  }
  return columns;
}

}  // namespace ftbench::compare
