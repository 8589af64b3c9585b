#include "util/text/iso8601.h"

#include <time.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace ftbench::text {

std::optional<double> parse_iso8601_utc(const std::string& text) {
  tm utc{};
  int millis = 0;
  int consumed = 0;
  const int fields =
      std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &consumed);
  if (fields != 6) return std::nullopt;
  std::string rest = text.substr(static_cast<size_t>(consumed));
  if (rest.size() == 5 && rest[0] == '.' && rest[4] == 'Z') {
    if (std::sscanf(rest.c_str(), ".%3d", &millis) != 1) return std::nullopt;
    rest = "Z";
  }
  if (rest != "Z") return std::nullopt;
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return static_cast<double>(timegm(&utc)) + millis / 1000.0;
}

std::string iso8601_utc(double epoch_seconds) {
  const double whole = std::floor(epoch_seconds);
  const time_t secs = static_cast<time_t>(whole);
  int millis = static_cast<int>(std::lround((epoch_seconds - whole) * 1000.0));
  if (millis == 1000) millis = 999;
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[40];
  const size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
  return std::string(buf, n) + "." + (millis < 100 ? (millis < 10 ? "00" : "0") : "") +
         std::to_string(millis) + "Z";
}

}  // namespace ftbench::text
