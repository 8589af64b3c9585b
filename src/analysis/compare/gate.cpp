#include "analysis/compare/gate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "analysis/compare/verdicts.h"
#include "economics/cost/estimate.h"
#include "economics/cost/pricing.h"
#include "report/metrics/run_summary.h"
#include "report/summary_text.h"
#include "util/stats/summary.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"
#include "util/text/trim.h"
#include "util/text/units.h"

namespace ftbench::compare {
namespace {

// 1 / Phi^-1(3/4): the median absolute deviation of normal data times this is its sigma.
constexpr double kMadToSigma = 1.4826;

struct Suffix {
  std::string_view text;
  GateBound bound;
  double scale;  // to the figure's unit (seconds, bytes) or to a fraction
};

// The amounts each metric takes: "%" for all, then its own units.
std::vector<Suffix> suffixes_of(GateMetric m) {
  std::vector<Suffix> out = {{"%", GateBound::kRelative, 0.01}};
  switch (m) {
    case GateMetric::kStepTime:
    case GateMetric::kTimeToFirstStep:
      out.push_back({"ms", GateBound::kAbsolute, 1e-3});
      out.push_back({"s", GateBound::kAbsolute, 1.0});
      break;
    case GateMetric::kPeakMemory:
    case GateMetric::kPeakAllocated:
    case GateMetric::kPeakDeviceUsed:
    case GateMetric::kPeakRss:
      out.push_back({"GiB", GateBound::kAbsolute, 1073741824.0});
      out.push_back({"MiB", GateBound::kAbsolute, 1048576.0});
      out.push_back({"KiB", GateBound::kAbsolute, 1024.0});
      out.push_back({"GB", GateBound::kAbsolute, 1e9});
      out.push_back({"MB", GateBound::kAbsolute, 1e6});
      out.push_back({"KB", GateBound::kAbsolute, 1e3});
      out.push_back({"B", GateBound::kAbsolute, 1.0});
      break;
    case GateMetric::kTokensPerSecond:
    case GateMetric::kFinalLoss:
      out.push_back({"", GateBound::kAbsolute, 1.0});
      break;
    case GateMetric::kMfu:
    case GateMetric::kMfuGemm:
      out.push_back({"pp", GateBound::kPoints, 0.01});
      break;
    case GateMetric::kStatus:
    case GateMetric::kCost:
      break;
  }
  return out;
}

std::string example_amount(GateMetric m) {
  if (m == GateMetric::kFinalLoss) return "+0.02";
  if (m == GateMetric::kMfu || m == GateMetric::kMfuGemm) return "-3pp";
  return larger_is_worse(m) ? "+5%" : "-5%";
}

std::string units_allowed(GateMetric m) {
  std::vector<std::string> names;
  for (const Suffix& s : suffixes_of(m)) {
    names.push_back(s.text.empty() ? "a plain number" : std::string(s.text));
  }
  return text::join(names);
}

}  // namespace

bool larger_is_worse(GateMetric metric) {
  return metric != GateMetric::kTokensPerSecond && metric != GateMetric::kMfu &&
         metric != GateMetric::kMfuGemm;
}

GateRule parse_gate_rule(std::string_view written) {
  const std::string_view s = text::trim(written, text::kWhitespace);
  const std::string shown = text::quoted(s);
  if (s.empty())
    throw std::invalid_argument("empty rule: expected METRIC:AMOUNT, e.g. step_time:+5%");
  const std::size_t colon = s.find(':');
  const std::string_view name = text::trim(s.substr(0, colon), text::kWhitespace);
  const std::optional<GateMetric> metric = text::parse_spelling(kGateMetricSpellings, name);
  if (!metric) {
    throw std::invalid_argument(fmt::format(
        "rule {}: {}", shown,
        text::unknown_name_message("metric", name, text::spellings(kGateMetricSpellings))));
  }
  GateRule rule;
  rule.text = std::string(s);
  rule.metric = *metric;
  if (*metric == GateMetric::kStatus) {
    if (colon != std::string_view::npos) {
      throw std::invalid_argument(fmt::format(
          "rule {}: status takes no amount (any run that did not complete fails it); write "
          "\"status\"",
          shown));
    }
    return rule;
  }
  const std::string example = fmt::format("{}:{}", name, example_amount(*metric));
  if (colon == std::string_view::npos ||
      text::trim(s.substr(colon + 1), text::kWhitespace).empty()) {
    throw std::invalid_argument(
        fmt::format("rule {}: expected an amount after the metric, e.g. {}", shown, example));
  }
  std::string_view amount = text::trim(s.substr(colon + 1), text::kWhitespace);
  const bool worse_up = larger_is_worse(*metric);
  if (amount.front() == '+' || amount.front() == '-') {
    if ((amount.front() == '+') != worse_up) {
      throw std::invalid_argument(fmt::format(
          "rule {}: {} gets worse as it {}, so its amount is {} (e.g. {}); found {}", shown, name,
          worse_up ? "grows" : "falls", worse_up ? "+N" : "-N", example, amount.front()));
    }
    amount.remove_prefix(1);
  }
  for (const Suffix& suffix : suffixes_of(*metric)) {
    if (amount.size() < suffix.text.size() ||
        amount.substr(amount.size() - suffix.text.size()) != suffix.text) {
      continue;
    }
    const std::string_view number = amount.substr(0, amount.size() - suffix.text.size());
    double value = 0.0;
    if (number.empty() || number.front() == '+' || number.front() == '-') continue;
    const std::errc parsed = text::parse_double(number, value);
    if (parsed == std::errc::result_out_of_range) {
      throw std::invalid_argument(
          fmt::format("rule {}: the amount {} is out of range; expected a finite number", shown,
                      text::quoted(number)));
    }
    if (parsed != std::errc()) continue;
    rule.bound = suffix.bound;
    rule.amount = value * suffix.scale;
    if (rule.bound == GateBound::kRelative && !worse_up && rule.amount >= 1.0) {
      throw std::invalid_argument(fmt::format(
          "rule {}: a fall of 100 % or more can never happen; expected less than 100%", shown));
    }
    return rule;
  }
  throw std::invalid_argument(fmt::format("rule {}: expected an amount in {} (e.g. {}), found {}",
                                          shown, units_allowed(*metric), example,
                                          text::quoted(s.substr(colon + 1))));
}

std::vector<GateRule> parse_gate_rules(const std::vector<std::string>& values) {
  std::vector<GateRule> rules;
  for (const std::string& value : values) {
    std::string_view rest = value;
    while (true) {
      const std::size_t comma = rest.find(',');
      GateRule rule = parse_gate_rule(rest.substr(0, comma));
      for (const GateRule& earlier : rules) {
        if (earlier.metric == rule.metric && earlier.bound == rule.bound &&
            earlier.amount == rule.amount) {
          throw std::invalid_argument(
              earlier.text == rule.text
                  ? fmt::format("rule {} is given twice", text::quoted(rule.text))
                  : fmt::format("rules {} and {} are the same rule", text::quoted(earlier.text),
                                text::quoted(rule.text)));
        }
      }
      rules.push_back(std::move(rule));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return rules;
}

namespace {

// c_n: makes c_n x 1.4826 x MAD mean-unbiased for normal samples of n values (Croux and
// Rousseeuw's b_n), for n = 3 to 20, as benchmarks/mad-small-sample.py computes them by Monte
// Carlo; beyond, their n / (n - 0.8).
double mad_small_sample_factor(std::size_t n) {
  static constexpr double kFactors[] = {1.489, 1.362, 1.215, 1.191, 1.136, 1.127,
                                        1.101, 1.095, 1.080, 1.077, 1.067, 1.065,
                                        1.057, 1.055, 1.049, 1.048, 1.043, 1.042};
  if (n >= 3 && n <= 20) return kFactors[n - 3];
  return static_cast<double>(n) / (static_cast<double>(n) - 0.8);
}

}  // namespace

Center center_of(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("center_of: no values");
  Center c;
  c.median = stats::percentile(values, 0.5);
  // Two values' MAD is half their gap: one outlier night would set it. From three on, the median
  // absolute deviation ignores one.
  if (values.size() >= kMinSpreadReports) {
    std::vector<double> deviations;
    for (double v : values) deviations.push_back(std::fabs(v - c.median));
    c.spread =
        mad_small_sample_factor(values.size()) * kMadToSigma * stats::percentile(deviations, 0.5);
  }
  return c;
}

namespace {

using Read = std::function<std::optional<double>(const report::Report&)>;

// One figure a rule holds: how to read it from a report.
struct Figure {
  std::string name;
  std::string unit;
  Read read;
};

std::optional<cost::RunTimes> times_of(const report::Report& r) {
  try {
    return cost::run_times(r);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::optional<double> bytes(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

std::optional<double> first_mfu(const report::Report& r, bool gemm) {
  if (r.summary.mfu.empty()) return std::nullopt;
  const report::MfuEntry& e = r.summary.mfu.front();
  return gemm ? e.mfu_gemm : e.mfu;
}

// The largest of the run's figure and every rank's (a job of several processes: `memory` is
// rank 0's, the others' are in distributed.ranks).
std::optional<double> largest(const std::optional<int64_t>& own, const report::Report& r,
                              std::optional<int64_t> report::RankRecord::*field) {
  std::optional<double> out = bytes(own);
  if (!r.distributed) return out;
  for (const report::RankRecord& rank : r.distributed->ranks) {
    const std::optional<double> v = bytes(rank.*field);
    if (v && (!out || *v > *out)) out = v;
  }
  return out;
}

std::vector<Figure> memory_figures(GateMetric m) {
  std::vector<Figure> out;
  if (m == GateMetric::kPeakMemory || m == GateMetric::kPeakAllocated) {
    out.push_back({"allocator peak", "bytes", [](const report::Report& r) {
                     return largest(r.memory.peak_allocated_bytes, r,
                                    &report::RankRecord::peak_allocated_bytes);
                   }});
  }
  if (m == GateMetric::kPeakMemory || m == GateMetric::kPeakDeviceUsed) {
    out.push_back({"device-wide peak", "bytes",
                   [](const report::Report& r) { return bytes(r.memory.device_used_peak_bytes); }});
  }
  if (m == GateMetric::kPeakMemory || m == GateMetric::kPeakRss) {
    out.push_back({"host RSS peak", "bytes", [](const report::Report& r) {
                     return largest(r.memory.peak_rss_bytes, r,
                                    &report::RankRecord::peak_rss_bytes);
                   }});
  }
  return out;
}

std::vector<Figure> figures_of(GateMetric m, const GateOptions& options) {
  switch (m) {
    case GateMetric::kStepTime:
      return {{"median step time", "s", [](const report::Report& r) -> std::optional<double> {
                 if (r.summary.measured_steps <= 0) return std::nullopt;
                 return r.summary.step_seconds.median;
               }}};
    case GateMetric::kTokensPerSecond:
      return {{"tokens/s", "tokens/s", [](const report::Report& r) -> std::optional<double> {
                 const auto t = times_of(r);
                 if (!t || r.summary.measured_steps <= 0) return std::nullopt;
                 return t->steady_tokens_per_second;
               }}};
    case GateMetric::kTimeToFirstStep:
      // The first process's: a resumed run pays its set-up again in every process, which is an
      // interruption's cost (the cost rule bills it), not a slower set-up.
      return {{"time to first step", "s", [](const report::Report& r) -> std::optional<double> {
                 if (r.steps.empty()) return std::nullopt;
                 if (r.segments.size() > 1) return r.segments.front().time_to_first_step_seconds;
                 return r.time_to_first_step_seconds;
               }}};
    case GateMetric::kFinalLoss:
      return {{"smoothed final loss", "loss", [](const report::Report& r) -> std::optional<double> {
                 if (r.steps.empty() || !std::isfinite(r.summary.mean_last_losses)) {
                   return std::nullopt;
                 }
                 return r.summary.mean_last_losses;
               }}};
    case GateMetric::kMfu:
      return {{"MFU (datasheet peak)", "fraction",
               [](const report::Report& r) { return first_mfu(r, false); }}};
    case GateMetric::kMfuGemm:
      return {{"MFU (measured GEMM peak)", "fraction",
               [](const report::Report& r) { return first_mfu(r, true); }}};
    case GateMetric::kCost: {
      std::vector<Figure> out;
      for (const GatePrice& p : options.prices) {
        out.push_back({fmt::format("billed at {} ({})", p.name, cost::describe_rate(p.rate)), "USD",
                       [rate = p.rate](const report::Report& r) -> std::optional<double> {
                         const auto t = times_of(r);
                         if (!t) return std::nullopt;
                         return cost::estimate(*t, rate).billed_usd;
                       }});
      }
      return out;
    }
    case GateMetric::kStatus:
      return {};
    default:
      return memory_figures(m);
  }
}

// What a report lacks when a rule has no figure to hold.
std::string lacks(GateMetric m) {
  switch (m) {
    case GateMetric::kStepTime:
    case GateMetric::kTokensPerSecond:
      return "a measured step (every step was timing warm-up, or none ran)";
    case GateMetric::kTimeToFirstStep:
    case GateMetric::kFinalLoss:
      return "a finished step";
    case GateMetric::kMfu:
      return "an MFU figure (no peak TFLOP/s was known for the device: ftbench run "
             "--peak-tflops)";
    case GateMetric::kMfuGemm:
      return "an MFU figure against a measured GEMM peak (ftbench run --gemm FILE)";
    case GateMetric::kCost:
      return "a run time to bill";
    default:
      return "a peak of this kind of memory";
  }
}

// The limit of one figure: the rule's amount from the baseline's median, moved out to
// noise_sigmas x spread when that is further.
void set_limit(GatePart& p, const GateRule& rule, double noise_sigmas) {
  const bool up = larger_is_worse(rule.metric);
  const double base = *p.baseline;
  const double step =
      rule.bound == GateBound::kRelative ? std::fabs(base) * rule.amount : rule.amount;
  double limit = up ? base + step : base - step;
  // The relative limit as the product, so that a figure exactly +5 % of its baseline computed
  // the same way sits on the limit (and passes).
  if (rule.bound == GateBound::kRelative && base >= 0.0) {
    limit = up ? base * (1.0 + rule.amount) : base * (1.0 - rule.amount);
  }
  if (p.spread && noise_sigmas * *p.spread > step) {
    limit = up ? base + noise_sigmas * *p.spread : base - noise_sigmas * *p.spread;
    p.widened = true;
  }
  p.limit = limit;
  p.beyond = up ? *p.current > limit : *p.current < limit;
}

// A figure beside its limit: with every digit when the short forms would read the same while one
// is beyond the other ("5.5065, limit 5.5065").
std::pair<std::string, std::string> figure_and_limit(const GatePart& p) {
  std::string now = gate_figure_text(*p.current, p.unit);
  std::string limit = gate_figure_text(*p.limit, p.unit);
  if (now == limit && *p.current != *p.limit) {
    const auto exact = [&](double v) {
      if (p.unit == "bytes") return fmt::format("{:.0f} B", v);
      if (p.unit == "fraction") return fmt::format("{:.17g} %", 100.0 * v);
      if (p.unit == "USD") return fmt::format("${:.17g}", v);
      if (p.unit == "loss") return fmt::format("{:.17g}", v);
      return fmt::format("{:.17g} {}", v, p.unit);
    };
    now = exact(*p.current);
    limit = exact(*p.limit);
  }
  return {now, limit};
}

std::string part_text(const GatePart& p, const GateRule& rule, double noise_sigmas) {
  const auto [now, limit] = figure_and_limit(p);
  std::string s =
      fmt::format("{} {} against {} ({}), limit {}", p.name, now,
                  gate_figure_text(*p.baseline, p.unit), gate_change_text(p, rule.bound), limit);
  if (p.widened) {
    s += fmt::format(" (widened to {:g} x the baseline's spread of {})", noise_sigmas,
                     gate_figure_text(*p.spread, p.unit));
  }
  return s;
}

// The wall times of the measured steps (after each segment's warm-up).
std::vector<double> step_samples(const report::Report& r) {
  std::vector<double> out;
  const std::vector<bool> warmup = metrics::warmup_mask(r);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (!warmup[i] && std::isfinite(r.steps[i].wall_seconds)) {
      out.push_back(r.steps[i].wall_seconds);
    }
  }
  return out;
}

GateResult status_result(const GateRule& rule, const report::Report& current) {
  GateResult g;
  g.rule = rule;
  GatePart p;
  p.name = "status";
  p.unit = "status";
  p.baseline_text = "completed";
  p.current_text = current.status;
  p.beyond = current.status != "completed";
  g.parts.push_back(p);
  g.outcome = p.beyond ? GateOutcome::kFail : GateOutcome::kPass;
  g.message =
      p.beyond ? fmt::format("the run did not complete: status {}", text::printable(current.status))
               : "the run completed";
  return g;
}

}  // namespace

bool test_can_decide(int64_t n1, int64_t n2, double alpha) {
  if (n1 < 1 || n2 < 1) return false;
  // The smallest p the samples' sizes allow: every value of one below every value of the other.
  std::vector<double> a, b;
  for (int64_t i = 0; i < n1; ++i) a.push_back(static_cast<double>(i));
  for (int64_t i = 0; i < n2; ++i) b.push_back(static_cast<double>(n1 + i));
  return stats::mann_whitney_u(a, b).p_value < alpha;
}

namespace {

// The step test of step_time: decides a rule whose median went beyond its limit, or leaves it
// undecided when either side has too few steps. The difference counts only when it is
// significant in the worse direction: the new run's steps rank above the baseline's (U of the
// baseline below half of n1 n2).
void apply_step_test(GateResult& g, const std::vector<report::Report>& baseline,
                     const report::Report& current, const GateOptions& options) {
  std::vector<double> base;
  for (const report::Report& r : baseline) {
    const std::vector<double> s = step_samples(r);
    base.insert(base.end(), s.begin(), s.end());
  }
  const std::vector<double> now = step_samples(current);
  if (!base.empty() && !now.empty()) g.test = stats::mann_whitney_u(base, now);
  const int64_t n_base = static_cast<int64_t>(base.size());
  const int64_t n_now = static_cast<int64_t>(now.size());
  if (n_base < options.min_samples || n_now < options.min_samples ||
      !test_can_decide(n_base, n_now, options.alpha)) {
    g.outcome = GateOutcome::kTooFewSamples;
    g.message += fmt::format(
        "; too few samples for the test: {} measured steps in the baseline, {} in the new run; "
        "it needs {} on each side and a p below alpha {:g} within reach (more steps, or fewer "
        "timing warm-up steps)",
        n_base, n_now, options.min_samples, options.alpha);
    return;
  }
  if (!g.parts.front().beyond) {
    g.outcome = GateOutcome::kPass;
    return;
  }
  const bool slower = g.test->u1 < 0.5 * static_cast<double>(g.test->n1 * g.test->n2);
  const bool significant = g.test->p_value < options.alpha && slower;
  g.outcome = significant ? GateOutcome::kFail : GateOutcome::kPass;
  g.message += fmt::format(
      "; beyond the limit and {}: Mann-Whitney U {:g}, {} at alpha {:g}{}",
      significant ? "significant" : "not significant", g.test->u1, p_value_text(g.test->p_value),
      options.alpha,
      g.test->p_value < options.alpha && !slower ? ", but the new run's steps rank faster" : "");
}

GateResult evaluate_rule(const GateRule& rule, const std::vector<report::Report>& baseline,
                         const report::Report& current, const GateOptions& options) {
  if (rule.metric == GateMetric::kStatus) return status_result(rule, current);
  GateResult g;
  g.rule = rule;
  std::vector<std::string> missing;
  for (const Figure& f : figures_of(rule.metric, options)) {
    std::vector<double> values;
    for (const report::Report& r : baseline) {
      if (const std::optional<double> v = f.read(r); v && std::isfinite(*v)) values.push_back(*v);
    }
    const std::optional<double> now = f.read(current);
    const bool have_now = now && std::isfinite(*now);
    if (values.empty() || !have_now) {
      missing.push_back(values.empty() && !have_now ? "both"
                        : values.empty()            ? "the baseline"
                                                    : "the new report");
      continue;
    }
    GatePart p;
    p.name = f.name;
    p.unit = f.unit;
    const Center c = center_of(values);
    p.baseline = c.median;
    p.spread = c.spread;
    p.current = *now;
    set_limit(p, rule, options.noise_sigmas);
    g.parts.push_back(p);
  }
  if (g.parts.empty()) {
    g.outcome = GateOutcome::kNotMeasured;
    const std::string who =
        missing.empty() || missing.front() == "both" ? "each report" : missing.front();
    g.message = fmt::format("{} lacks {}", who, lacks(rule.metric));
    return g;
  }
  std::vector<std::string> lines;
  for (const GatePart& p : g.parts) lines.push_back(part_text(p, rule, options.noise_sigmas));
  g.message = fmt::format("{}", fmt::join(lines, "; "));
  // A run that did not complete is partial: its figures (a loss 12 steps in, a cost cut short)
  // say nothing of the job's. The status rule fails it; the others cannot decide.
  if (current.status != "completed") {
    g.outcome = GateOutcome::kNotMeasured;
    g.message = fmt::format(
        "the new run did not complete (status {}): its figures are a partial "
        "run's; {}",
        text::printable(current.status), g.message);
    return g;
  }
  // A limit at or below 0 (a throughput, an MFU) can never be crossed. Pushed there by the
  // baseline's spread, the baseline is too noisy for the rule to decide; by the rule's own
  // amount (tokens_per_second:-20000 against 18,000 tokens/s), the rule measures nothing here.
  for (const GatePart& p : g.parts) {
    if (larger_is_worse(rule.metric) || *p.limit > 0.0) continue;
    g.outcome = p.widened ? GateOutcome::kTooFewSamples : GateOutcome::kNotMeasured;
    g.message += p.widened ? "; the baseline's spread puts the limit at or below 0: too noisy to "
                             "decide (more baseline reports, or fewer --noise-sigmas)"
                           : "; the rule's amount puts the limit at or below 0 against this "
                             "baseline: it can never fail (a smaller amount, or a % one)";
    return g;
  }
  if (rule.metric == GateMetric::kStepTime) {
    apply_step_test(g, baseline, current, options);
    return g;
  }
  const bool any_beyond =
      std::any_of(g.parts.begin(), g.parts.end(), [](const GatePart& p) { return p.beyond; });
  g.outcome = any_beyond ? GateOutcome::kFail : GateOutcome::kPass;
  return g;
}

}  // namespace

std::vector<GateResult> evaluate_gate(const std::vector<report::Report>& baseline,
                                      const report::Report& current,
                                      const std::vector<GateRule>& rules,
                                      const GateOptions& options) {
  if (baseline.empty()) throw std::invalid_argument("the gate needs a baseline report");
  for (const GateRule& rule : rules) {
    if (rule.metric == GateMetric::kCost && options.prices.empty()) {
      throw std::invalid_argument(fmt::format(
          "rule {}: the cost rule needs a price: --offer NAME (a catalog offer) or --rate "
          "USD_PER_GPU_HOUR, each given once per price to hold the cost at",
          text::quoted(rule.text)));
    }
  }
  std::vector<GateResult> results;
  for (const GateRule& rule : rules)
    results.push_back(evaluate_rule(rule, baseline, current, options));
  return results;
}

std::string gate_figure_text(double v, const std::string& unit) {
  if (unit == "s") return fmt::format("{:.4g} s", v);
  if (unit == "tokens/s") return fmt::format("{:.0f} tokens/s", v);
  if (unit == "bytes") return text::format_bytes(static_cast<int64_t>(std::llround(v)));
  if (unit == "USD") return text::format_usd(v);
  if (unit == "fraction") return fmt::format("{:.2f} %", 100.0 * v);
  return fmt::format("{:.4f}", v);
}

std::string gate_change_text(const GatePart& p, GateBound bound) {
  if (!p.baseline || !p.current) return "";
  const double d = *p.current - *p.baseline;
  if (bound == GateBound::kPoints) return fmt::format("{:+.2f} pp", 100.0 * d);
  if (bound == GateBound::kRelative && *p.baseline != 0.0) {
    return text::format_percent(d / *p.baseline, true);
  }
  return (d < 0 ? "-" : "+") + gate_figure_text(std::fabs(d), p.unit);
}

GateVerdict gate_verdict(const std::vector<GateResult>& results, bool undecided_fails) {
  GateVerdict v;
  for (const GateResult& r : results) {
    ++v.rules;
    if (r.outcome == GateOutcome::kPass) {
      ++v.passes;
    } else if (is_undecided(r.outcome)) {
      ++v.undecided;
    } else {
      ++v.failures;
    }
  }
  v.passed = v.failures == 0 && (!undecided_fails || v.undecided == 0);
  return v;
}

}  // namespace ftbench::compare
