#include "util/text/parse_number.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace ftbench::text {
namespace {

std::string_view strip_plus(std::string_view s) {
  if (s.size() > 1 && s.front() == '+' && s[1] != '-') s.remove_prefix(1);
  return s;
}

template <class T>
std::errc parse_whole(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc()) return ec;
  return end == s.data() + s.size() ? std::errc() : std::errc::invalid_argument;
}

}  // namespace

std::errc parse_int(std::string_view s, int64_t& out) {
  s = strip_plus(s);
  if (s.empty()) return std::errc::invalid_argument;
  return parse_whole(s, out);
}

std::errc parse_uint(std::string_view s, uint64_t& out) {
  s = strip_plus(s);
  if (s.empty() || s.front() == '-') return std::errc::invalid_argument;
  return parse_whole(s, out);
}

std::errc parse_double(std::string_view s, double& out) {
  s = strip_plus(s);
  if (s.empty()) return std::errc::invalid_argument;
  if (const std::errc ec = parse_whole(s, out); ec != std::errc()) return ec;
  return std::isfinite(out) ? std::errc() : std::errc::result_out_of_range;
}

bool parse_any_double(std::string_view s, double& out) {
  std::string folded(s);
  std::transform(folded.begin(), folded.end(), folded.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (folded == ".inf" || folded == "+.inf") {
    out = kInf;
    return true;
  }
  if (folded == "-.inf") {
    out = -kInf;
    return true;
  }
  if (folded == ".nan") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  s = strip_plus(s);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (end != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    out = s.front() == '-' ? -kInf : kInf;
    return true;
  }
  return ec == std::errc();
}

}  // namespace ftbench::text
