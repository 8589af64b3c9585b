#include "util/text/units.h"

#include <cmath>

#include <fmt/format.h>

namespace ftbench::text {

std::string format_usd(double usd) {
  if (!std::isfinite(usd)) return "n/a";
  const double magnitude = std::fabs(usd);
  int decimals = 2;
  if (magnitude > 0.0 && magnitude < 1.0) {
    decimals = std::max(2, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
    // Rounding may carry into the next power of ten (0.9999 -> 1.000): one decimal fewer then.
    const double scale = std::pow(10.0, decimals);
    const double rounded = std::round(magnitude * scale) / scale;
    if (rounded > 0.0 && std::floor(std::log10(rounded)) > std::floor(std::log10(magnitude))) {
      decimals = std::max(2, decimals - 1);
    }
  }
  std::string digits = fmt::format("{:.{}f}", magnitude, decimals);
  // Group the integer part: "1234.50" -> "1,234.50".
  const std::size_t point = digits.find('.');
  std::string integer = digits.substr(0, point);
  std::string grouped;
  for (std::size_t i = 0; i < integer.size(); ++i) {
    if (i > 0 && (integer.size() - i) % 3 == 0) grouped += ',';
    grouped += integer[i];
  }
  return (usd < 0.0 ? "-$" : "$") + grouped + digits.substr(point);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  if (std::fabs(seconds) < 120.0) return fmt::format("{:.1f} s", seconds);
  if (std::fabs(seconds) < 7200.0) return fmt::format("{:.1f} min", seconds / 60.0);
  return fmt::format("{:.2f} h", seconds / 3600.0);
}

std::string format_percent(double fraction, bool sign) {
  if (!std::isfinite(fraction)) return "n/a";
  return sign ? fmt::format("{:+.1f}%", 100.0 * fraction)
              : fmt::format("{:.1f}%", 100.0 * fraction);
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "";
  return fmt::format("{}", value);
}

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, kUnits[unit]);
}

}  // namespace ftbench::text
