#include "analysis/view/markdown_summary.h"

#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "analysis/compare/verdicts.h"
#include "report/summary_text.h"
#include "util/text/markdown.h"
#include "util/text/messages.h"
#include "util/text/table.h"
#include "util/text/units.h"

namespace ftbench::view {
namespace {

using compare::Column;
using text::format_duration;
using text::format_percent;
using text::format_usd;
using text::markdown_literal;

// The key figures, one column per report; render_markdown shows every cell as text.
text::Table figures_table(const std::vector<Column>& columns, const PageInput& in) {
  text::Table t;
  t.header = {""};
  t.align = {text::Align::kLeft};
  for (const Column& c : columns) {
    t.header.push_back(c.label);
    t.align.push_back(text::Align::kRight);
  }
  const auto row = [&](const std::string& name, const std::function<std::string(std::size_t)>& f) {
    std::vector<text::Cell> cells = {name};
    for (std::size_t i = 0; i < columns.size(); ++i) cells.emplace_back(f(i));
    t.rows.push_back(std::move(cells));
  };
  const auto col = [&](std::size_t i) -> const Column& { return columns[i]; };
  row("report", [&](std::size_t i) { return in.sources[i]; });
  row("run", [&](std::size_t i) { return col(i).run_name; });
  row("device", [&](std::size_t i) {
    return fmt::format("{} x{} ({})", col(i).gpu, col(i).gpus, col(i).backend);
  });
  row("status", [&](std::size_t i) {
    const report::Report& r = in.reports[i];
    return r.error.empty() ? r.status : r.status + ": " + r.error;
  });
  row("steps", [&](std::size_t i) { return std::to_string(col(i).times.steps); });
  row("time to first step", [&](std::size_t i) {
    return col(i).times.steps > 0 ? format_duration(col(i).times.time_to_first_step_seconds)
                                  : "n/a";
  });
  row("training time",
      [&](std::size_t i) { return format_duration(col(i).times.training_seconds); });
  row("total time (t0 to end)",
      [&](std::size_t i) { return format_duration(col(i).times.run_seconds); });
  row("tokens/s", [&](std::size_t i) {
    return col(i).measured_steps > 0 ? fmt::format("{:.0f}", col(i).times.steady_tokens_per_second)
                                     : "n/a";
  });
  row("step p50 / p90", [&](std::size_t i) {
    if (col(i).measured_steps == 0) return std::string("n/a");
    return fmt::format("{:.4f} s / {:.4f} s", col(i).step_p50_seconds, col(i).step_p90_seconds);
  });
  row("MFU", [&](std::size_t i) { return col(i).mfu ? format_percent(*col(i).mfu) : "n/a"; });
  row("peak memory", [&](std::size_t i) {
    return col(i).peak_memory_bytes
               ? text::format_bytes(*col(i).peak_memory_bytes) + " " + col(i).peak_memory_kind
               : "n/a";
  });
  row("final loss", [&](std::size_t i) {
    return std::isfinite(col(i).final_loss) && col(i).times.steps > 0
               ? fmt::format("{:.4f} (mean of last {})", col(i).final_loss, col(i).loss_window)
               : "n/a";
  });
  row("cost", [&](std::size_t i) {
    if (!col(i).cost) return std::string("not priced (no offer for this device; give --rate)");
    return fmt::format("{} at {} ({} before the first step)", format_usd(col(i).cost->billed_usd),
                       col(i).rate->label, format_usd(col(i).cost->before_first_step_usd));
  });
  return t;
}

std::string comparison_text(const PageComparison& c) {
  std::string out = "\n### Comparison\n\n";
  out += c.fairness.same_job
             ? "**" + compare::fairness_kind(c.fairness) +
                   "**: " + markdown_literal(compare::fairness_headline(c.fairness)) + "\n\n"
             : "**Refused: different jobs.** The figures above answer different questions; "
               "`ftbench compare` refuses these reports unless given --allow-different.\n\n";
  for (const compare::Difference& d : c.fairness.differences) {
    out += "- " + markdown_literal(compare::difference_line(d)) + "\n";
  }
  if (!c.fairness.differences.empty()) out += "\n";
  for (const std::string& s : c.sentences) out += "- " + markdown_literal(s) + "\n";
  return out;
}

}  // namespace

std::string markdown_summary(const PageInput& in) {
  const PageComparison c = compare_reports(in);
  std::string title;
  for (const Column& col : c.columns) title += (title.empty() ? "" : " vs ") + col.run_name;
  std::string out = "## ftbench: " + markdown_literal(title) + "\n\n";
  out += text::render_markdown(figures_table(c.columns, in));
  std::string cold;
  for (const Column& col : c.columns) {
    if (!col.warmup_caveat.empty()) cold += "- " + col.label + ": " + col.warmup_caveat + "\n";
  }
  if (!cold.empty()) out += "\nTimed steps:\n\n" + cold;
  if (in.reports.size() > 1) out += comparison_text(c);
  return out;
}

}  // namespace ftbench::view
