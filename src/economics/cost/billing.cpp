#include "economics/cost/billing.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ftbench::cost {

// ---- Billing names and increments, and dates (catalog.h).

std::string to_string(Billing billing) {
  return std::string(text::spelling_of(kBillingSpellings, billing));
}

std::optional<Billing> parse_billing(std::string_view text) {
  std::string folded(text);
  std::transform(folded.begin(), folded.end(), folded.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text::parse_spelling(kBillingSpellings, folded);
}

int64_t increment_seconds(Billing billing) {
  switch (billing) {
    case Billing::kPerSecond:
      return 1;
    case Billing::kPerMinute:
      return 60;
    case Billing::kPerHour:
      return 3600;
    case Billing::kUnknown:
      break;
  }
  return 1;
}

std::optional<Date> parse_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const auto number = [&](std::size_t pos, std::size_t len) -> int {
    int value = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (text[i] < '0' || text[i] > '9') return -1;
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  const Date date{number(0, 4), number(5, 2), number(8, 2)};
  if (date.year < 0 || date.month < 1 || date.month > 12 || date.day < 1) return std::nullopt;
  const bool leap = (date.year % 4 == 0 && date.year % 100 != 0) || date.year % 400 == 0;
  constexpr int kDaysInMonth[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int days = kDaysInMonth[date.month - 1] + (date.month == 2 && leap ? 1 : 0);
  if (date.day > days) return std::nullopt;
  return date;
}

std::string to_string(const Date& date) {
  return fmt::format("{:04d}-{:02d}-{:02d}", date.year, date.month, date.day);
}

int64_t days_since_epoch(const Date& date) {
  // Howard Hinnant's days_from_civil: eras of 400 years (146097 days) counted from March, so
  // that the leap day is the last day of a year.
  const int64_t y = static_cast<int64_t>(date.year) - (date.month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t year_of_era = y - era * 400;                                    // [0, 399]
  const int64_t month_from_march = (date.month + 9) % 12;                       // [0, 11]
  const int64_t day_of_year = (153 * month_from_march + 2) / 5 + date.day - 1;  // [0, 365]
  const int64_t day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;  // [0, 146096]
  return era * 146097 + day_of_era - 719468;
}

double billed_seconds(double seconds, Billing billing, int64_t min_billed_seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0) {
    throw std::invalid_argument(fmt::format("duration must be >= 0 seconds, found {}", seconds));
  }
  const auto minimum = static_cast<double>(min_billed_seconds);
  if (billing == Billing::kUnknown) return std::max(seconds, minimum);
  const auto increment = static_cast<double>(increment_seconds(billing));
  // A timer reading a hair past a whole increment is that increment: 1 ns of slack.
  const double units = std::ceil((seconds - 1e-9) / increment);
  // units may be -0.0 for a 0 s run; 0.0 + ... makes the zero positive.
  return std::max(0.0 + std::max(units, 0.0) * increment, minimum);
}

int64_t billed_gpus(int64_t gpus_used, int64_t gpus_per_instance) {
  if (gpus_used < 1 || gpus_per_instance < 1 || gpus_used > kMaxGpus ||
      gpus_per_instance > kMaxGpus) {
    throw std::invalid_argument(
        fmt::format("GPU counts must be between 1 and {}, found {} used on {} per instance",
                    kMaxGpus, gpus_used, gpus_per_instance));
  }
  const int64_t instances = (gpus_used + gpus_per_instance - 1) / gpus_per_instance;
  return instances * gpus_per_instance;
}

void check_rate(const Rate& rate) {
  if (!std::isfinite(rate.usd_per_gpu_hour) || rate.usd_per_gpu_hour < kMinUsdPerGpuHour ||
      rate.usd_per_gpu_hour > kMaxUsdPerGpuHour) {
    throw std::invalid_argument(
        fmt::format("rate must be a number of USD per GPU-hour from {} to {}, found {}",
                    kMinUsdPerGpuHour, kMaxUsdPerGpuHour, rate.usd_per_gpu_hour));
  }
  if (rate.min_billed_seconds < 0 || rate.min_billed_seconds > kMaxMinBilledSeconds) {
    throw std::invalid_argument(fmt::format("minimum billed time must be 0 to {} seconds, found {}",
                                            kMaxMinBilledSeconds, rate.min_billed_seconds));
  }
  if (rate.gpus_per_instance < 1 || rate.gpus_per_instance > kMaxGpus) {
    throw std::invalid_argument(fmt::format("GPUs per instance must be between 1 and {}, found {}",
                                            kMaxGpus, rate.gpus_per_instance));
  }
}

}  // namespace ftbench::cost
