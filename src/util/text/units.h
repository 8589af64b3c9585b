// Human-readable numbers for tables: dollars, durations, percentages, sizes. "C" locale always (fmt
// never applies the process locale unless asked).
#pragma once

#include <cstdint>
#include <string>

namespace ftbench::text {

// Dollars with three significant digits and at least two decimals: 0.891 -> "$0.891",
// 1.35433 -> "$1.35", 2.97 -> "$2.97", 1234.5 -> "$1,234.50", 0.0001234 -> "$0.000123".
// Non-finite -> "n/a".
std::string format_usd(double usd);

// 12.34 -> "12.3 s", 1080 -> "18.0 min", 9000 -> "2.50 h". Non-finite -> "n/a".
std::string format_duration(double seconds);

// 0.5197 -> "52.0%"; with `sign`, "+52.0%" / "-12.5%". Non-finite -> "n/a".
std::string format_percent(double fraction, bool sign = false);

// 1536 -> "1.50 KiB"; bytes below 1 KiB as "512 B" (binary units, two decimals).
std::string format_bytes(int64_t bytes);

// Shortest round-trip text of a double, for CSV and JSON-like cells ("0.891", "1e-05").
std::string format_number(double value);

}  // namespace ftbench::text
