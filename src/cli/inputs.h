// Input handling shared by cost, compare and catalog: reports, rates, counts, today's date.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "economics/cost/billing.h"
#include "economics/cost/catalog.h"
#include "report/report.h"
#include "util/text/table.h"

namespace CLI {
class App;
}  // namespace CLI

namespace ftbench::cli {

// Flags shared by cost, compare and catalog.
struct CommonFlags {
  std::vector<std::string> catalogs;  // --catalog, in order
  std::string format = "table";
  std::string color = "auto";
  int64_t max_age_days = 90;
  std::string today;
};

// Registers --catalog, --format and --color, and with `with_dates` --max-age-days and --today.
void add_common_options(CLI::App* cmd, CommonFlags& flags, bool with_dates);

// read_report(), its errors turned into InputError (exit code 2).
report::Report load_report(const std::string& path);

// "22.5M", "5000", "1.2e6", "3k", "2B" (k = 10^3, M = 10^6, B or G = 10^9). Throws InputError
// naming `flag` unless the value is a finite number > 0.
double parse_count(const std::string& text, const std::string& flag);

// "90" or "90s", "45m", "2h", "1h30m", "1.5d": seconds. Throws InputError naming `flag` unless
// it is a sum of numbers each with a unit (s, m, h, d, larger first, each once; a lone number is
// seconds), > 0 and at most 10 years.
double parse_duration(const std::string& text, const std::string& flag);

// --preemptions-per-hour (cost, plan): throws InputError unless 0 < value <= 3600.
void check_preemptions_per_hour(double value);

// "--format" value; throws InputError with the choices.
text::Format parse_format_flag(const std::string& value);

// "per-second" etc.; throws InputError with a hint.
cost::Billing parse_billing_flag(const std::string& value, const std::string& flag);

// A rate from --rate/--billing/--min-seconds; throws InputError on a price <= 0.
cost::Rate rate_from_flags(double usd_per_gpu_hour, const std::string& billing,
                           int64_t min_seconds);

// --today YYYY-MM-DD, or today's UTC date when empty.
cost::Date today_or(const std::string& flag_value);

// The printers of one command's result, one per --format; `text` is told whether to colour.
struct Printers {
  std::function<void()> json;
  std::function<void()> csv;
  std::function<void()> markdown;
  std::function<void(bool color)> text;
};

// Prints the result with the printer of `format`, in colour when it is a table and --color
// (`color_flag`) says so; returns kExitOk.
int print_as(text::Format format, const std::string& color_flag, const Printers& printers);

// Flushes standard output and throws io::FileWriteError (exit 3) when writing to it failed (a
// full disk behind a redirection, a closed pipe): a command never reports success for output
// that did not arrive.
void check_standard_output();

// Throws InputError unless 0 <= days.
void check_max_age_days(int64_t days);

// Prices for several reports (compare, report): --offer one per report, or --rate one for all or
// one each with --billing and --min-seconds.
struct PriceFlags {
  std::vector<std::string> offers;
  std::vector<double> rates;
  std::vector<std::string> billing;
  int64_t min_seconds = 0;
};
void add_price_options(CLI::App* cmd, PriceFlags& flags);

// Rates per report (`paths` are their files, for messages): --offer, --rate (one for all or one
// each), else the catalog's on-demand offer of the report's GPU, billing stated, that costs the
// run least; nullopt when there is none.
std::vector<std::optional<cost::Rate>> choose_rates(const PriceFlags& flags,
                                                    const std::vector<std::string>& paths,
                                                    const std::vector<report::Report>& reports,
                                                    const cost::Catalog& catalog);

// Two paths of one file: by name, or by where links lead (an existing file's hard or symbolic
// links).
bool same_file(const std::string& a, const std::string& b);

// An output that would replace one of the reports it is made from is refused (InputError naming
// `flag`), --force or not: the report is the measurement, the output only a view of it.
void refuse_overwriting_inputs(const std::string& output, const std::string& flag,
                               const std::vector<std::string>& inputs);

// Whether `path` holds an ftbench report (any file of the report schema).
bool holds_a_report(const std::string& path);

// An output file of a command that reads reports (a page, a summary, a JUnit file): refused when
// it is one of `inputs` or any ftbench report, --force or not.
void check_view_output(const std::string& path, const std::string& flag,
                       const std::vector<std::string>& inputs);

// Writes a warning to stderr when `report` ran on a catalog GPU other than the offer's.
void warn_if_other_gpu(const cost::Catalog& catalog, const report::Report& report,
                       const std::string& report_path, const cost::Offer& offer,
                       const std::string& offer_flag);

}  // namespace ftbench::cli
