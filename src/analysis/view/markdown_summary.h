// The one-page markdown summary of reports (`ftbench report --markdown`), for a pull request or
// a CI comment: the key figures side by side, the cost at each report's price, and the
// comparison's verdict with what differs.
#pragma once

#include <string>

#include "analysis/view/page_data.h"

namespace ftbench::view {

// Every string of the reports is shown as text (text::markdown_literal, text::render_markdown).
// The summary of `input`'s reports (each against the first when there are several).
std::string markdown_summary(const PageInput& input);

}  // namespace ftbench::view
