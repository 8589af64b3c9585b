// `ftbench gate BASELINE NEW --fail-on RULES`: a regression gate for CI. The new report is held
// against a baseline (one earlier report of the same job, or a folder of them: the median of
// their figures, their spread taken into account) rule by rule; exit code 6 when it fails.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "analysis/compare/fairness.h"
#include "analysis/compare/gate.h"
#include "analysis/compare/verdicts.h"
#include "analysis/view/gate_outputs.h"
#include "cli/commands.h"
#include "cli/inputs.h"
#include "economics/cost/billing.h"
#include "economics/cost/estimate.h"
#include "economics/cost/pricing.h"
#include "util/io/output_file.h"
#include "util/text/iso8601.h"
#include "util/text/messages.h"

namespace ftbench::cli {
namespace {

namespace fs = std::filesystem;

struct GateFlags {
  CommonFlags common;
  std::string baseline;
  std::string current;
  std::vector<std::string> fail_on;
  double alpha = 0.05;
  int64_t min_samples = stats::kMannWhitneyOptimalSamples;
  double noise_sigmas = 3.0;
  std::optional<int64_t> last;
  std::string undecided = "fail";
  std::vector<std::string> offers;
  std::vector<double> rates;
  std::string billing = "per-second";
  int64_t min_seconds = 0;
  bool allow_different = false;
  bool allow_no_baseline = false;
  std::string junit;
  std::string summary;
  bool github = false;
  bool force = false;
};

// A baseline report kept, with its file.
struct Candidate {
  std::string path;
  report::Report report;
};

// Whether a file says it is an ftbench report: its first bytes hold the report schema's name (a
// report's first key). A folder of reports may hold other JSON files (a gate's own output),
// which are left out; a file that says it is a report but cannot be read is bad input.
bool says_it_is_a_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head.find("\"ftbench.report/") != std::string::npos;
}

// A job difference that makes the reports of different jobs, for the gate: a new run that did
// not complete differs in its status and the steps it finished, and that is the status rule's
// to fail (exit 6), not a refusal (exit 2).
bool other_job(const compare::Difference& d, const report::Report& current) {
  if (d.severity != compare::Severity::kJob) return false;
  return current.status == "completed" || (d.what != "run status" && d.what != "steps finished");
}

// The first job difference between a baseline report and the new one, or "" for the same job.
std::string job_difference(const report::Report& base, const report::Report& current) {
  const compare::Fairness f = compare::check_fairness({base, current});
  for (const compare::Difference& d : f.differences) {
    if (other_job(d, current)) return compare::difference_line(d);
  }
  return "";
}

bool json_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".json";
}

// The folder's JSON files (any case of ".json"), by name; entries so named that are not regular
// files (a folder, a dangling link) go to `left_out`.
std::vector<std::string> json_files_in(const std::string& folder,
                                       std::vector<view::LeftOut>& left_out) {
  std::vector<std::string> out;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (!json_name(it->path())) continue;
    std::error_code kind;
    if (it->is_regular_file(kind)) {
      out.push_back(it->path().string());
    } else {
      left_out.push_back({it->path().string(),
                          "not a regular file (a folder, a link to nothing, "
                          "a device or a FIFO)"});
    }
  }
  if (error) {
    throw InputError(fmt::format("baseline folder {}: cannot be listed: {}",
                                 text::printable(folder), error.message()));
  }
  std::sort(out.begin(), out.end());
  std::sort(left_out.begin(), left_out.end(),
            [](const view::LeftOut& a, const view::LeftOut& b) { return a.path < b.path; });
  return out;
}

// When a report finished, for --last: its UTC time, else 0 (oldest).
double finished_at(const report::Report& r) {
  return text::parse_iso8601_utc(r.finished_at_utc).value_or(0.0);
}

// The reports of a baseline folder that can stand for the job: completed runs of the new
// report's job, the newest `last` of them; the rest are listed as left out, with why.
std::vector<Candidate> baseline_from_folder(const GateFlags& f, const report::Report& current,
                                            std::vector<view::LeftOut>& left_out) {
  std::vector<Candidate> kept;
  for (const std::string& path : json_files_in(f.baseline, left_out)) {
    if (same_file(path, f.current)) {
      left_out.push_back({path, "the new report itself"});
      continue;
    }
    if (!says_it_is_a_report(path)) {
      left_out.push_back({path, "not an ftbench report"});
      continue;
    }
    report::Report r = load_report(path);
    if (r.status != "completed") {
      left_out.push_back({path, "status " + r.status + ": a baseline is a completed run"});
      continue;
    }
    if (const std::string d = job_difference(r, current); !d.empty() && !f.allow_different) {
      left_out.push_back({path, "another job: " + d});
      continue;
    }
    // A copy of a report already kept is the same run, not another night: counting it twice
    // would halve the spread and double its steps.
    const auto same_run = std::find_if(kept.begin(), kept.end(), [&](const Candidate& c) {
      return c.report.started_at_utc == r.started_at_utc &&
             c.report.finished_at_utc == r.finished_at_utc &&
             c.report.environment.host.hostname == r.environment.host.hostname;
    });
    if (same_run != kept.end()) {
      left_out.push_back({path, "the same run as " + same_run->path});
      continue;
    }
    kept.push_back({path, std::move(r)});
  }
  // Oldest first; the window keeps the newest.
  std::stable_sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) {
    return finished_at(a.report) < finished_at(b.report);
  });
  if (f.last && static_cast<int64_t>(kept.size()) > *f.last) {
    const std::size_t drop = kept.size() - static_cast<std::size_t>(*f.last);
    for (std::size_t i = 0; i < drop; ++i) {
      left_out.push_back({kept[i].path, fmt::format("older than the newest {} (--last)", *f.last)});
    }
    kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  if (kept.empty()) {
    if (f.allow_no_baseline) return kept;
    std::string message =
        fmt::format("baseline folder {}: no completed report of this job to hold {} against",
                    text::printable(f.baseline), text::printable(f.current));
    for (const view::LeftOut& l : left_out) {
      message += fmt::format("\n  {}: {}", text::printable(l.path), text::printable(l.reason));
    }
    if (left_out.empty()) message += " (the folder holds no .json file)";
    message += "\n--allow-no-baseline passes with a note instead: a first run, or a changed job";
    throw InputError(message);
  }
  return kept;
}

std::vector<Candidate> load_baseline(const GateFlags& f, const report::Report& current,
                                     std::vector<view::LeftOut>& left_out) {
  std::error_code error;
  if (fs::is_directory(f.baseline, error)) return baseline_from_folder(f, current, left_out);
  if (f.last) {
    throw InputError(
        fmt::format("--last keeps the newest reports of a baseline folder; {} is a file",
                    text::printable(f.baseline)));
  }
  if (same_file(f.baseline, f.current)) {
    throw InputError(fmt::format("the baseline {} is the new report: give an earlier report",
                                 text::printable(f.baseline)));
  }
  Candidate c{f.baseline, load_report(f.baseline)};
  if (c.report.status != "completed") {
    throw InputError(fmt::format(
        "baseline {}: status {}; a baseline is a completed run (give the last good report, or a "
        "folder of them)",
        text::printable(f.baseline), text::printable(c.report.status)));
  }
  return {std::move(c)};
}

// The new report against each baseline report: different jobs are refused, as compare does.
compare::Fairness check_jobs(const GateFlags& f, const std::vector<Candidate>& baseline,
                             const report::Report& current) {
  std::vector<report::Report> all;
  for (const Candidate& c : baseline) all.push_back(c.report);
  all.push_back(current);
  compare::Fairness fairness = compare::check_fairness(all);
  const bool same_job =
      std::none_of(fairness.differences.begin(), fairness.differences.end(),
                   [&](const compare::Difference& d) { return other_job(d, current); });
  if (same_job || f.allow_different) return fairness;
  std::string message = fmt::format(
      "{} and the baseline {} are of different jobs, so a gate between them holds nothing:",
      text::printable(f.current), text::printable(f.baseline));
  for (const compare::Difference& d : fairness.differences) {
    if (other_job(d, current)) {
      message += "\n  " + text::printable(compare::difference_line(d));
    }
  }
  message += "\npass --allow-different to gate them anyway";
  throw InputError(message);
}

// The prices the cost rule bills every report at: each --offer (its cheapest match for the new
// run) and each --rate.
std::vector<compare::GatePrice> gate_prices(const GateFlags& f, const report::Report& current) {
  std::vector<compare::GatePrice> prices;
  if (f.rates.empty() && (f.billing != "per-second" || f.min_seconds != 0)) {
    throw InputError("--billing and --min-seconds are the billing of --rate; give --rate too");
  }
  if (f.offers.empty() && f.rates.empty()) return prices;
  const cost::Catalog catalog = cost::load_catalogs(f.common.catalogs);
  cost::RunTimes times;
  try {
    times = cost::run_times(current);
  } catch (const std::invalid_argument& e) {
    throw InputError(f.current + ": " + e.what());
  }
  for (const std::string& name : f.offers) {
    const cost::Offer& offer =
        *cost::cheapest_for_run(times, cost::resolve_offers(catalog, name)).offer;
    warn_if_other_gpu(catalog, current, f.current, offer, name);
    prices.push_back({cost::offer_name(offer), cost::rate_from_offer(offer)});
  }
  for (const double usd : f.rates) {
    prices.push_back({"--rate", rate_from_flags(usd, f.billing, f.min_seconds)});
  }
  return prices;
}

// Appends `text` to `path` (created when missing), as GitHub's job summary file is written.
void append_to_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw io::FileWriteError(fmt::format("--summary {}: cannot open for appending: {}",
                                         text::printable(path), std::strerror(errno)));
  }
  const bool ok = io::write_all(fd, text, "summary");
  const bool closed = ::close(fd) == 0;
  if (!ok || !closed) {
    throw io::FileWriteError(fmt::format("--summary {}: the write failed: {}",
                                         text::printable(path), std::strerror(errno)));
  }
}

// The job summary's files: --summary, and $GITHUB_STEP_SUMMARY under --github (once when both
// name one file).
std::vector<std::string> summary_paths(const GateFlags& f) {
  std::vector<std::string> out;
  if (!f.summary.empty()) out.push_back(f.summary);
  const char* step_summary = f.github ? std::getenv("GITHUB_STEP_SUMMARY") : nullptr;
  if (step_summary != nullptr && *step_summary != '\0' &&
      (out.empty() || !same_file(out.front(), step_summary))) {
    out.emplace_back(step_summary);
  }
  return out;
}

// Every output file is checked before anything is read: a gate that cannot write its JUnit
// file fails before it judges.
void check_outputs(const GateFlags& f, text::Format format) {
  const std::vector<std::string> inputs = {f.baseline, f.current};
  if (!f.junit.empty()) {
    check_view_output(f.junit, "--junit", inputs);
    std::error_code error;
    const fs::file_status status = fs::status(f.junit, error);
    if (fs::exists(status) && !fs::is_regular_file(status)) {
      throw InputError(fmt::format(
          "--junit {}: not a regular file (a folder, a device or a FIFO); give the file to write",
          text::printable(f.junit)));
    }
    io::check_writable(f.junit, f.force);
  }
  for (const std::string& summary : summary_paths(f)) {
    const std::string flag = summary == f.summary ? "--summary" : "$GITHUB_STEP_SUMMARY";
    check_view_output(summary, flag, inputs);
    std::error_code error;
    const fs::file_status status = fs::status(summary, error);
    if (fs::exists(status) && !fs::is_regular_file(status)) {
      throw InputError(fmt::format(
          "{} {}: not a regular file (a folder, a device or a FIFO); give a file to append the "
          "summary to",
          flag, text::printable(summary)));
    }
    if (!f.junit.empty() && same_file(summary, f.junit)) {
      throw InputError(flag + " and --junit name one file: give each its own");
    }
    // Appending must work before the gate judges: a verdict is never lost to a summary. A
    // missing folder is made, as for --junit.
    const fs::path parent = fs::path(summary).parent_path();
    if (!parent.empty()) fs::create_directories(parent, error);
    const std::string where =
        fs::exists(status) ? summary : (parent.empty() ? std::string(".") : parent.string());
    if ((!fs::exists(status) && !fs::is_directory(where, error)) ||
        ::access(where.c_str(), W_OK) != 0) {
      throw io::FileWriteError(fmt::format("{} {}: cannot append to it: {} is not a writable {}",
                                           flag, text::printable(summary), text::printable(where),
                                           fs::exists(status) ? "file" : "folder"));
    }
  }
  if (f.github && (format == text::Format::kJson || format == text::Format::kCsv)) {
    throw InputError(
        "--github writes workflow commands to standard output, which --format json or csv "
        "would mix with; use --format table or markdown with --github");
  }
  if (f.undecided != "fail" && f.undecided != "warn") {
    throw InputError(
        fmt::format("--undecided: expected fail or warn, found {}", text::quoted(f.undecided)));
  }
}

std::string junit_timestamp() {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return text::iso8601_utc(std::floor(now)).substr(0, 19);
}

// Standard output first (the verdict, the annotations): a file that then fails to be written
// (exit 3) does not take the verdict with it.
void write_outputs(const GateFlags& f, const view::GateReport& g, text::Format format) {
  if (f.github) std::cout << view::gate_github_annotations(g);
  print_as(format, f.common.color,
           {[&] { std::cout << view::gate_json(g).dump(2) << "\n"; },
            [&] { std::cout << view::gate_csv(g); }, [&] { std::cout << view::gate_markdown(g); },
            [&](bool color) { std::cout << view::gate_text(g, color); }});
  std::cout.flush();
  if (!f.junit.empty()) {
    io::write_file_atomically(view::gate_junit_xml(g, junit_timestamp()), f.junit, f.force);
    std::cerr << "wrote " << text::printable(f.junit) << "\n";
  }
  for (const std::string& summary : summary_paths(f)) {
    append_to_file(summary, view::gate_markdown(g) + "\n");
  }
}

int run_gate(const GateFlags& f) {
  const text::Format format = parse_format_flag(f.common.format);
  check_outputs(f, format);
  std::vector<compare::GateRule> rules;
  try {
    rules = compare::parse_gate_rules(
        f.fail_on.empty() ? std::vector<std::string>{std::string(compare::kDefaultGateRules)}
                          : f.fail_on);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("--fail-on: ") + e.what());
  }
  // A run that did not complete fails the gate whatever else it holds: status is always a rule.
  if (std::none_of(rules.begin(), rules.end(), [](const compare::GateRule& r) {
        return r.metric == compare::GateMetric::kStatus;
      })) {
    rules.insert(rules.begin(), compare::parse_gate_rule("status"));
  }
  const report::Report current = load_report(f.current);
  view::GateReport g;
  const std::vector<Candidate> baseline = load_baseline(f, current, g.left_out);
  g.fairness = check_jobs(f, baseline, current);
  const bool tolerated_only =
      std::none_of(g.fairness.differences.begin(), g.fairness.differences.end(),
                   [&](const compare::Difference& d) { return other_job(d, current); });
  if (!g.fairness.same_job && tolerated_only) {
    g.headline = fmt::format(
        "the same job, but the new run did not complete (status {}): it differs in what it "
        "finished",
        current.status);
  }
  const bool cost_rule = std::any_of(rules.begin(), rules.end(), [](const compare::GateRule& r) {
    return r.metric == compare::GateMetric::kCost;
  });
  if (baseline.empty()) {
    // --allow-no-baseline: nothing to hold the figures against; a run that did not complete
    // still fails.
    g.note =
        "no completed report of this job in the baseline: only status is held, and this "
        "report starts the baseline";
    g.headline = "no baseline of this job";
    rules = {compare::parse_gate_rule("status")};
  }
  g.baseline_path = f.baseline;
  g.current_path = f.current;
  g.run_name = current.run_name;
  g.host = current.environment.host.hostname;
  g.options.alpha = f.alpha;
  g.options.min_samples = f.min_samples;
  g.options.noise_sigmas = f.noise_sigmas;
  g.options.prices = gate_prices(f, current);
  if (!g.options.prices.empty() && !cost_rule) {
    throw InputError(
        "--offer and --rate price the cost rule, and --fail-on has none: add e.g. cost:+5%");
  }
  g.undecided_fails = f.undecided == "fail";
  std::vector<report::Report> reports;
  for (const Candidate& c : baseline) {
    g.baseline_sources.push_back(c.path);
    reports.push_back(c.report);
  }
  if (reports.empty()) reports.push_back(current);  // status reads the new run alone
  try {
    g.results = compare::evaluate_gate(reports, current, rules, g.options);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("--fail-on: ") + e.what());
  }
  g.verdict = compare::gate_verdict(g.results, g.undecided_fails);
  write_outputs(f, g, format);
  check_standard_output();
  return g.verdict.passed ? kExitOk : kExitGateFailed;
}

}  // namespace

Action add_gate_command(CLI::App& app) {
  auto f = std::make_shared<GateFlags>();
  CLI::App* cmd = add_subcommand(app, "gate");
  cmd->add_option("baseline", f->baseline,
                  "The baseline: a report of an earlier run of the job, or a folder of them (the "
                  "median of their figures, their spread widening each limit)")
      ->required();
  cmd->add_option("new", f->current, "The new run's report")->required();
  cmd->add_option("--fail-on", f->fail_on,
                  fmt::format("Rules, comma-separated or repeated: METRIC:AMOUNT, e.g. "
                              "step_time:+5%,mfu:-3pp,status (docs/ci.md); default {}",
                              compare::kDefaultGateRules));
  cmd->add_option("--alpha", f->alpha,
                  "Significance level of step_time's Mann-Whitney test (default 0.05)")
      ->check(finite_number(1e-9, 0.5));
  cmd->add_option("--min-samples", f->min_samples,
                  "Measured steps each side needs for step_time's test to decide (default 9)")
      ->check(whole_number(3, int64_t{1} << 40));
  cmd->add_option("--noise-sigmas", f->noise_sigmas,
                  "A folder baseline of 3 or more reports widens a limit to this many times its "
                  "spread (c_n x 1.4826 x MAD) where that is further than the rule's amount "
                  "(default 3)")
      ->check(finite_number(0.0, 100.0));
  cmd->add_option("--last", f->last,
                  "A folder baseline: only its newest N completed reports of the job")
      ->check(whole_number(1, int64_t{1} << 20));
  cmd->add_option("--undecided", f->undecided,
                  "A rule that cannot decide (too few samples, a figure not measured): fail (the "
                  "default) fails the gate, warn lets it pass with a warning");
  cmd->add_option("--offer", f->offers,
                  "The cost rule bills both runs at this catalog offer (repeat for several)");
  cmd->add_option("--rate", f->rates,
                  "The cost rule bills both runs at this USD per GPU-hour (repeat for several)")
      ->check(finite_number(0.0, 1e9, /*above_lo=*/true));
  cmd->add_option("--billing", f->billing, "Billing of --rate (default per-second)");
  cmd->add_option("--min-seconds", f->min_seconds, "Minimum billed seconds of --rate")
      ->check(whole_number(0, cost::kMaxMinBilledSeconds));
  cmd->add_flag("--allow-different", f->allow_different,
                "Gate even when the reports are of different jobs");
  cmd->add_flag("--allow-no-baseline", f->allow_no_baseline,
                "A baseline folder with no completed report of this job (a first run, a changed "
                "job) passes with a note instead of exit 2: the new report starts the baseline");
  cmd->add_option("--junit", f->junit, "Write JUnit XML here: one test case per rule");
  cmd->add_option("--summary", f->summary,
                  "Append the markdown summary to this file (GitHub: $GITHUB_STEP_SUMMARY)");
  cmd->add_flag("--github", f->github,
                "GitHub Actions: an annotation per rule that did not pass, and the summary "
                "appended to $GITHUB_STEP_SUMMARY");
  cmd->add_flag("--force", f->force, "Replace the --junit file if it exists");
  add_common_options(cmd, f->common, /*with_dates=*/false);
  return [f]() { return run_gate(*f); };
}

}  // namespace ftbench::cli
