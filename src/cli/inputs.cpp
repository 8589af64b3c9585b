#include "cli/inputs.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <system_error>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "economics/cost/pricing.h"
#include "report/metrics/report_figures.h"
#include "report/report_io.h"
#include "util/io/output_file.h"
#include "util/io/output_rules.h"
#include "util/text/did_you_mean.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::cli {

// Two paths of one file: by name, or by where links lead (an existing file's hard or symbolic
// links).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return io::absolute_normal(a) == io::absolute_normal(b) ||
         std::filesystem::equivalent(a, b, error);
}

void refuse_overwriting_inputs(const std::string& output, const std::string& flag,
                               const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    if (same_file(output, input)) {
      throw InputError(fmt::format("{} {}: that is one of the reports read; give another file",
                                   flag, text::printable(output)));
    }
  }
}

bool holds_a_report(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  try {
    report::read_report(path);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void check_view_output(const std::string& path, const std::string& flag,
                       const std::vector<std::string>& inputs) {
  refuse_overwriting_inputs(path, flag, inputs);
  if (holds_a_report(path)) {
    throw InputError(fmt::format(
        "{} {}: that file is an ftbench report; what ftbench writes beside reports never "
        "replaces one (--force or not)",
        flag, text::printable(path)));
  }
  // Nor any other ftbench file but one of its own kind (util/io/output_rules.h): an event log, a
  // GEMM result, the files of an export folder. A markdown summary is told by nothing in it, so
  // --markdown and --summary replace or append to no ftbench file at all.
  const std::string kind = flag == "--html"    ? "HTML report"
                           : flag == "--junit" ? "JUnit result"
                                               : "markdown summary";
  try {
    io::check_output_rules(flag, path, kind, {});
  } catch (const io::OutputRefused& e) {
    throw InputError(e.what());
  }
}

std::vector<std::optional<cost::Rate>> choose_rates(const PriceFlags& f,
                                                    const std::vector<std::string>& paths,
                                                    const std::vector<report::Report>& reports,
                                                    const cost::Catalog& catalog) {
  const std::size_t n = reports.size();
  std::vector<std::optional<cost::Rate>> rates(n);
  // What the run of report i costs is what decides among offers; one that cannot be priced is
  // bad input naming its file.
  const auto times = [&](std::size_t i) {
    try {
      return cost::run_times(reports[i]);
    } catch (const std::invalid_argument& e) {
      throw InputError(paths[i] + ": " + e.what());
    }
  };
  if (!f.offers.empty() && !f.rates.empty()) {
    throw InputError("--offer and --rate: give prices one way, not both");
  }
  if (!f.offers.empty()) {
    if (f.offers.size() != n) {
      throw InputError(
          fmt::format("--offer: give one per report ({} reports, {} offers)", n, f.offers.size()));
    }
    for (std::size_t i = 0; i < n; ++i) {
      // Of the offers it names, the one this run costs least at (cost::cheapest_for_run).
      const cost::Offer& offer =
          *cost::cheapest_for_run(times(i), cost::resolve_offers(catalog, f.offers[i])).offer;
      warn_if_other_gpu(catalog, reports[i], paths[i], offer, f.offers[i]);
      rates[i] = cost::rate_from_offer(offer);
    }
    return rates;
  }
  if (!f.rates.empty()) {
    if (f.rates.size() != 1 && f.rates.size() != n) {
      throw InputError(
          fmt::format("--rate: give one for all reports or one per report ({} reports, {} rates)",
                      n, f.rates.size()));
    }
    if (f.billing.size() > 1 && f.billing.size() != n) {
      throw InputError(fmt::format(
          "--billing: give one for all reports or one per report ({} reports, {} values)", n,
          f.billing.size()));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double r = f.rates.size() == 1 ? f.rates[0] : f.rates[i];
      const std::string b = f.billing.empty()       ? "per-second"
                            : f.billing.size() == 1 ? f.billing[0]
                                                    : f.billing[i];
      rates[i] = rate_from_flags(r, b, f.min_seconds);
    }
    return rates;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const cost::Gpu* gpu = cost::find_gpu(catalog, reports[i].environment.device.name);
    const cost::Offer* pick =
        cost::cheapest_for_run(times(i), cost::default_candidates(catalog, gpu)).offer;
    if (pick != nullptr) rates[i] = cost::rate_from_offer(*pick);
  }
  return rates;
}

void check_standard_output() {
  std::cout.flush();
  if (!std::cout) {
    throw io::FileWriteError("standard output: writing failed (" +
                             std::string(std::strerror(errno)) + ")");
  }
}

void add_price_options(CLI::App* cmd, PriceFlags& f) {
  cmd->add_option("--offer", f.offers, "Catalog offer per report, PROVIDER/GPU[/TIER], in order");
  cmd->add_option("--rate", f.rates, "USD per GPU-hour: one for all reports or one per report");
  cmd->add_option("--billing", f.billing,
                  "per-second (default), per-minute or per-hour, for --rate: one or one per "
                  "report");
  cmd->add_option("--min-seconds", f.min_seconds, "Minimum billed time for --rate, seconds")
      ->check(whole_number(0, cost::kMaxMinBilledSeconds));
}

void add_common_options(CLI::App* cmd, CommonFlags& flags, bool with_dates) {
  cmd->add_option("--catalog", flags.catalogs,
                  "Extra catalog file, YAML or SkyPilot CSV ([PROVIDER=]PATH); repeatable, "
                  "later wins");
  cmd->add_option("--format", flags.format, "table, markdown, json or csv");
  cmd->add_option("--color", flags.color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  if (with_dates) {
    cmd->add_option("--max-age-days", flags.max_age_days,
                    "Flag prices older than this many days as stale (default 90)");
    cmd->add_option("--today", flags.today,
                    "Date for price ages, YYYY-MM-DD (default: today, UTC)");
  }
}

report::Report load_report(const std::string& path) {
  try {
    report::Report r = report::read_report(path);
    metrics::check_summary_figures(r, path);
    return r;
  } catch (const report::ReportError& e) {
    throw InputError(e.what());
  }
}

double parse_duration(const std::string& text, const std::string& flag) {
  const auto bad = [&] {
    return InputError(fmt::format(
        "{}: expected a duration such as 90m, 2h, 1h30m, 1.5d or 5400 (seconds), found \"{}\"",
        flag, text::printable(text)));
  };
  double total = 0.0;
  double last_unit = 1e18;  // units in decreasing order, each once: 1h30m, not 30m1h or 1h1h
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) {
      ++j;
    }
    double value = 0.0;
    if (j == i ||
        text::parse_double(std::string_view(text).substr(i, j - i), value) != std::errc{}) {
      throw bad();
    }
    double unit = 1.0;
    if (j < text.size()) {
      switch (text[j]) {
        case 's':
          unit = 1.0;
          break;
        case 'm':
          unit = 60.0;
          break;
        case 'h':
          unit = 3600.0;
          break;
        case 'd':
          unit = 86400.0;
          break;
        default:
          throw bad();
      }
      if (unit >= last_unit) throw bad();
      last_unit = unit;
      ++j;
    } else if (i > 0) {
      throw bad();  // "1h30": the last number needs its unit
    }
    total += value * unit;
    i = j;
  }
  if (text.empty() || !std::isfinite(total) || total <= 0.0 || total > 10 * 365.25 * 86400.0) {
    throw bad();
  }
  return total;
}

void check_preemptions_per_hour(double value) {
  if (!std::isfinite(value) || value <= 0.0 || value > 3600.0) {
    throw InputError(fmt::format(
        "--preemptions-per-hour: expected a number of reclaims per hour above 0 and at most "
        "3600, found {}",
        value));
  }
}

double parse_count(const std::string& text, const std::string& flag) {
  std::string number = text;
  double scale = 1.0;
  if (!number.empty()) {
    switch (number.back()) {
      case 'k':
      case 'K':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'B':
      case 'G':
        scale = 1e9;
        break;
      default:
        break;
    }
    if (scale != 1.0) number.pop_back();
  }
  errno = 0;
  char* end = nullptr;
  const double value = number.empty() ? 0.0 : std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || errno != 0 || !std::isfinite(value) || value <= 0.0 ||
      value * scale > 1e15) {
    throw InputError(fmt::format(
        "{}: expected a positive count up to 10^15 such as 22.5M, 5000 or 3k, found \"{}\"", flag,
        text));
  }
  return value * scale;
}

text::Format parse_format_flag(const std::string& value) {
  if (auto f = text::parse_format(value)) return *f;
  throw InputError("--format: " +
                   text::not_one_of_message(value, text::spellings(text::kFormatSpellings)));
}

cost::Billing parse_billing_flag(const std::string& value, const std::string& flag) {
  if (auto b = cost::parse_billing(value); b && *b != cost::Billing::kUnknown) return *b;
  // A flag names a known billing: the catalog's "unknown" is not one to give.
  std::vector<std::string> names;
  for (const auto& s : cost::kBillingSpellings) {
    if (s.value != cost::Billing::kUnknown) names.emplace_back(s.name);
  }
  throw InputError(flag + ": " + text::not_one_of_message(value, names));
}

cost::Rate rate_from_flags(double usd_per_gpu_hour, const std::string& billing,
                           int64_t min_seconds) {
  if (!std::isfinite(usd_per_gpu_hour) || usd_per_gpu_hour < cost::kMinUsdPerGpuHour ||
      usd_per_gpu_hour > cost::kMaxUsdPerGpuHour) {
    throw InputError(
        fmt::format("--rate: expected a price in USD per GPU-hour from {} to {}, found {}",
                    cost::kMinUsdPerGpuHour, cost::kMaxUsdPerGpuHour, usd_per_gpu_hour));
  }
  if (min_seconds < 0 || min_seconds > cost::kMaxMinBilledSeconds) {
    throw InputError(fmt::format("--min-seconds: expected 0 to {} seconds (366 days), found {}",
                                 cost::kMaxMinBilledSeconds, min_seconds));
  }
  cost::Rate rate;
  rate.usd_per_gpu_hour = usd_per_gpu_hour;
  rate.billing = parse_billing_flag(billing, "--billing");
  rate.min_billed_seconds = min_seconds;
  rate.label = fmt::format("--rate {}", usd_per_gpu_hour);
  rate.source = "command line";
  return rate;
}

cost::Date today_or(const std::string& flag_value) {
  if (!flag_value.empty()) {
    if (auto d = cost::parse_date(flag_value)) return *d;
    throw InputError(
        fmt::format("--today: expected a date as YYYY-MM-DD, found \"{}\"", flag_value));
  }
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  return cost::Date{utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday};
}

int print_as(text::Format format, const std::string& color_flag, const Printers& printers) {
  switch (format) {
    case text::Format::kJson:
      printers.json();
      break;
    case text::Format::kCsv:
      printers.csv();
      break;
    case text::Format::kMarkdown:
      printers.markdown();
      break;
    case text::Format::kTable:
      printers.text(text::use_color(color_flag));
      break;
  }
  check_standard_output();
  return kExitOk;
}

void check_max_age_days(int64_t days) {
  if (days < 0) {
    throw InputError(fmt::format("--max-age-days: expected a number of days >= 0, found {}", days));
  }
}

void warn_if_other_gpu(const cost::Catalog& catalog, const report::Report& report,
                       const std::string& report_path, const cost::Offer& offer,
                       const std::string& offer_flag) {
  const cost::Gpu* gpu = cost::find_gpu(catalog, report.environment.device.name);
  if (gpu == nullptr || gpu->name == offer.gpu) return;
  std::cerr << text::printable(fmt::format(
                   "warning: {} ran on {} ({}), but --offer {} prices {}: its cost is this "
                   "run's time at another GPU's price",
                   report_path, report.environment.device.name, gpu->name, offer_flag, offer.gpu))
            << "\n";
}

}  // namespace ftbench::cli
