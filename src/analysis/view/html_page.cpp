#include "analysis/view/html_page.h"

#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace ftbench::view {
namespace detail {
// Embedded by src/CMakeLists.txt (cmake/EmbedFile.cmake): the page's template, style and script
// (src/analysis/view/assets), and the charting library (empty when none was found at configure
// time).
extern const char kPageHtml[];
extern const std::size_t kPageHtmlSize;
extern const char kPageCss[];
extern const std::size_t kPageCssSize;
extern const char kPageJs[];
extern const std::size_t kPageJsSize;
extern const char kChartJs[];
extern const std::size_t kChartJsSize;
}  // namespace detail

namespace {

std::string_view chart_js() { return {detail::kChartJs, detail::kChartJsSize}; }

// The JSON for a <script type="application/json"> block: "<" only occurs inside strings, where
// \u003c reads back as the same character, so no "</script>" can close the block.
std::string embedded_json(const nlohmann::ordered_json& data) {
  const std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string chart_library() {
  const std::string_view js = chart_js();
  const std::size_t at = js.find("Chart.js v");
  if (at == std::string_view::npos) return js.empty() ? "" : "Chart.js (version not stated)";
  const std::size_t end = js.find_first_of(" \r\n", at + 9);
  return std::string(js.substr(at, end == std::string_view::npos ? end : end - at));
}

std::string html_page(const nlohmann::ordered_json& data) {
  if (chart_js().empty()) {
    throw NoChartLibrary(
        "this ftbench was built without Chart.js, which draws the HTML report's charts: install "
        "Debian's libjs-chart.js (scripts/setup.sh does) and build again, or give the path of "
        "chart.min.js (Chart.js 3 or 4) with cmake -DFTBENCH_CHARTJS=PATH");
  }
  // Placeholders of src/analysis/view/assets/page.html, each filled once, in one pass over the
  // template (what is put in is never searched for placeholders).
  const std::pair<std::string_view, std::string> fills[] = {
      {"{{style}}", std::string(detail::kPageCss, detail::kPageCssSize)},
      {"{{data}}", embedded_json(data)},
      {"{{chart_library}}", std::string(chart_js())},
      {"{{script}}", std::string(detail::kPageJs, detail::kPageJsSize)}};
  const std::string_view page(detail::kPageHtml, detail::kPageHtmlSize);
  std::string out;
  std::size_t from = 0;
  for (const auto& [placeholder, text] : fills) {
    const std::size_t at = page.find(placeholder, from);
    if (at == std::string_view::npos) throw std::logic_error("page.html lacks a placeholder");
    out.append(page.substr(from, at - from));
    out += text;
    from = at + placeholder.size();
  }
  out.append(page.substr(from));
  return out;
}

}  // namespace ftbench::view
