// Input handling shared by cost, compare and catalog: reports, rates, counts, today's date.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ftbench/cost/billing.h"
#include "ftbench/cost/catalog.h"
#include "ftbench/report/report.h"
#include "ftbench/text/table.h"

namespace ftbench::cli {

// read_report(), its errors turned into InputError (exit code 2).
report::Report load_report(const std::string& path);

// "22.5M", "5000", "1.2e6", "3k", "2B" (k = 10^3, M = 10^6, B or G = 10^9). Throws InputError
// naming `flag` unless the value is a finite number > 0.
double parse_count(const std::string& text, const std::string& flag);

// "--format" value; throws InputError with the choices.
text::Format parse_format_flag(const std::string& value);

// "per-second" etc.; throws InputError with a hint.
cost::Billing parse_billing_flag(const std::string& value, const std::string& flag);

// A rate from --rate/--billing/--min-seconds; throws InputError on a price <= 0.
cost::Rate rate_from_flags(double usd_per_gpu_hour, const std::string& billing,
                           int64_t min_seconds);

// A rate from a catalog offer.
cost::Rate rate_from_offer(const cost::Offer& offer);

// --today YYYY-MM-DD, or today's UTC date when empty.
cost::Date today_or(const std::string& flag_value);

// "reference-run/H100-SXM/on-demand".
std::string offer_name(const cost::Offer& offer);

// "stale (123 days)", "undated", "billing not stated", joined by "; ". `max_age_days` < 0: never
// stale.
std::string offer_flags(const cost::Offer& offer, const cost::Date& today, int64_t max_age_days);

}  // namespace ftbench::cli
