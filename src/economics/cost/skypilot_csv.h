// Private to src/economics/cost: the SkyPilot CSV reader over a stream of chunks, so that a file is
// read without being held whole (load_catalog_file) and a text in memory the same way
// (parse_skypilot_csv).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "economics/cost/catalog.h"

namespace ftbench::cost::detail {

// parse_skypilot_csv over the chunks `next_chunk` hands out in order (an empty view at the
// end); a view must stay valid until the next call.
Catalog read_skypilot_csv(const std::function<std::string_view()>& next_chunk,
                          const std::string& source_name, const std::string& provider,
                          const Catalog& known, SkyPilotCsvStats* stats);

}  // namespace ftbench::cost::detail
