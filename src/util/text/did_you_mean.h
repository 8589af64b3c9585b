// "Did you mean ...?" hints for names a user mistyped: spec keys, providers, GPUs, formats.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ftbench::text {

// Optimal string alignment distance (Levenshtein plus adjacent transposition), case-folded, so
// that the commonest typos, two swapped letters ("rnak") or a capital ("BF16"), stay close.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `got` when it is near enough to be a plausible typo: distance at
// most max(2, len(got) / 3). Ties go to the earlier candidate (the caller's order).
std::optional<std::string> closest(std::string_view got, const std::vector<std::string>& known);

}  // namespace ftbench::text
