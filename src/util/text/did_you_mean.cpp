#include "util/text/did_you_mean.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>
#include <vector>

namespace ftbench::text {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Two rows of the table: memory in the shorter string's length, not the product.
  if (a.size() < b.size()) std::swap(a, b);
  const std::size_t m = b.size();
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

std::optional<std::string> closest(std::string_view got, const std::vector<std::string>& known) {
  const std::size_t max_distance = std::max<std::size_t>(2, got.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& candidate : known) {
    // The distance is at least the difference in length: a long value (an 8 MB string) is not
    // compared at all, so a bad value is refused at once whatever its size.
    const std::size_t length_gap = got.size() > candidate.size() ? got.size() - candidate.size()
                                                                 : candidate.size() - got.size();
    if (length_gap > max_distance) continue;
    const std::size_t distance = edit_distance(got, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best && best_distance <= max_distance) return best;
  return std::nullopt;
}

}  // namespace ftbench::text
