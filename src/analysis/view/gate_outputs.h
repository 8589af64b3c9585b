// What `ftbench gate` writes, each for a reader of its own: plain text for a log, markdown for a
// CI job summary, JSON ("ftbench.gate/1"), CSV, JUnit XML (one test case per rule) and GitHub
// Actions workflow commands (an annotation per rule that did not pass). Every one carries each
// rule's verdict; docs/ci.md gives the formats.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare/fairness.h"
#include "analysis/compare/gate.h"

namespace ftbench::view {

using compare::Fairness;
using compare::GateOptions;
using compare::GateOutcome;
using compare::GateResult;
using compare::GateVerdict;

inline constexpr const char* kGateSchema = "ftbench.gate/1";

// A baseline file that was not used, and why ("status interrupted", "another job: ...").
struct LeftOut {
  std::string path;
  std::string reason;
};

// Everything the outputs show.
struct GateReport {
  std::string baseline_path;                  // the file or folder given
  std::vector<std::string> baseline_sources;  // the reports used, oldest first
  std::vector<LeftOut> left_out;
  std::string current_path;
  std::string run_name;  // the new report's
  std::string host;      // the new report's host name (JUnit's testsuite hostname)
  Fairness fairness;
  // The comparison in one line; "" for compare::fairness_headline(fairness).
  std::string headline;
  std::string note;  // said first when set: why the gate held less than it was asked
  GateOptions options;
  bool undecided_fails = true;
  std::vector<GateResult> results;
  GateVerdict verdict;
};

// "PASS", "FAIL", "TOO FEW SAMPLES", "NOT MEASURED"; a rule that cannot decide reads
// "... (allowed)" when the gate lets it pass.
std::string outcome_label(GateOutcome outcome);

// The verdict in one line: "gate passed: 6 rules, 6 passed", or "gate FAILED: 6 rules, 1
// failed (step_time:+5%), 1 undecided (mfu:-3pp), which fails the gate (--undecided warn lets
// it pass), 4 passed".
std::string verdict_line(const GateReport& g);

// Plain text: baseline, fairness, a table of every rule's figures, each rule's reason, the
// verdict line.
std::string gate_text(const GateReport& g, bool color);
// Markdown for a job summary ($GITHUB_STEP_SUMMARY): a heading with the verdict, the table and
// the reasons; report strings escaped.
std::string gate_markdown(const GateReport& g);
nlohmann::ordered_json gate_json(const GateReport& g);
// One row per figure of every rule (a status rule or a rule without figures has one row).
std::string gate_csv(const GateReport& g);

// JUnit XML: <testsuites> holding one <testsuite> with one <testcase> per rule; a failed rule
// has a <failure type="regression">, an undecided one a <failure type="undecided"> when
// undecided rules fail the gate, else <skipped>. `timestamp` is the testsuite's, UTC without a
// zone ("2026-12-05T02:00:00", the JUnit schema's xs:dateTime form).
std::string gate_junit_xml(const GateReport& g, const std::string& timestamp);

// GitHub Actions workflow commands: "::error title=...::..." for each failed rule (and each
// undecided one when those fail the gate; "::warning" otherwise), then "::notice" or "::error"
// with the verdict line.
std::string gate_github_annotations(const GateReport& g);

// The escapes of GitHub's workflow commands (@actions/core): in a message % \r \n become %25
// %0D %0A; in a property value also : and , become %3A and %2C.
std::string github_escape_data(std::string_view s);
std::string github_escape_property(std::string_view s);

// Text for XML 1.0 character data and attribute values: & < > " ' escaped, characters XML 1.0
// cannot hold (C0 controls other than tab, LF, CR; invalid UTF-8) written as U+FFFD.
std::string xml_escape(std::string_view s);

}  // namespace ftbench::view
