// Bounds of a plausible report, shared by the reader and its consistency checks.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace ftbench::report::detail {

// Bounds of a plausible report (docs/report-schema.md, Consistency), as the writer can produce
// them: `ftbench run` refuses an external t0 more than 30 days before its process started, and
// no process runs for longer than a year.
inline constexpr double kMaxDurationSeconds = 366.0 * 86400.0;   // 31,622,400
inline constexpr int64_t kMaxWorldSize = 65536;                  // cost::kMaxGpus
inline constexpr int64_t kMaxCount = 1'000'000'000'000'000;      // 10^15, any one count
inline constexpr int64_t kMaxTotal = 1'000'000'000'000'000'000;  // 10^18, sums over a report
// Board power of one device: the largest accelerator boards draw about 1.2 kW; 100 kW is a
// reading no device gives.
inline constexpr double kMaxWattsPerDevice = 100'000.0;
// backend.energy_sample_ms' bounds (spec), in seconds.
inline constexpr double kMinEnergyIntervalSeconds = 0.01;
inline constexpr double kMaxEnergyIntervalSeconds = 10.0;
inline constexpr int64_t kMaxDeviceIndex = 65535;  // backend.device_index's bound

// Two figures measured on the same clock may differ by rounding: a part may exceed its whole
// by a millionth and a millisecond.
inline double with_slack(double whole_seconds) { return whole_seconds * (1.0 + 1e-6) + 1e-3; }

inline std::string number_text(double v) { return fmt::format("{}", v); }

}  // namespace ftbench::report::detail
