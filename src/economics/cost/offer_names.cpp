#include "economics/cost/offer_names.h"

#include <iterator>

namespace ftbench::cost::detail {

std::vector<std::string> tier_names() { return {std::begin(kTiers), std::end(kTiers)}; }

std::size_t tier_index(std::string_view tier) {
  std::size_t i = 0;
  for (const char* known : kTiers) {
    if (tier == known) break;
    ++i;
  }
  return i;
}

}  // namespace ftbench::cost::detail
