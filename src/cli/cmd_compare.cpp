// `ftbench compare A.json B.json [...]`: is the comparison fair, and then the figures side by
// side, each report against the first, with costs, break-even rates and a significance test.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "analysis/compare/fairness.h"
#include "analysis/compare/side_by_side.h"
#include "analysis/compare/verdicts.h"
#include "cli/commands.h"
#include "cli/inputs.h"
#include "economics/cost/cost_json.h"
#include "economics/cost/pricing.h"
#include "report/summary_text.h"
#include "util/text/json_values.h"
#include "util/text/markdown.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::stats {

// `compare --format json`'s step_test (docs/cost-and-compare.md).
inline void to_json(nlohmann::ordered_json& j, const MannWhitneyResult& r) {
  // Over the steps of one run per side: not a test of the run-to-run variation.
  j = {{"test", "mann-whitney-u, two-sided"}, {"samples", "steps of one run per side"}};
  FTBENCH_JSON_MEMBERS(j, r, n1, n2, u1, p_value, exact, too_few_samples);
}

}  // namespace ftbench::stats

namespace ftbench::compare {

FTBENCH_JSON_WRITER(LossGap, max_abs_gap, at_step, steps_compared)

}  // namespace ftbench::compare

namespace ftbench::cli {
namespace {

// Joules with three significant digits, in J below 1 kJ (30 J is not "0.0 kJ"), else kJ or MJ.
std::string energy_amount(double joules) {
  if (std::fabs(joules) < 1e3) return fmt::format("{:.3g} J", joules);
  if (std::fabs(joules) < 1e6) return fmt::format("{:.3g} kJ", joules / 1e3);
  return fmt::format("{:.3g} MJ", joules / 1e6);
}

struct CompareFlags {
  CommonFlags common;
  std::vector<std::string> reports;
  PriceFlags prices;
  bool allow_different = false;
  std::optional<int64_t> loss_skip_steps;
  std::optional<int64_t> loss_window;
  double alpha = 0.05;
  std::vector<std::string> fail_on;  // refused: `ftbench gate` is the gate
};

using OJson = nlohmann::ordered_json;
using compare::Column;
using text::Align;
using text::Cell;
using text::Color;
using text::format_duration;
using text::format_percent;
using text::format_usd;

std::string ratio_text(const std::optional<double>& r) {
  return r ? fmt::format("{:.2f}x", *r) : "";
}

// The side-by-side table, one column per report, built row by row.
struct SideTable {
  const std::vector<Column>& cols;
  text::Table t;

  explicit SideTable(const std::vector<Column>& columns) : cols(columns) {
    t.header = {""};
    t.align = {Align::kLeft};
    for (const Column& c : cols) {
      t.header.push_back(c.label);
      t.align.push_back(Align::kRight);
    }
  }
  void row(const std::string& name, const std::function<Cell(const Column&)>& value) {
    std::vector<Cell> cells = {Cell(name)};
    for (const Column& c : cols) cells.push_back(value(c));
    t.rows.push_back(std::move(cells));
  }
};

// What ran, how long it took, how fast and how well.
void run_rows(SideTable& s) {
  const std::vector<Column>& cols = s.cols;
  s.row("report", [](const Column& c) { return Cell(c.source); });
  s.row("run", [](const Column& c) { return Cell(c.run_name); });
  s.row("device", [](const Column& c) { return Cell(c.gpu); });
  s.row("backend", [](const Column& c) { return Cell(c.backend); });
  s.row("GPUs", [](const Column& c) { return Cell(std::to_string(c.gpus)); });
  s.row("time to first step (end)", [](const Column& c) {
    return Cell(c.times.steps > 0 ? format_duration(c.times.time_to_first_step_seconds) : "n/a");
  });
  s.row("training time",
        [](const Column& c) { return Cell(format_duration(c.times.training_seconds)); });
  s.row("total time", [](const Column& c) { return Cell(format_duration(c.times.run_seconds)); });
  s.row("tokens/s", [](const Column& c) {
    return Cell(c.measured_steps > 0 ? fmt::format("{:.0f}", c.times.steady_tokens_per_second)
                                     : "n/a");
  });
  s.row("step p50",
        [](const Column& c) { return Cell(fmt::format("{:.4f} s", c.step_p50_seconds)); });
  s.row("step p90",
        [](const Column& c) { return Cell(fmt::format("{:.4f} s", c.step_p90_seconds)); });
  s.row("MFU", [](const Column& c) {
    return Cell(c.mfu ? format_percent(*c.mfu) + " (" + c.mfu_formula + ")" : "n/a");
  });
  // Only when a report carries a measured GEMM peak (ftbench run --gemm): what each device
  // achieved on its best matmul, and the run's MFU against that rather than the datasheet.
  const bool any_gemm = std::any_of(cols.begin(), cols.end(),
                                    [](const Column& c) { return c.gemm_peak_tflops.has_value(); });
  if (any_gemm) {
    s.row("measured GEMM peak", [](const Column& c) {
      return Cell(c.gemm_peak_tflops ? fmt::format("{:.4g} TFLOP/s", *c.gemm_peak_tflops) : "n/a");
    });
    s.row("MFU vs GEMM peak", [](const Column& c) {
      return Cell(c.mfu_gemm ? format_percent(*c.mfu_gemm) + " (" + c.mfu_formula + ")" : "n/a");
    });
  }
  s.row("peak memory", [](const Column& c) {
    return Cell(c.peak_memory_bytes
                    ? text::format_bytes(*c.peak_memory_bytes) + " " + c.peak_memory_kind
                    : "n/a");
  });
  s.row("peak memory, plan", [](const Column& c) {
    if (!c.predicted_peak_bytes) return Cell("n/a");
    return Cell(text::format_bytes(*c.predicted_peak_bytes) +
                (c.prediction_error
                     ? fmt::format(" ({:+.1f} % vs measured)", 100.0 * *c.prediction_error)
                     : std::string(" (no measured tensor peak)")));
  });
  s.row("final loss", [](const Column& c) {
    return Cell(std::isfinite(c.final_loss) && c.times.steps > 0
                    ? fmt::format("{:.4f} (mean of last {})", c.final_loss, c.loss_window)
                    : "n/a");
  });
}

void energy_rows(SideTable& s) {
  s.row("GPU board energy", [](const Column& c) {
    if (!c.energy_joules) return Cell("n/a: " + c.energy_reason);
    return Cell(energy_amount(*c.energy_joules) + " (" + c.energy_method +
                (c.energy_scope.empty() ? "" : "; " + c.energy_scope) + ")");
  });
  s.row("energy per 1M tokens", [](const Column& c) {
    return Cell(c.energy_joules_per_million_tokens
                    ? energy_amount(*c.energy_joules_per_million_tokens)
                    : "n/a");
  });
  s.row("mean board power", [](const Column& c) {
    return Cell(c.energy_mean_watts ? fmt::format("{:.0f} W", *c.energy_mean_watts) : "n/a");
  });
}

void cost_rows(SideTable& s) {
  s.row("rate", [](const Column& c) {
    return Cell(c.rate ? format_usd(c.rate->usd_per_gpu_hour) + "/GPU-h " +
                             cost::to_string(c.rate->billing)
                       : "none");
  });
  s.row("rate from", [](const Column& c) { return Cell(c.rate ? c.rate->label : ""); });
  s.row("cost (billed)",
        [](const Column& c) { return Cell(c.cost ? format_usd(c.cost->billed_usd) : "n/a"); });
  s.row("cost per epoch", [](const Column& c) {
    return Cell(c.cost && c.cost->per_epoch_usd ? format_usd(*c.cost->per_epoch_usd) : "n/a");
  });
  s.row("cost per 1M tokens", [](const Column& c) {
    return Cell(c.cost && c.cost->per_million_tokens_usd
                    ? format_usd(*c.cost->per_million_tokens_usd)
                    : "n/a");
  });
}

// Each report against the first: green where it is better, red where worse.
void against_baseline_rows(SideTable& s) {
  auto base_only_blank = [](const Column& c, const std::string& v) {
    return c.label == "A" ? std::string() : v;
  };
  auto better = [](const std::optional<double>& v, bool lower_is_better) {
    if (!v) return Color::kNone;
    if (*v == 1.0) return Color::kNone;
    return (*v < 1.0) == lower_is_better ? Color::kGreen : Color::kRed;
  };
  s.row("total time vs A", [&](const Column& c) {
    return Cell(base_only_blank(c, ratio_text(c.run_time_ratio)), better(c.run_time_ratio, true));
  });
  s.row("throughput vs A", [&](const Column& c) {
    return Cell(base_only_blank(c, ratio_text(c.throughput_ratio)),
                better(c.throughput_ratio, false));
  });
  s.row("scaling efficiency vs A", [&](const Column& c) {
    if (!c.scaling_caveat.empty()) return Cell("n/a: " + c.scaling_caveat, Color::kRed);
    if (!c.scaling_efficiency) return Cell("");
    // Of linear speed-up: 100% is N devices N times as fast as A's.
    return Cell(fmt::format("{} ({} scaling)", format_percent(*c.scaling_efficiency), c.scaling),
                *c.scaling_efficiency >= 0.8 ? Color::kNone : Color::kRed);
  });
  s.row("step p50 vs A", [&](const Column& c) {
    if (!c.step_p50_change) return Cell("");
    return Cell(format_percent(*c.step_p50_change, true), better(1.0 + *c.step_p50_change, true));
  });
  s.row("step-time test vs A", [&](const Column& c) {
    if (!c.step_test) return Cell("");
    return Cell(fmt::format("{} over one run's steps each{}",
                            compare::p_value_text(c.step_test->p_value),
                            c.step_test->too_few_samples ? ", few samples" : ""));
  });
  s.row("cost vs A", [&](const Column& c) {
    if (!c.cost_ratio) return Cell("");
    return Cell(format_percent(*c.cost_ratio - 1.0, true), better(c.cost_ratio, true));
  });
  s.row("energy per token vs A", [&](const Column& c) {
    if (!c.energy_per_token_ratio) return Cell("");
    return Cell(format_percent(*c.energy_per_token_ratio - 1.0, true),
                better(c.energy_per_token_ratio, true));
  });
  s.row("break-even rate", [](const Column& c) {
    return Cell(
        c.break_even_usd_per_gpu_hour ? format_usd(*c.break_even_usd_per_gpu_hour) + "/GPU-h" : "");
  });
  s.row("max loss gap vs A", [](const Column& c) {
    if (!c.loss_gap || c.loss_gap->steps_compared == 0) return Cell("");
    return Cell(fmt::format("{:.4f} at step {}", c.loss_gap->max_abs_gap, c.loss_gap->at_step));
  });
}

text::Table side_table(const std::vector<Column>& cols) {
  SideTable s(cols);
  run_rows(s);
  energy_rows(s);
  cost_rows(s);
  against_baseline_rows(s);
  return s.t;
}

// Reports are labelled A to Z.
constexpr std::size_t kMaxReports = 26;

OJson column_json(const Column& c) {
  OJson j = {{"label", c.label},
             {"report", c.source},
             {"run_name", c.run_name},
             {"device", c.gpu},
             {"backend", c.backend}};
  FTBENCH_JSON_MEMBERS(j, c, gpus, times, step_p50_seconds, step_p90_seconds, measured_steps, mfu,
                       mfu_formula, gemm_peak_tflops, mfu_gemm, peak_memory_bytes, peak_memory_kind,
                       predicted_peak_bytes, prediction_error, final_loss);
  j["energy"] = {
      {"joules", text::optional_number(c.energy_joules)},
      {"joules_per_million_tokens", text::optional_number(c.energy_joules_per_million_tokens)},
      {"mean_watts", text::optional_number(c.energy_mean_watts)},
      {"method", c.energy_method},
      {"reason", c.energy_reason}};
  FTBENCH_JSON_MEMBERS(j, c, rate, cost, run_time_ratio, throughput_ratio, step_p50_change,
                       cost_ratio, energy_per_token_ratio, break_even_usd_per_gpu_hour, step_test,
                       loss_gap, scaling_efficiency, scaling, scaling_caveat, shared_cores,
                       warmup_caveat);
  return j;
}

text::Table csv_table(const std::vector<Column>& cols) {
  text::Table t;
  t.header = {"label",
              "report",
              "run_name",
              "device",
              "backend",
              "gpus",
              "time_to_first_step_seconds",
              "training_seconds",
              "run_seconds",
              "tokens_per_second",
              "step_p50_seconds",
              "step_p90_seconds",
              "mfu",
              "gemm_peak_tflops",
              "mfu_gemm",
              "peak_memory_bytes",
              "final_loss",
              "usd_per_gpu_hour",
              "billing",
              "billed_usd",
              "per_epoch_usd",
              "per_million_tokens_usd",
              "run_time_ratio",
              "throughput_ratio",
              "step_p50_change",
              "step_test_p_value",
              "cost_ratio",
              "break_even_usd_per_gpu_hour",
              "max_loss_gap",
              "scaling_efficiency",
              "scaling",
              "energy_joules",
              "energy_joules_per_million_tokens",
              "energy_mean_watts",
              "energy_method",
              "energy_scope",
              "energy_reason",
              "energy_per_token_ratio"};
  auto num = [](const std::optional<double>& v) { return v ? text::format_number(*v) : ""; };
  for (const Column& c : cols) {
    t.rows.push_back({c.label,
                      c.source,
                      c.run_name,
                      c.gpu,
                      c.backend,
                      std::to_string(c.gpus),
                      text::format_number(c.times.time_to_first_step_seconds),
                      text::format_number(c.times.training_seconds),
                      text::format_number(c.times.run_seconds),
                      text::format_number(c.times.steady_tokens_per_second),
                      text::format_number(c.step_p50_seconds),
                      text::format_number(c.step_p90_seconds),
                      num(c.mfu),
                      num(c.gemm_peak_tflops),
                      num(c.mfu_gemm),
                      c.peak_memory_bytes ? std::to_string(*c.peak_memory_bytes) : "",
                      text::format_number(c.final_loss),
                      c.rate ? text::format_number(c.rate->usd_per_gpu_hour) : "",
                      c.rate ? cost::to_string(c.rate->billing) : "",
                      c.cost ? text::format_number(c.cost->billed_usd) : "",
                      c.cost ? num(c.cost->per_epoch_usd) : "",
                      c.cost ? num(c.cost->per_million_tokens_usd) : "",
                      num(c.run_time_ratio),
                      num(c.throughput_ratio),
                      num(c.step_p50_change),
                      c.step_test ? text::format_number(c.step_test->p_value) : "",
                      num(c.cost_ratio),
                      num(c.break_even_usd_per_gpu_hour),
                      c.loss_gap && c.loss_gap->steps_compared > 0
                          ? text::format_number(c.loss_gap->max_abs_gap)
                          : "",
                      num(c.scaling_efficiency),
                      c.scaling,
                      num(c.energy_joules),
                      num(c.energy_joules_per_million_tokens),
                      num(c.energy_mean_watts),
                      c.energy_method,
                      c.energy_scope,
                      c.energy_reason,
                      num(c.energy_per_token_ratio)});
  }
  return t;
}

// Refuses reports of different jobs unless --allow-different: the message lists what differs
// and which file each label is.
void refuse_different_jobs(const CompareFlags& f, const compare::Fairness& fairness) {
  if (fairness.same_job || f.allow_different) return;
  std::string message =
      "these reports are of different jobs, so their times and costs "
      "answer different questions:\n";
  for (const compare::Difference& d : fairness.differences) {
    if (d.severity == compare::Severity::kJob) {
      message += "  " + text::printable(compare::difference_line(d)) + "\n";
    }
  }
  // The labels above, by file: the message names what it refuses.
  message += "reports:\n";
  for (std::size_t i = 0; i < f.reports.size(); ++i) {
    message += fmt::format("  {}: {}\n", static_cast<char>('A' + i), text::printable(f.reports[i]));
  }
  message += "pass --allow-different to compare them anyway";
  throw InputError(message);
}

// What the printers get.
struct Comparison {
  compare::Fairness fairness;
  std::vector<Column> columns;
  std::vector<std::string> verdicts;
  double alpha = 0.05;
};

void print_json(const Comparison& c) {
  OJson out;
  out["fairness"] = compare::fairness_json(c.fairness);
  out["alpha"] = c.alpha;
  OJson columns = OJson::array();
  for (const Column& col : c.columns) columns.push_back(column_json(col));
  out["reports"] = std::move(columns);
  out["verdicts"] = c.verdicts;
  std::cout << out.dump(2) << "\n";
}

// Differences and verdicts quote the reports' names and values: shown as text, as the tables'
// cells are (text::markdown_literal).
void print_markdown(const Comparison& c) {
  std::cout << "## Fairness\n\n**"
            << text::markdown_literal(compare::fairness_headline(c.fairness),
                                      text::kMaxMarkdownLine)
            << "**\n\n";
  for (const compare::Difference& d : c.fairness.differences) {
    std::cout << "- " << text::markdown_literal(compare::difference_line(d), text::kMaxMarkdownLine)
              << "\n";
  }
  std::cout << "\n## Side by side\n\n"
            << text::render_markdown(side_table(c.columns)) << "\n## Verdict\n\n";
  for (const std::string& l : c.verdicts) {
    std::cout << "- " << text::markdown_literal(l, text::kMaxMarkdownLine) << "\n";
  }
}

void print_text(const Comparison& c, bool color) {
  std::cout << text::paint(compare::fairness_headline(c.fairness),
                           c.fairness.same_job ? Color::kGreen : Color::kRed, color)
            << "\n";
  for (const compare::Difference& d : c.fairness.differences) {
    std::cout << "  " << text::printable(compare::difference_line(d)) << "\n";
  }
  std::cout << "\n" << text::render_text(side_table(c.columns), color) << "\n";
  for (const std::string& l : c.verdicts) std::cout << text::printable(l) << "\n";
}

int run_compare(const CompareFlags& f) {
  if (f.reports.size() > kMaxReports) {
    throw InputError(fmt::format("compare: at most {} reports (labelled A to Z), found {}",
                                 kMaxReports, f.reports.size()));
  }
  const text::Format format = parse_format_flag(f.common.format);
  std::vector<report::Report> reports;
  for (const std::string& path : f.reports) reports.push_back(load_report(path));
  Comparison c;
  c.fairness = compare::check_fairness(reports);
  refuse_different_jobs(f, c.fairness);
  const cost::Catalog catalog = cost::load_catalogs(f.common.catalogs);
  compare::SideBySideOptions options;
  options.rates = choose_rates(f.prices, f.reports, reports, catalog);
  options.loss_skip_steps = f.loss_skip_steps;
  options.loss_window = f.loss_window;
  options.sources = f.reports;
  try {
    c.columns = compare::side_by_side(reports, options);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  c.verdicts = compare::verdicts(c.columns, f.alpha);
  c.alpha = f.alpha;
  return print_as(
      format, f.common.color,
      {[&] { print_json(c); }, [&] { std::cout << text::render_csv(csv_table(c.columns)); },
       [&] { print_markdown(c); }, [&](bool color) { print_text(c, color); }});
}

}  // namespace

Action add_compare_command(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmd = add_subcommand(app, "compare");
  // Any number from 2 for CLI11 (its help would say "x 2" for a range), at most 26 below.
  cmd->add_option("reports", f->reports,
                  "Report JSON files, two or more reports (up to 26, labelled A to Z); the "
                  "first is the baseline (A)")
      ->required()
      ->expected(-2);
  add_price_options(cmd, f->prices);
  cmd->add_flag("--allow-different", f->allow_different,
                "Compare even when the reports are of different jobs");
  cmd->add_option("--loss-skip-steps", f->loss_skip_steps,
                  "Compare loss curves after this many steps (default: the larger warm-up)")
      ->check(whole_number(0, int64_t{1} << 40));
  cmd->add_option(
         "--loss-window", f->loss_window,
         "Steps in the trailing mean that smooths loss curves (default: train.loss_window)")
      ->check(whole_number(1, int64_t{1} << 40));
  cmd->add_option("--alpha", f->alpha,
                  "Recorded in the JSON output only: the step-time test over one run per side is "
                  "reported, never judged significant (default 0.05)")
      ->check(finite_number(1e-9, 0.5));

  // The gate is its own command; --fail-on here says where it is rather than "not expected".
  cmd->add_option("--fail-on", f->fail_on)->group("");
  add_common_options(cmd, f->common, /*with_dates=*/false);

  return [f]() {
    if (!f->fail_on.empty()) {
      throw InputError(
          "compare shows reports side by side and always exits 0; the regression gate is "
          "ftbench gate BASELINE NEW --fail-on RULES (a baseline report or folder, exit code 6 "
          "when a rule fails; docs/ci.md)");
    }
    return run_compare(*f);
  };
}

}  // namespace ftbench::cli
