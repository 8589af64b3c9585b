// The gate's outputs, exact: JUnit XML (one test case per rule; failed, undecided and passed
// rules), GitHub workflow commands with their escapes, the markdown summary, JSON and CSV, and
// the XML escapes of hostile report strings.
#include "analysis/view/gate_outputs.h"

#include <string>

#include <gtest/gtest.h>

namespace ftbench::view {
namespace {

using compare::GateBound;
using compare::GateMetric;
using compare::GatePart;

GatePart part(const std::string& name, const std::string& unit, double base, double now,
              double limit, bool beyond) {
  GatePart p;
  p.name = name;
  p.unit = unit;
  p.baseline = base;
  p.current = now;
  p.limit = limit;
  p.beyond = beyond;
  return p;
}

// Three rules: status passed, step_time failed, mfu not measured.
GateReport sample(bool undecided_fails) {
  GateReport g;
  g.baseline_path = "base.json";
  g.baseline_sources = {"base.json"};
  g.current_path = "new.json";
  g.run_name = "nightly <llama>";
  g.host = "runner-1";
  g.undecided_fails = undecided_fails;
  g.fairness.same_data_fingerprint = true;
  GateResult status;
  status.rule = compare::parse_gate_rule("status");
  status.outcome = GateOutcome::kPass;
  GatePart s;
  s.name = "status";
  s.unit = "status";
  s.baseline_text = "completed";
  s.current_text = "completed";
  status.parts = {s};
  status.message = "the run completed";
  GateResult step;
  step.rule = compare::parse_gate_rule("step_time:+5%");
  step.outcome = GateOutcome::kFail;
  step.parts = {part("median step time", "s", 1.0, 1.25, 1.05, true)};
  step.message = "median step time 1.25 s against 1 s (+25.0%), limit 1.05 s";
  GateResult mfu;
  mfu.rule = compare::parse_gate_rule("mfu:-3pp");
  mfu.outcome = GateOutcome::kNotMeasured;
  mfu.message = "each report lacks an MFU figure";
  g.results = {status, step, mfu};
  g.verdict = compare::gate_verdict(g.results, undecided_fails);
  return g;
}

TEST(GateOutputs, VerdictLine) {
  EXPECT_EQ(verdict_line(sample(true)),
            "gate FAILED: 3 rules, 1 failed (step_time:+5%), 1 undecided (mfu:-3pp), which fails "
            "the gate (--undecided warn lets it pass), 1 passed");
  GateReport g = sample(false);
  g.results.erase(g.results.begin() + 1);
  g.verdict = compare::gate_verdict(g.results, false);
  EXPECT_EQ(verdict_line(g),
            "gate passed: 2 rules, 1 undecided (mfu:-3pp), allowed by --undecided warn, 1 passed");
}

TEST(GateOutputs, JUnitOneTestCasePerRule) {
  EXPECT_EQ(
      gate_junit_xml(sample(true), "2026-12-05T02:00:00"),
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"ftbench gate\" tests=\"3\" failures=\"2\" errors=\"0\" time=\"0\">\n"
      "  <testsuite name=\"ftbench gate: nightly &lt;llama&gt;\" tests=\"3\" failures=\"2\" "
      "errors=\"0\" skipped=\"0\" time=\"0\" timestamp=\"2026-12-05T02:00:00\" "
      "hostname=\"runner-1\">\n"
      "    <properties>\n"
      "      <property name=\"baseline\" value=\"base.json\"/>\n"
      "      <property name=\"new\" value=\"new.json\"/>\n"
      "      <property name=\"comparison\" value=\"fair: same job (same spec fingerprint, same "
      "data fingerprint, same steps)\"/>\n"
      "      <property name=\"alpha\" value=\"0.05\"/>\n"
      "      <property name=\"verdict\" value=\"gate FAILED: 3 rules, 1 failed (step_time:+5%), 1 "
      "undecided (mfu:-3pp), which fails the gate (--undecided warn lets it pass), 1 passed\"/>\n"
      "    </properties>\n"
      "    <testcase name=\"status\" classname=\"ftbench.gate.status\" time=\"0\">\n"
      "      <system-out>PASS: the run completed</system-out>\n"
      "    </testcase>\n"
      "    <testcase name=\"step_time:+5%\" classname=\"ftbench.gate.step_time\" time=\"0\">\n"
      "      <failure message=\"FAIL: median step time 1.25 s against 1 s (+25.0%), limit 1.05 "
      "s\" type=\"regression\">median step time 1.25 s against 1 s (+25.0%), limit 1.05 "
      "s</failure>\n"
      "      <system-out>FAIL: median step time 1.25 s against 1 s (+25.0%), limit 1.05 "
      "s</system-out>\n"
      "    </testcase>\n"
      "    <testcase name=\"mfu:-3pp\" classname=\"ftbench.gate.mfu\" time=\"0\">\n"
      "      <failure message=\"NOT MEASURED: each report lacks an MFU figure\" "
      "type=\"undecided\">each report lacks an MFU figure</failure>\n"
      "      <system-out>NOT MEASURED: each report lacks an MFU figure</system-out>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "</testsuites>\n");
  // Undecided rules allowed: skipped, not failed.
  const std::string warn = gate_junit_xml(sample(false), "2026-12-05T02:00:00");
  EXPECT_NE(warn.find("<testsuites name=\"ftbench gate\" tests=\"3\" failures=\"1\" errors=\"0\" "
                      "time=\"0\">"),
            std::string::npos);
  EXPECT_NE(warn.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), std::string::npos);
  EXPECT_NE(warn.find("<skipped message=\"NOT MEASURED: each report lacks an MFU figure\"/>"),
            std::string::npos);
}

TEST(GateOutputs, GitHubAnnotationsEscaped) {
  EXPECT_EQ(gate_github_annotations(sample(true)),
            "::error title=ftbench gate step_time%3A+5%25%3A FAIL::median step time 1.25 s "
            "against 1 s (+25.0%25), limit 1.05 s\n"
            "::error title=ftbench gate mfu%3A-3pp%3A NOT MEASURED::each report lacks an MFU "
            "figure\n"
            "::error title=ftbench gate::gate FAILED: 3 rules, 1 failed (step_time:+5%25), 1 "
            "undecided (mfu:-3pp), which fails the gate (--undecided warn lets it pass), 1 "
            "passed\n");
  GateReport g = sample(false);
  g.results.erase(g.results.begin() + 1);
  g.verdict = compare::gate_verdict(g.results, false);
  EXPECT_EQ(gate_github_annotations(g),
            "::warning title=ftbench gate mfu%3A-3pp%3A NOT MEASURED::each report lacks an MFU "
            "figure\n"
            "::notice title=ftbench gate::gate passed: 2 rules, 1 undecided (mfu:-3pp), allowed "
            "by --undecided warn, 1 passed\n");
  EXPECT_EQ(github_escape_data("50% a\r\nb: c, d"), "50%25 a%0D%0Ab: c, d");
  EXPECT_EQ(github_escape_property("50% a\r\nb: c, d"), "50%25 a%0D%0Ab%3A c%2C d");
}

TEST(GateOutputs, XmlEscapesWhatXmlCannotHold) {
  EXPECT_EQ(xml_escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  EXPECT_EQ(xml_escape("tab\tline\ncr\r"), "tab&#9;line&#10;cr&#13;");
  // C0 controls, invalid UTF-8 and U+FFFE become U+FFFD; valid UTF-8 stays.
  EXPECT_EQ(xml_escape(std::string("\x01\x1b[2J\xff\xef\xbf\xbe\xc3\xa9", 11)),
            "\xef\xbf\xbd\xef\xbf\xbd[2J\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9");
}

TEST(GateOutputs, MarkdownSummaryEscapesReportStrings) {
  const std::string md = gate_markdown(sample(true));
  EXPECT_EQ(md.rfind("### ftbench gate: FAILED\n\n**gate FAILED: 3 rules, 1 failed "
                     "(step\\_time:+5%), 1 undecided (mfu:-3pp), which fails the gate "
                     "(--undecided warn lets it pass), 1 passed**\n\nNew: new.json (run nightly "
                     "\\<llama\\>). Baseline: base.json.\n",
                     0),
            0u)
      << md;
  // The rules' cells are literal text too (text::render_markdown): "_" escaped as in the line.
  EXPECT_NE(
      md.find("| step\\_time:+5% | median step time | 1 s | 1.25 s | +25.0% | 1.05 s | FAIL |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| mfu:-3pp |  |  |  |  |  | NOT MEASURED |"), std::string::npos) << md;
}

TEST(GateOutputs, JsonAndCsvCarryEveryVerdict) {
  const nlohmann::ordered_json j = gate_json(sample(true));
  EXPECT_EQ(j["schema"], "ftbench.gate/1");
  EXPECT_EQ(j["verdict"], "failed");
  EXPECT_EQ(j["exit_code"], 6);
  EXPECT_EQ(j["counts"].dump(), R"({"rules":3,"passed":1,"failed":1,"undecided":1})");
  ASSERT_EQ(j["rules"].size(), 3u);
  EXPECT_EQ(j["rules"][1]["outcome"], "fail");
  EXPECT_EQ(j["rules"][1]["figures"][0].dump(),
            R"({"name":"median step time","unit":"s","baseline":1.0,"spread":null,"new":1.25,)"
            R"("limit":1.05,"widened":false,"beyond":true})");
  EXPECT_EQ(j["rules"][2]["outcome"], "not_measured");
  EXPECT_EQ(gate_csv(sample(true)),
            "rule,metric,outcome,figure,unit,baseline,spread,new,limit,beyond,p_value\n"
            "status,status,pass,status,status,completed,,completed,,false,\n"
            "step_time:+5%,step_time,fail,median step time,s,1,,1.25,1.05,true,\n"
            "mfu:-3pp,mfu,not_measured,,,,,,,,\n");
}

}  // namespace
}  // namespace ftbench::view
