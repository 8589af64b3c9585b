#include "analysis/compare/verdicts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/text/units.h"

namespace ftbench::compare {

using text::format_duration;
using text::format_percent;
using text::format_usd;

std::string difference_line(const Difference& d) {
  std::string values;
  for (std::size_t i = 0; i < d.values.size(); ++i) {
    if (i > 0) values += " | ";
    values +=
        std::string(1, static_cast<char>('A' + std::min<std::size_t>(i, 25))) + ": " + d.values[i];
  }
  return fmt::format("[{}] {}: {}{}", to_string(d.severity), d.what, values,
                     d.note.empty() ? "" : " — " + d.note);
}

std::string fairness_headline(const Fairness& f) {
  if (!f.same_job) return "NOT the same job: the figures below answer different questions";
  std::string data = f.same_data_fingerprint ? "same data fingerprint"
                                             : "data fingerprint not recorded in every report";
  // A fallback leaves the fingerprint alone (the spec is what was asked for) but not the run.
  if (f.same_spec_fingerprint && !f.fell_back) {
    return "fair: same job (same spec fingerprint, " + data + ", same steps)";
  }
  return "fair: same job run differently (execution settings below differ; " + data + ")";
}

std::string fairness_kind(const Fairness& f) {
  if (!f.same_job) return "different jobs";
  return f.same_spec_fingerprint && !f.fell_back ? "same job" : "same job run differently";
}

std::string p_value_text(double p) {
  if (p < 0.001) return "p < 0.001";
  return fmt::format("p = {:.3f}", p);
}

std::string significance(const stats::MannWhitneyResult& t, double alpha) {
  std::string text = fmt::format("Mann-Whitney U {}, {}", t.u1, p_value_text(t.p_value));
  text += t.p_value < alpha ? fmt::format(": significant at {:g}", alpha)
                            : fmt::format(": not significant at {:g}", alpha);
  if (t.too_few_samples) {
    text += fmt::format(" (only {} and {} measured steps; {} or more each give the test power)",
                        t.n1, t.n2, stats::kMannWhitneyOptimalSamples);
  }
  return text;
}

namespace {

// The step-time test of one run per side, in words that do not call it significant: two
// identical ci-tiny runs read "-52.4 %, p = 0.002, significant" when it did.
std::string within_runs_test(const stats::MannWhitneyResult& t) {
  return fmt::format(
      "Mann-Whitney U {}, {} over the steps of one run each: steps within a run are not "
      "independent samples of the run-to-run variation, so this is no evidence that another run "
      "would differ; repeat each run to tell",
      t.u1, p_value_text(t.p_value));
}

bool same(double a, double b) {
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0.0 || std::fabs(a - b) <= kSameWithin * scale;
}

}  // namespace

// `alpha` no longer judges the step-time test: one report is one run, and its steps are no
// sample of the run-to-run variation (docs/cost-and-compare.md).
std::vector<std::string> verdicts(const std::vector<Column>& cols, double /*alpha*/) {
  std::vector<std::string> out;
  const Column& a = cols.front();
  for (std::size_t i = 1; i < cols.size(); ++i) {
    const Column& b = cols[i];
    std::string v = b.gpus != a.gpus ? fmt::format("{} ({} x {}) vs A ({} x {}): ", b.label, b.gpus,
                                                   b.gpu, a.gpus, a.gpu)
                                     : fmt::format("{} ({}) vs A ({}): ", b.label, b.gpu, a.gpu);
    const double tb = b.times.run_seconds;
    const double ta = a.times.run_seconds;
    // No ratio against a run of 0 s (every phase 0 s long): "took longer", not "infx".
    if (same(tb, ta)) {
      v += "same total time";
    } else if (tb > ta) {
      v += ta > 0.0 ? fmt::format("took {:.2f}x as long", tb / ta) : std::string("took longer");
    } else {
      v += tb > 0.0 ? fmt::format("finished {:.2f}x sooner", ta / tb)
                    : std::string("finished sooner");
    }
    v += fmt::format(" ({} vs {})", format_duration(tb), format_duration(ta));
    if (!b.scaling_caveat.empty()) {
      v += fmt::format("; {}: throughput {:.2f}x on {:.2g}x the ranks is no measure of scaling",
                       b.scaling_caveat, b.throughput_ratio.value_or(0.0),
                       double(b.gpus) / double(a.gpus));
    } else if (b.scaling_efficiency) {
      v += fmt::format("; {} scaling efficiency {} (throughput {:.2f}x on {:.2g}x the devices)",
                       b.scaling, format_percent(*b.scaling_efficiency),
                       b.throughput_ratio.value_or(0.0), double(b.gpus) / double(a.gpus));
    }
    if (b.step_p50_change) {
      v += fmt::format("; step time p50 {}", format_percent(*b.step_p50_change, true));
      if (b.step_test) v += " (" + within_runs_test(*b.step_test) + ")";
    } else {
      v += "; no measured steps to compare";
    }
    for (const Column* c : {&a, &b}) {
      if (!c->warmup_caveat.empty()) v += fmt::format("; {}: {}", c->label, c->warmup_caveat);
    }
    if (b.cost_ratio && a.cost && b.cost) {
      const double cb = b.cost->billed_usd;
      const double ca = a.cost->billed_usd;
      v += fmt::format("; cost {} vs {} ({})", format_usd(cb), format_usd(ca),
                       format_percent(*b.cost_ratio - 1.0, true));
      const std::string faster = same(tb, ta) ? "" : (tb < ta ? b.label : a.label);
      const std::string cheaper = same(cb, ca) ? "" : (cb < ca ? b.label : a.label);
      if (faster.empty() && cheaper.empty()) {
        v += ". Same time and cost";
      } else if (faster.empty()) {
        v += fmt::format(". Same time; {} is cheaper", cheaper);
      } else if (cheaper.empty()) {
        v += fmt::format(". {} is faster at the same cost", faster);
      } else if (faster == cheaper) {
        v += fmt::format(". {} is faster and cheaper", faster);
      } else {
        v += fmt::format(". {} is faster, {} is cheaper", faster, cheaper);
      }
      if (b.break_even_usd_per_gpu_hour && !same(cb, ca)) {
        v += fmt::format(". {} would cost the same as A at {}/GPU-h (its rate: {}/GPU-h)", b.label,
                         format_usd(*b.break_even_usd_per_gpu_hour),
                         format_usd(b.rate->usd_per_gpu_hour));
      }
    } else {
      v += "; no cost (give --rate or --offer per report, or add catalog offers for the GPU)";
    }
    out.push_back(v + ".");
  }
  return out;
}

}  // namespace ftbench::compare
