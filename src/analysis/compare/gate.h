// A regression gate (`ftbench gate`): a new report held against a baseline, one earlier report
// of the same job or the median of several, by rules such as `step_time:+5%`. Each rule passes,
// fails, or cannot decide (too few samples for its test, or a figure a report lacks); docs/ci.md
// gives every rule, its figure and its test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "economics/cost/billing.h"
#include "report/report.h"
#include "util/stats/mann_whitney.h"
#include "util/text/spellings.h"

namespace ftbench::compare {

enum class GateMetric {
  kStatus,           // the new run completed
  kStepTime,         // median step time (s), with the Mann-Whitney test (a slowdown only)
  kTokensPerSecond,  // steady-state real tokens/s: tokens over time, stalls weigh in full
  kTimeToFirstStep,  // from t0 to the end of the first step (s), the first process's
  kPeakMemory,       // allocator, device-wide and host RSS peaks, each that both reports hold
  kPeakAllocated,    // the allocator's peak alone (bytes; on CPU the tensors counted)
  kPeakDeviceUsed,   // device-wide used memory alone (bytes, GPU)
  kPeakRss,          // the process's peak resident set alone (bytes)
  kCost,             // billed dollars at each price given
  kFinalLoss,        // the smoothed final loss: mean of the last train.loss_window losses
  kMfu,              // MFU against the datasheet peak (a fraction)
  kMfuGemm,          // MFU against the measured GEMM peak (a fraction)
};
inline constexpr text::Spelling<GateMetric> kGateMetricSpellings[] = {
    {GateMetric::kStatus, "status"},
    {GateMetric::kStepTime, "step_time"},
    {GateMetric::kTokensPerSecond, "tokens_per_second"},
    {GateMetric::kTimeToFirstStep, "time_to_first_step"},
    {GateMetric::kPeakMemory, "peak_memory"},
    {GateMetric::kPeakAllocated, "peak_allocated"},
    {GateMetric::kPeakDeviceUsed, "peak_device_used"},
    {GateMetric::kPeakRss, "peak_rss"},
    {GateMetric::kCost, "cost"},
    {GateMetric::kFinalLoss, "final_loss"},
    {GateMetric::kMfu, "mfu"},
    {GateMetric::kMfuGemm, "mfu_gemm"}};

// How a rule's amount is read: a fraction of the baseline (`+5%`), a difference in the figure's
// unit (`+0.02`, `+2s`, `+512MiB`), or percentage points of a fraction (`-3pp`, MFU only).
enum class GateBound { kNone, kRelative, kAbsolute, kPoints };

struct GateRule {
  std::string text;  // as written, e.g. "step_time:+5%"
  GateMetric metric = GateMetric::kStatus;
  GateBound bound = GateBound::kNone;
  // A fraction for kRelative and kPoints (0.05 for 5 %, 0.03 for 3pp); the figure's unit for
  // kAbsolute (seconds, bytes, tokens/s, loss). Never negative: the direction is the metric's.
  double amount = 0.0;
};

// Whether a larger figure is worse (times, memory, cost, loss) or better (throughput, MFU).
bool larger_is_worse(GateMetric metric);

// One rule, "METRIC" or "METRIC:AMOUNT"; throws std::invalid_argument naming the rule, what was
// expected and what was found. The sign, when given, must be the worse direction.
GateRule parse_gate_rule(std::string_view text);

// Rules from flag values, each a comma-separated list; a rule written twice is refused.
std::vector<GateRule> parse_gate_rules(const std::vector<std::string>& values);

// What `ftbench gate` holds a run to when no rule is given.
inline constexpr std::string_view kDefaultGateRules =
    "status,step_time:+5%,tokens_per_second:-5%,time_to_first_step:+20%,peak_memory:+10%,"
    "final_loss:+0.02";

enum class GateOutcome {
  kPass,
  kFail,
  kTooFewSamples,  // a sample has fewer steps than the test needs: neither pass nor fail
  kNotMeasured,    // a report lacks the figure (no measured step, no MFU peak): undecided
};
inline constexpr text::Spelling<GateOutcome> kGateOutcomeSpellings[] = {
    {GateOutcome::kPass, "pass"},
    {GateOutcome::kFail, "fail"},
    {GateOutcome::kTooFewSamples, "too_few_samples"},
    {GateOutcome::kNotMeasured, "not_measured"}};

// Too few samples or not measured: the rule could not decide.
inline bool is_undecided(GateOutcome outcome) {
  return outcome == GateOutcome::kTooFewSamples || outcome == GateOutcome::kNotMeasured;
}

// One figure of a rule: a rule has one, except peak_memory (one per memory kind both sides hold)
// and cost (one per price).
struct GatePart {
  std::string name;  // "median step time", "allocator peak", "at lambda-h100 ($2.49/GPU-h)"
  std::string unit;  // s, tokens/s, bytes, USD, loss, fraction, status
  std::optional<double> baseline;  // the median over the baseline's reports
  // c_n x 1.4826 x the median absolute deviation over the baseline's reports (a standard
  // deviation that one outlier moves little; c_n corrects its bias for few values); unset for a
  // baseline of fewer than 3 reports.
  std::optional<double> spread;
  std::optional<double> current;
  // The figure beyond which the rule fails: the rule's amount from the baseline, moved out to
  // noise_sigmas x spread when that is further (`widened`).
  std::optional<double> limit;
  bool widened = false;
  bool beyond = false;        // current is worse than limit
  std::string baseline_text;  // status only: "completed"
  std::string current_text;
};

struct GateResult {
  GateRule rule;
  GateOutcome outcome = GateOutcome::kNotMeasured;
  std::vector<GatePart> parts;
  // step_time: the new run's measured steps against the baseline's (every baseline report's
  // measured steps pooled).
  std::optional<stats::MannWhitneyResult> test;
  std::string message;  // one line: the figures and why the outcome
};

// A price the cost rule bills every report at.
struct GatePrice {
  std::string name;  // the offer, or "--rate"
  cost::Rate rate;
};

struct GateOptions {
  double alpha = 0.05;  // significance level of the step tests
  // Steps each side needs for the test to decide (Google Benchmark's 9).
  int64_t min_samples = stats::kMannWhitneyOptimalSamples;
  double noise_sigmas = 3.0;  // how far the baseline's spread widens a limit
  std::vector<GatePrice> prices;
};

// Every rule against the baseline's reports (one or more completed runs of the job) and the new
// one. Throws std::invalid_argument when `baseline` is empty, and when a cost rule has no price.
std::vector<GateResult> evaluate_gate(const std::vector<report::Report>& baseline,
                                      const report::Report& current,
                                      const std::vector<GateRule>& rules,
                                      const GateOptions& options);

struct GateVerdict {
  bool passed = true;
  int64_t rules = 0;
  int64_t passes = 0;
  int64_t failures = 0;
  int64_t undecided = 0;  // too_few_samples and not_measured
};

// Failed when a rule failed, or, when `undecided_fails`, when a rule could not decide.
GateVerdict gate_verdict(const std::vector<GateResult>& results, bool undecided_fails);

// Whether the Mann-Whitney test of samples of n1 and n2 values can reach a p below `alpha` at
// all (3 against 3 cannot go below 0.1): when it cannot, a step rule is too_few_samples.
bool test_can_decide(int64_t n1, int64_t n2, double alpha);

// A figure in its unit's words: "0.0328 s", "17569 tokens/s", "11.52 MiB", "$0.05",
// "41.20 %" (a fraction), "5.7158" (a loss).
std::string gate_figure_text(double value, const std::string& unit);

// A figure's change against the baseline: "+3.7 %" (relative; the difference in the unit when
// the baseline is 0), "-1.20 pp" (points). "" when either side is missing.
std::string gate_change_text(const GatePart& part, GateBound bound);

// A baseline of fewer reports has no spread: two values' MAD is half their gap, which one outlier
// night would set.
inline constexpr std::size_t kMinSpreadReports = 3;

// The median and the spread (c_n x 1.4826 x MAD; unset for fewer than kMinSpreadReports values)
// of a baseline's figures.
struct Center {
  double median = 0.0;
  std::optional<double> spread;
};
Center center_of(const std::vector<double>& values);

}  // namespace ftbench::compare
