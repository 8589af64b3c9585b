// Billing rules: how rented time becomes dollars.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "economics/cost/catalog.h"

namespace ftbench::cost {

// Upper bound on GPU counts (used, per instance): keeps every product far from overflow.
inline constexpr int64_t kMaxGpus = 65536;
// Upper bounds of a price and of a minimum billed time, wherever they come from (--rate,
// --min-seconds, a catalog): beyond them a figure is a typo, and costs leave the range where
// they print as numbers.
inline constexpr double kMaxUsdPerGpuHour = 1e6;
// A hundredth of a cent per GPU-hour: below it, a price is a typo too (1e-300 printed dollar
// figures of 300 digits).
inline constexpr double kMinUsdPerGpuHour = 1e-4;
inline constexpr int64_t kMaxMinBilledSeconds = 366 * 86400;  // 31,622,400 s: 366 days

// A price and the rules it is billed by.
struct Rate {
  double usd_per_gpu_hour = 0.0;
  Billing billing = Billing::kPerSecond;
  int64_t min_billed_seconds = 0;
  // GPUs are rented in whole instances: a 1-GPU run on an 8-GPU offer pays for 8.
  int64_t gpus_per_instance = 1;
  std::string label;         // "reference-run/H100-SXM/on-demand", "--rate 2.97"
  std::optional<Date> date;  // when the price was seen, for offers
  std::string source;        // where the price comes from, for offers
};

// Billed seconds of one instance rented for `seconds`: the duration rounded up to the billing
// increment, and at least `min_billed_seconds`. Durations within 1 ns of a whole increment are
// not rounded up (a measured 1080.0000000001 s is 18 minutes, not 19). kUnknown bills linearly.
// Throws std::invalid_argument on a negative or non-finite duration.
double billed_seconds(double seconds, Billing billing, int64_t min_billed_seconds);

// GPUs paid for when `gpus_used` GPUs run on instances of `gpus_per_instance` GPUs:
// ceil(gpus_used / gpus_per_instance) * gpus_per_instance. Throws std::invalid_argument unless
// both are in [1, kMaxGpus].
int64_t billed_gpus(int64_t gpus_used, int64_t gpus_per_instance);

// Throws std::invalid_argument unless the price is finite, in [kMinUsdPerGpuHour,
// kMaxUsdPerGpuHour], the minimum in [0, kMaxMinBilledSeconds] and gpus_per_instance in [1,
// kMaxGpus]; the message names the offending value. Readers of prices check the same bounds first,
// naming the file.
void check_rate(const Rate& rate);

}  // namespace ftbench::cost
