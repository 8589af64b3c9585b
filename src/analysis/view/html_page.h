// The self-contained HTML report (`ftbench report --html`): one file that opens offline, with
// the page data (page_data.h), the page's layout script and the charting library (Chart.js,
// Debian's libjs-chart.js) embedded when ftbench was built.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace ftbench::view {

// This ftbench was built without the charting library: the message says how to get it (exit 2).
class NoChartLibrary : public BadInput {
 public:
  using BadInput::BadInput;
};

// The charting library built in, as its banner names it ("Chart.js v3.9.1"); "" when none was.
std::string chart_library();

// The page for `data` (page_data()). The data is embedded as JSON that no string in it can end
// early (every "<" written as \u003c; invalid UTF-8 replaced). Throws NoChartLibrary when this
// ftbench was built without the charting library.
std::string html_page(const nlohmann::ordered_json& data);

}  // namespace ftbench::view
