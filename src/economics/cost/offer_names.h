// Private to src/economics/cost: offer tiers by name and position, and the name matching of
// util/text/name_matching.h that the catalog readers and lookups use.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "economics/cost/catalog.h"
#include "util/text/name_matching.h"

namespace ftbench::cost::detail {

using text::contains_word_run;
using text::fold;
using text::lowercase;
using text::words_of;

// kTiers as strings, and a tier's position in it (past the end for anything else).
std::vector<std::string> tier_names();
std::size_t tier_index(std::string_view tier);

}  // namespace ftbench::cost::detail
