// The HTML page and the markdown summary as text: every placeholder filled, report strings that
// cannot end the data block or inject into a comment, and the one-page summary's figures.
#include "analysis/view/html_page.h"
#include "analysis/view/markdown_summary.h"

#include <string>

#include <gtest/gtest.h>

#include "../../ci_env.h"
#include "economics/cost/catalog.h"
#include "report/report_io.h"

namespace ftbench::view {
namespace {

const std::string kFixtures = std::string(FTBENCH_SOURCE_DIR) + "/tests/fixtures/reports/";

// scripts/setup.sh installs libjs-chart.js, so every build it sets up embeds Chart.js; a build
// without it (a GPU machine without a package manager) says so and how to get it.
TEST(HtmlPage, TheChartingLibraryIsBuiltInOrTheMessageSaysHowToGetIt) {
  if (chart_library().empty()) {
    try {
      html_page(nlohmann::ordered_json::object());
      ADD_FAILURE() << "no error without the charting library";
    } catch (const NoChartLibrary& e) {
      EXPECT_NE(std::string(e.what()).find("install Debian's libjs-chart.js"), std::string::npos);
    }
    if (ftbench::test_env::on_ci()) FAIL() << "built without Chart.js on CI (scripts/setup.sh)";
    GTEST_SKIP() << "built without Chart.js (libjs-chart.js)";
  }
  EXPECT_EQ(chart_library().rfind("Chart.js v", 0), 0u) << chart_library();
}

TEST(HtmlPage, EveryPlaceholderIsFilledAndNoReportStringEndsTheDataBlock) {
  const nlohmann::ordered_json data = {
      {"schema", kPageSchema},
      {"reports", {{{"run_name", "</script><script>alert(1)</script>{{data}}"}}}}};
  const std::string page = html_page(data);
  EXPECT_EQ(page.find("{{style}}"), std::string::npos);
  EXPECT_EQ(page.find("{{script}}"), std::string::npos);
  EXPECT_EQ(page.find("{{chart_library}}"), std::string::npos);
  // The run name's "{{data}}" is data, not a placeholder: it stays as written.
  EXPECT_NE(page.find(R"("run_name":"\u003c/script>\u003cscript>alert(1)\u003c/script>{{data}}")"),
            std::string::npos);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  // The data block, the library and the page's script: three scripts, each closed once.
  std::size_t closes = 0;
  for (std::size_t at = page.find("</script>"); at != std::string::npos;
       at = page.find("</script>", at + 1)) {
    ++closes;
  }
  EXPECT_EQ(closes, 3u);
}

TEST(HtmlPage, InvalidUtf8InAReportIsReplacedNotThrown) {
  const nlohmann::ordered_json data = {{"reports",
                                        {{{"run_name", std::string("a\xff"
                                                                   "b")}}}}};
  EXPECT_NE(html_page(data).find("\"run_name\":\"a\xEF\xBF\xBD"
                                 "b\""),
            std::string::npos);
}

TEST(MarkdownSummary, TheFixtureReportsGiveTheirFiguresAndTheVerdict) {
  PageInput in;
  in.sources = {kFixtures + "h100-reference.json", kFixtures + "mi300x-reference.json"};
  for (const std::string& s : in.sources) in.reports.push_back(report::read_report(s));
  const cost::Catalog catalog = cost::builtin_catalog();
  in.catalog = &catalog;
  in.rates = {std::nullopt, std::nullopt};
  const std::string md = markdown_summary(in);
  EXPECT_EQ(md.rfind("## ftbench: h100-reference vs mi300x-reference\n\n|  | A | B |\n", 0), 0u)
      << md;
  EXPECT_NE(md.find("| time to first step | 3.0 min | 14.0 min |"), std::string::npos) << md;
  EXPECT_NE(md.find("| total time (t0 to end) | 18.0 min | 34.0 min |"), std::string::npos);
  EXPECT_NE(md.find("**same job run differently**"), std::string::npos);
  EXPECT_NE(md.find("- B (AMD Instinct MI300X) vs A (NVIDIA H100 80GB HBM3): took 1.89x as long"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace ftbench::view
