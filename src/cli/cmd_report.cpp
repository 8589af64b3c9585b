// `ftbench report R1.json [R2.json ...] [--html OUT.html] [--markdown OUT.md]`: the reports as
// a self-contained HTML page with charts (analysis/view/html_page.h) and as a one-page markdown
// summary (analysis/view/markdown_summary.h), for people who would rather look than read JSON.
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

#include <fmt/format.h>

#include "analysis/view/html_page.h"
#include "analysis/view/markdown_summary.h"
#include "analysis/view/page_data.h"
#include "cli/commands.h"
#include "cli/inputs.h"
#include "report/report_io.h"
#include "util/io/output_file.h"
#include "util/text/messages.h"

namespace ftbench::cli {
namespace {

struct ReportFlags {
  CommonFlags common;
  std::vector<std::string> reports;
  PriceFlags prices;
  std::string html;
  std::string markdown;
  bool force = false;
  double alpha = 0.05;
};

int run_report(const ReportFlags& f) {
  if (f.reports.size() > 26) {
    throw InputError(
        fmt::format("report: at most 26 reports (labelled A to Z), found {}", f.reports.size()));
  }
  // The reports first: a command that fails on them leaves nothing behind (no output folder).
  view::PageInput in;
  for (const std::string& path : f.reports) in.reports.push_back(load_report(path));
  // Two outputs in one file (or both on standard output) would leave only the second, or both
  // mixed.
  if (!f.html.empty() && !f.markdown.empty() &&
      (f.html == f.markdown ||
       (f.html != "-" && f.markdown != "-" && same_file(f.html, f.markdown)))) {
    throw InputError(fmt::format("--html and --markdown name one {}: give each its own",
                                 f.html == "-" ? "output, standard output" : "file"));
  }
  for (const auto& [path, flag] : {std::pair{f.html, "--html"}, {f.markdown, "--markdown"}}) {
    if (path.empty() || path == "-") continue;
    check_view_output(path, flag, f.reports);
    io::check_writable(path, f.force);
  }

  in.sources = f.reports;
  const cost::Catalog catalog = cost::load_catalogs(f.common.catalogs);
  in.rates = choose_rates(f.prices, f.reports, in.reports, catalog);
  in.catalog = &catalog;
  in.today = today_or(f.common.today);
  check_max_age_days(f.common.max_age_days);
  in.max_age_days = f.common.max_age_days;
  in.alpha = f.alpha;
  if (!f.html.empty()) {
    const std::string page = view::html_page(view::page_data(in));
    if (f.html == "-") {
      std::cout << page;
    } else {
      io::write_file_atomically(page, f.html, f.force);
      std::cerr << fmt::format("wrote {} ({} report{}, {:.0f} KiB)\n", text::printable(f.html),
                               f.reports.size(), f.reports.size() == 1 ? "" : "s",
                               static_cast<double>(page.size()) / 1024.0);
    }
  }
  if (!f.markdown.empty() || f.html.empty()) {
    const std::string summary = view::markdown_summary(in);
    if (f.markdown.empty() || f.markdown == "-") {
      std::cout << summary;
    } else {
      io::write_file_atomically(summary, f.markdown, f.force);
      std::cerr << "wrote " << text::printable(f.markdown) << "\n";
    }
  }
  check_standard_output();
  return kExitOk;
}

}  // namespace

Action add_report_command(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = add_subcommand(app, "report");
  cmd->add_option("reports", f->reports,
                  "Report JSON files (up to 26, labelled A to Z); the first is the baseline (A)")
      ->required();
  cmd->add_option("--html", f->html,
                  "Write the self-contained HTML report with charts to this file (- for "
                  "standard output)");
  cmd->add_option("--markdown", f->markdown,
                  "Write the one-page markdown summary to this file (- for standard output; the "
                  "default when --html is not given)");
  cmd->add_flag("--force", f->force, "Replace the output files if they exist");
  add_price_options(cmd, f->prices);
  cmd->add_option("--alpha", f->alpha, "Significance level of the step-time test (default 0.05)")
      ->check(finite_number(1e-9, 0.5));
  cmd->add_option("--catalog", f->common.catalogs,
                  "Extra catalog file, YAML or SkyPilot CSV ([PROVIDER=]PATH); repeatable, "
                  "later wins");
  cmd->add_option("--max-age-days", f->common.max_age_days,
                  "Flag prices older than this many days as stale (default 90)");
  cmd->add_option("--today", f->common.today,
                  "Date for price ages, YYYY-MM-DD (default: today, UTC)");
  return [f]() { return run_report(*f); };
}

}  // namespace ftbench::cli
