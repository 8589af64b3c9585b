// The one-page markdown summary of reports (`ftbench report --markdown`), for a pull request or
// a CI comment: the key figures side by side, the cost at each report's price, and the
// comparison's verdict with what differs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ftbench/view/page_data.h"

namespace ftbench::view {

// Text from a report (a run name, a path, an error) as literal markdown: the characters that
// would start a link or an image ([ ]), an HTML tag (< >), emphasis (* _ ~) or code (`), and the
// backslash, are backslash-escaped, and control characters shown escaped (text::printable), so a
// report cannot inject into a comment. Table cells' "|" is render_markdown's to escape.
// Text longer than kMaxMarkdownText bytes is cut there and says how long it was, so that a
// report's strings cannot make a comment longer than a CI service takes (GitHub: 65,536).
inline constexpr std::size_t kMaxMarkdownText = 300;
std::string markdown_literal(std::string_view text);

// The summary of `input`'s reports (each against the first when there are several).
std::string markdown_summary(const PageInput& input);

}  // namespace ftbench::view
