// A piece of text without the given characters at either end: blanks (spaces and tabs: a CSV
// cell, a --set override's key) or any whitespace as C's isspace() sees it (line ends too: a
// gate rule from a YAML block, an FTBENCH_INJECT_OOM rule, a line a driver file ends with).
#pragma once

#include <string_view>

namespace ftbench::text {

inline constexpr std::string_view kBlanks = " \t";
inline constexpr std::string_view kWhitespace = " \t\n\v\f\r";

constexpr std::string_view trim(std::string_view s, std::string_view characters) {
  const std::size_t begin = s.find_first_not_of(characters);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(characters) - begin + 1);
}

}  // namespace ftbench::text
