#include "analysis/view/gate_outputs.h"

#include <fmt/format.h>

#include "analysis/compare/verdicts.h"
#include "analysis/view/markdown_summary.h"
#include "report/summary_text.h"
#include "util/text/json_values.h"
#include "util/text/markdown.h"
#include "util/text/messages.h"
#include "util/text/table.h"
#include "util/text/units.h"

namespace ftbench::view {
namespace {

using compare::GatePart;
using text::markdown_literal;
using OJson = nlohmann::ordered_json;

std::string figure(const std::optional<double>& v, const std::string& unit) {
  return v ? compare::gate_figure_text(*v, unit) : "";
}

std::string rule_verdict(const GateReport& g, const GateResult& r) {
  std::string label = outcome_label(r.outcome);
  if (compare::is_undecided(r.outcome) && !g.undecided_fails) label += " (allowed)";
  return label;
}

text::Color verdict_color(const GateReport& g, GateOutcome o) {
  if (o == GateOutcome::kPass) return text::Color::kGreen;
  if (o == GateOutcome::kFail || g.undecided_fails) return text::Color::kRed;
  return text::Color::kYellow;
}

// The rules' table: a row per figure, the rule and its verdict on its first.
text::Table rules_table(const GateReport& g) {
  text::Table t;
  t.header = {"rule", "figure", "baseline", "new", "change", "limit", "verdict"};
  t.align = {text::Align::kLeft,  text::Align::kLeft,  text::Align::kRight, text::Align::kRight,
             text::Align::kRight, text::Align::kRight, text::Align::kLeft};
  for (const GateResult& r : g.results) {
    const text::Cell verdict(rule_verdict(g, r), verdict_color(g, r.outcome));
    if (r.parts.empty()) {
      t.rows.push_back({r.rule.text, "", "", "", "", "", verdict});
      continue;
    }
    for (std::size_t i = 0; i < r.parts.size(); ++i) {
      const GatePart& p = r.parts[i];
      const bool text_only = p.unit == "status";
      t.rows.push_back({i == 0 ? r.rule.text : "", p.name,
                        text_only ? p.baseline_text : figure(p.baseline, p.unit),
                        text_only ? p.current_text : figure(p.current, p.unit),
                        text_only ? "" : compare::gate_change_text(p, r.rule.bound),
                        text_only ? "" : figure(p.limit, p.unit),
                        i == 0 ? verdict : text::Cell("")});
    }
  }
  return t;
}

std::string headline(const GateReport& g) {
  return g.headline.empty() ? compare::fairness_headline(g.fairness) : g.headline;
}

std::string baseline_words(const GateReport& g) {
  const std::size_t n = g.baseline_sources.size();
  if (n == 1 && g.baseline_sources.front() == g.baseline_path) return g.baseline_path;
  return fmt::format("{} ({} report{}, the median of each figure)", g.baseline_path, n,
                     n == 1 ? "" : "s");
}

std::vector<std::string> names_with(const GateReport& g, bool failed) {
  std::vector<std::string> out;
  for (const GateResult& r : g.results) {
    if (failed ? r.outcome == GateOutcome::kFail : compare::is_undecided(r.outcome))
      out.push_back(r.rule.text);
  }
  return out;
}

std::string xml_attribute(const std::string& name, const std::string& value) {
  return fmt::format(" {}=\"{}\"", name, xml_escape(value));
}

OJson figure_json(const GatePart& p) {
  OJson j = {{"name", p.name}, {"unit", p.unit}};
  const bool status = p.unit == "status";
  j["baseline"] = status ? OJson(p.baseline_text) : text::optional_number(p.baseline);
  j["spread"] = text::optional_number(p.spread);
  j["new"] = status ? OJson(p.current_text) : text::optional_number(p.current);
  j["limit"] = text::optional_number(p.limit);
  j["widened"] = p.widened;
  j["beyond"] = p.beyond;
  return j;
}

OJson rule_json(const GateResult& r) {
  OJson j = {{"rule", r.rule.text},
             {"metric", text::spelling_of(compare::kGateMetricSpellings, r.rule.metric)},
             {"outcome", text::spelling_of(compare::kGateOutcomeSpellings, r.outcome)},
             {"message", r.message}};
  OJson figures = OJson::array();
  for (const GatePart& p : r.parts) figures.push_back(figure_json(p));
  j["figures"] = std::move(figures);
  if (r.test) {
    j["test"] = {{"test", "mann-whitney-u, two-sided"},
                 {"n1", r.test->n1},
                 {"n2", r.test->n2},
                 {"u1", r.test->u1},
                 {"p_value", r.test->p_value},
                 {"exact", r.test->exact}};
  } else {
    j["test"] = nullptr;
  }
  return j;
}

}  // namespace

std::string outcome_label(GateOutcome outcome) {
  switch (outcome) {
    case GateOutcome::kPass:
      return "PASS";
    case GateOutcome::kFail:
      return "FAIL";
    case GateOutcome::kTooFewSamples:
      return "TOO FEW SAMPLES";
    case GateOutcome::kNotMeasured:
      return "NOT MEASURED";
  }
  return "UNKNOWN";
}

std::string verdict_line(const GateReport& g) {
  const GateVerdict& v = g.verdict;
  std::string line = fmt::format("gate {}: {} rule{}", v.passed ? "passed" : "FAILED", v.rules,
                                 v.rules == 1 ? "" : "s");
  if (v.failures > 0) {
    line += fmt::format(", {} failed ({})", v.failures, text::join(names_with(g, true)));
  }
  if (v.undecided > 0) {
    line += fmt::format(", {} undecided ({}), {}", v.undecided, text::join(names_with(g, false)),
                        g.undecided_fails ? "which fails the gate (--undecided warn lets it pass)"
                                          : "allowed by --undecided warn");
  }
  line += fmt::format(", {} passed", v.passes);
  return line;
}

std::string gate_text(const GateReport& g, bool color) {
  std::string out = fmt::format("gate: {} (run {}) against {}\n", text::printable(g.current_path),
                                text::printable(g.run_name), text::printable(baseline_words(g)));
  for (const LeftOut& l : g.left_out) {
    out += fmt::format("  left out of the baseline: {}: {}\n", text::printable(l.path),
                       text::printable(l.reason));
  }
  if (!g.note.empty()) out += "note: " + g.note + "\n";
  out += text::paint(headline(g), g.fairness.same_job ? text::Color::kNone : text::Color::kRed,
                     color) +
         "\n";
  for (const compare::Difference& d : g.fairness.differences) {
    out += "  " + text::printable(compare::difference_line(d)) + "\n";
  }
  out += "\n" + text::render_text(rules_table(g), color) + "\n";
  for (const GateResult& r : g.results) {
    out += fmt::format("{}: {}: {}\n", text::printable(r.rule.text),
                       text::paint(rule_verdict(g, r), verdict_color(g, r.outcome), color),
                       text::printable(r.message));
  }
  out += text::paint(verdict_line(g), g.verdict.passed ? text::Color::kGreen : text::Color::kRed,
                     color) +
         "\n";
  return out;
}

std::string gate_markdown(const GateReport& g) {
  std::string out =
      fmt::format("### ftbench gate: {}\n\n**{}**\n\n", g.verdict.passed ? "passed" : "FAILED",
                  markdown_literal(verdict_line(g)));
  out += fmt::format("New: {} (run {}). Baseline: {}.\n\n", markdown_literal(g.current_path),
                     markdown_literal(g.run_name), markdown_literal(baseline_words(g)));
  for (const LeftOut& l : g.left_out) {
    out += fmt::format("- left out of the baseline: {}: {}\n", markdown_literal(l.path),
                       markdown_literal(l.reason));
  }
  if (!g.left_out.empty()) out += "\n";
  if (!g.note.empty()) out += "Note: " + markdown_literal(g.note) + "\n\n";
  out += "Comparison: " + markdown_literal(headline(g)) + "\n\n";
  for (const compare::Difference& d : g.fairness.differences) {
    out += "- " + markdown_literal(compare::difference_line(d)) + "\n";
  }
  if (!g.fairness.differences.empty()) out += "\n";
  out += text::render_markdown(rules_table(g)) + "\n";
  for (const GateResult& r : g.results) {
    out += fmt::format("- **{}** {}: {}\n", markdown_literal(r.rule.text), rule_verdict(g, r),
                       markdown_literal(r.message));
  }
  return out;
}

nlohmann::ordered_json gate_json(const GateReport& g) {
  OJson j;
  j["schema"] = kGateSchema;
  j["verdict"] = g.verdict.passed ? "passed" : "failed";
  j["exit_code"] = g.verdict.passed ? 0 : 6;
  j["counts"] = {{"rules", g.verdict.rules},
                 {"passed", g.verdict.passes},
                 {"failed", g.verdict.failures},
                 {"undecided", g.verdict.undecided}};
  j["undecided"] = g.undecided_fails ? "fail" : "warn";
  j["alpha"] = g.options.alpha;
  j["min_samples"] = g.options.min_samples;
  j["noise_sigmas"] = g.options.noise_sigmas;
  OJson left = OJson::array();
  for (const LeftOut& l : g.left_out) left.push_back({{"path", l.path}, {"reason", l.reason}});
  j["baseline"] = {
      {"path", g.baseline_path}, {"reports", g.baseline_sources}, {"left_out", std::move(left)}};
  j["new"] = {{"path", g.current_path}, {"run_name", g.run_name}};
  j["fairness"] = compare::fairness_json(g.fairness);
  j["fairness"]["headline"] = headline(g);
  OJson rules = OJson::array();
  for (const GateResult& r : g.results) rules.push_back(rule_json(r));
  j["rules"] = std::move(rules);
  j["line"] = verdict_line(g);
  j["note"] = g.note;
  return j;
}

std::string gate_csv(const GateReport& g) {
  text::Table t;
  t.header = {"rule",   "metric", "outcome", "figure", "unit",   "baseline",
              "spread", "new",    "limit",   "beyond", "p_value"};
  auto num = [](const std::optional<double>& v) { return v ? text::format_number(*v) : ""; };
  for (const GateResult& r : g.results) {
    const std::string metric(text::spelling_of(compare::kGateMetricSpellings, r.rule.metric));
    const std::string outcome(text::spelling_of(compare::kGateOutcomeSpellings, r.outcome));
    const std::string p = r.test ? text::format_number(r.test->p_value) : "";
    if (r.parts.empty())
      t.rows.push_back({r.rule.text, metric, outcome, "", "", "", "", "", "", "", p});
    for (const GatePart& f : r.parts) {
      const bool s = f.unit == "status";
      t.rows.push_back({r.rule.text, metric, outcome, f.name, f.unit,
                        s ? f.baseline_text : num(f.baseline), num(f.spread),
                        s ? f.current_text : num(f.current), num(f.limit),
                        f.beyond ? "true" : "false", p});
    }
  }
  return text::render_csv(t);
}

std::string gate_junit_xml(const GateReport& g, const std::string& timestamp) {
  const GateVerdict& v = g.verdict;
  const int64_t failures = v.failures + (g.undecided_fails ? v.undecided : 0);
  const int64_t skipped = g.undecided_fails ? 0 : v.undecided;
  // Jenkins' schema (the xunit plugin's junit-10.xsd, tests/fixtures/junit) declares no
  // `skipped` on <testsuites>, and a file with an undeclared attribute is refused: the skips
  // are counted on the <testsuite> only.
  const std::string counts = xml_attribute("tests", std::to_string(v.rules)) +
                             xml_attribute("failures", std::to_string(failures)) +
                             xml_attribute("errors", "0");
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites" + xml_attribute("name", "ftbench gate") + counts +
         xml_attribute("time", "0") + ">\n";
  out += "  <testsuite" + xml_attribute("name", "ftbench gate: " + g.run_name) + counts +
         xml_attribute("skipped", std::to_string(skipped)) + xml_attribute("time", "0") +
         xml_attribute("timestamp", timestamp) +
         xml_attribute("hostname", g.host.empty() ? "localhost" : g.host) + ">\n";
  out += "    <properties>\n";
  for (const auto& [name, value] :
       {std::pair<std::string, std::string>{"baseline", baseline_words(g)},
        {"new", g.current_path},
        {"comparison", headline(g)},
        {"alpha", fmt::format("{:g}", g.options.alpha)},
        {"verdict", verdict_line(g)},
        {"note", g.note}}) {
    if (name == "note" && value.empty()) continue;
    out += "      <property" + xml_attribute("name", name) + xml_attribute("value", value) + "/>\n";
  }
  out += "    </properties>\n";
  for (const GateResult& r : g.results) {
    const std::string metric(text::spelling_of(compare::kGateMetricSpellings, r.rule.metric));
    out += "    <testcase" + xml_attribute("name", r.rule.text) +
           xml_attribute("classname", "ftbench.gate." + metric) + xml_attribute("time", "0") +
           ">\n";
    const std::string summary = outcome_label(r.outcome) + ": " + r.message;
    if (r.outcome == GateOutcome::kFail ||
        (compare::is_undecided(r.outcome) && g.undecided_fails)) {
      out += "      <failure" + xml_attribute("message", summary) +
             xml_attribute("type", r.outcome == GateOutcome::kFail ? "regression" : "undecided") +
             ">" + xml_escape(r.message) + "</failure>\n";
    } else if (compare::is_undecided(r.outcome)) {
      out += "      <skipped" + xml_attribute("message", summary) + "/>\n";
    }
    out += "      <system-out>" + xml_escape(summary) + "</system-out>\n";
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string gate_github_annotations(const GateReport& g) {
  std::string out;
  for (const GateResult& r : g.results) {
    if (r.outcome == GateOutcome::kPass) continue;
    const bool error = r.outcome == GateOutcome::kFail || g.undecided_fails;
    out += fmt::format(
        "::{} title={}::{}\n", error ? "error" : "warning",
        github_escape_property("ftbench gate " + r.rule.text + ": " + outcome_label(r.outcome)),
        github_escape_data(r.message));
  }
  out += fmt::format("::{} title={}::{}\n", g.verdict.passed ? "notice" : "error",
                     github_escape_property("ftbench gate"),
                     github_escape_data(verdict_line(g) + (g.note.empty() ? "" : "; " + g.note)));
  return out;
}

std::string github_escape_data(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

std::string github_escape_property(std::string_view s) {
  std::string out;
  for (const char c : github_escape_data(s)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = text::utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no UTF-8 sequence
      ++i;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 1) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        case '\t':
          out += "&#9;";
          break;
        case '\n':
          out += "&#10;";
          break;
        case '\r':
          out += "&#13;";
          break;
        default:
          if (c < 0x20) {
            out += "\xEF\xBF\xBD";
          } else {
            out += static_cast<char>(c);
          }
      }
    } else if (n == 3 && s.substr(i, 2) == "\xEF\xBF" &&
               (s[i + 2] == '\xBE' || s[i + 2] == '\xBF')) {
      out += "\xEF\xBF\xBD";  // U+FFFE and U+FFFF are not XML characters either
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace ftbench::view
