// The gate's rules, exact: each parsed form and refusal, and each rule passing on its limit and
// failing just beyond it, with reports made to differ by known amounts; the step test's
// significance and too-few-samples outcomes; a baseline of several reports (median, spread).
#include "analysis/compare/gate.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "report/report.h"

namespace ftbench::compare {
namespace {

// A completed report: 2 warm-up steps of 5 s, then `measured` steps; 1000 real tokens a step;
// one phase of `run_seconds`; the summary's median set to `median` (the figure the rule reads;
// the samples are what the test reads).
report::Report make(const std::vector<double>& measured, double median,
                    double run_seconds = 100.0) {
  report::Report r;
  r.run_name = "gate";
  r.status = "completed";
  r.environment.device.backend = "cpu";
  r.phases = {{"training", 0.0, run_seconds}};
  r.time_to_first_step_seconds = 10.0;
  std::vector<double> walls = {5.0, 5.0};
  walls.insert(walls.end(), measured.begin(), measured.end());
  for (std::size_t i = 0; i < walls.size(); ++i) {
    report::StepRecord s;
    s.step = static_cast<int64_t>(i) + 1;
    s.epoch = 1;
    s.wall_seconds = walls[i];
    s.real_tokens = 1000;
    s.loss = 2.0;
    r.steps.push_back(s);
  }
  r.derived.steps_per_epoch = static_cast<int64_t>(walls.size());
  r.derived.effective_batch = 4;
  r.summary.warmup_steps_excluded = 2;
  r.summary.measured_steps = static_cast<int64_t>(measured.size());
  r.summary.step_seconds.median = median;
  r.summary.tokens_per_second_real = 1000.0 / median;
  r.summary.mean_last_losses = 2.0;
  r.summary.loss_window = 4;
  r.memory.peak_allocated_bytes = 1000;
  r.memory.peak_rss_bytes = 5000;
  return r;
}

std::vector<double> constant(double v, std::size_t n = 10) { return std::vector<double>(n, v); }

GateResult one(const std::string& rule, const std::vector<report::Report>& base,
               const report::Report& now, const GateOptions& options = {}) {
  return evaluate_gate(base, now, {parse_gate_rule(rule)}, options).front();
}

std::string refusal(const std::string& rule) {
  try {
    parse_gate_rule(rule);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(GateRules, ParsesEachForm) {
  struct Case {
    const char* text;
    GateMetric metric;
    GateBound bound;
    double amount;
  };
  for (const Case& c : std::vector<Case>{
           {"status", GateMetric::kStatus, GateBound::kNone, 0.0},
           {"step_time:+5%", GateMetric::kStepTime, GateBound::kRelative, 0.05},
           {"step_time:5%", GateMetric::kStepTime, GateBound::kRelative, 0.05},
           {"step_time:+20ms", GateMetric::kStepTime, GateBound::kAbsolute, 0.02},
           {"time_to_first_step:+30s", GateMetric::kTimeToFirstStep, GateBound::kAbsolute, 30.0},
           {"tokens_per_second:-5%", GateMetric::kTokensPerSecond, GateBound::kRelative, 0.05},
           {"tokens_per_second:-100", GateMetric::kTokensPerSecond, GateBound::kAbsolute, 100.0},
           {"peak_memory:+10%", GateMetric::kPeakMemory, GateBound::kRelative, 0.1},
           {"peak_allocated:+512MiB", GateMetric::kPeakAllocated, GateBound::kAbsolute,
            536870912.0},
           {"peak_rss:+1GB", GateMetric::kPeakRss, GateBound::kAbsolute, 1e9},
           {"cost:+5%", GateMetric::kCost, GateBound::kRelative, 0.05},
           {"final_loss:+0.02", GateMetric::kFinalLoss, GateBound::kAbsolute, 0.02},
           {"mfu:-3pp", GateMetric::kMfu, GateBound::kPoints, 0.03},
           {"mfu_gemm:-10%", GateMetric::kMfuGemm, GateBound::kRelative, 0.1},
           {" final_loss : +0 ", GateMetric::kFinalLoss, GateBound::kAbsolute, 0.0}}) {
    SCOPED_TRACE(c.text);
    const GateRule r = parse_gate_rule(c.text);
    EXPECT_EQ(r.metric, c.metric);
    EXPECT_EQ(r.bound, c.bound);
    EXPECT_DOUBLE_EQ(r.amount, c.amount);
  }
}

TEST(GateRules, RefusesWithWhatWasExpected) {
  EXPECT_EQ(refusal("step_tme:+5%"),
            "rule \"step_tme:+5%\": unknown metric \"step_tme\"; did you mean \"step_time\"?");
  EXPECT_EQ(refusal("step_time:-5%"),
            "rule \"step_time:-5%\": step_time gets worse as it grows, so its amount is +N (e.g. "
            "step_time:+5%); found -");
  EXPECT_EQ(refusal("tokens_per_second:+5%"),
            "rule \"tokens_per_second:+5%\": tokens_per_second gets worse as it falls, so its "
            "amount is -N (e.g. tokens_per_second:-5%); found +");
  EXPECT_EQ(refusal("step_time"),
            "rule \"step_time\": expected an amount after the metric, e.g. step_time:+5%");
  EXPECT_EQ(refusal("mfu:-3"),
            "rule \"mfu:-3\": expected an amount in %, pp (e.g. mfu:-3pp), found \"-3\"");
  EXPECT_EQ(refusal("peak_memory:+10"),
            "rule \"peak_memory:+10\": expected an amount in %, GiB, MiB, KiB, GB, MB, KB, B (e.g. "
            "peak_memory:+5%), found \"+10\"");
  EXPECT_EQ(refusal("status:+5%"),
            "rule \"status:+5%\": status takes no amount (any run that did not complete fails "
            "it); write \"status\"");
  EXPECT_EQ(refusal("tokens_per_second:-100%"),
            "rule \"tokens_per_second:-100%\": a fall of 100 % or more can never happen; expected "
            "less than 100%");
  EXPECT_EQ(refusal("step_time:+-5%"),
            "rule \"step_time:+-5%\": expected an amount in %, ms, s (e.g. step_time:+5%), found "
            "\"+-5%\"");
  EXPECT_NE(refusal("step_time:+nan%"), "accepted");
  EXPECT_NE(refusal("step_time:+inf%"), "accepted");
  EXPECT_EQ(refusal(""), "empty rule: expected METRIC:AMOUNT, e.g. step_time:+5%");
}

TEST(GateRules, SplitsListsAndRefusesARuleTwice) {
  const std::vector<GateRule> rules = parse_gate_rules({"status,step_time:+5%", "mfu:-3pp"});
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[1].text, "step_time:+5%");
  EXPECT_EQ(rules[2].metric, GateMetric::kMfu);
  EXPECT_THROW(parse_gate_rules({"status", "status"}), std::invalid_argument);
  // The default list parses.
  EXPECT_EQ(parse_gate_rules({std::string(kDefaultGateRules)}).size(), 6u);
}

TEST(GateStepTime, PassesOnTheLimitAndFailsJustBeyondWhenSignificant) {
  const report::Report base = make(constant(1.0), 1.0);
  // Exactly +5 %: on the limit, a pass, however significant.
  GateResult on = one("step_time:+5%", {base}, make(constant(1.0 * 1.05), 1.0 * 1.05));
  EXPECT_EQ(on.outcome, GateOutcome::kPass) << on.message;
  ASSERT_EQ(on.parts.size(), 1u);
  EXPECT_EQ(*on.parts[0].limit, 1.05);
  EXPECT_FALSE(on.parts[0].beyond);
  ASSERT_TRUE(on.test.has_value());
  EXPECT_LT(on.test->p_value, 0.05);
  // Beyond by one step of a double: significant (every step slower), a failure.
  const double just = std::nextafter(1.05, 2.0);
  GateResult beyond = one("step_time:+5%", {base}, make(constant(just), just));
  EXPECT_EQ(beyond.outcome, GateOutcome::kFail) << beyond.message;
  EXPECT_TRUE(beyond.parts[0].beyond);
  // Rounded, both would read 1.05 s: the message gives every digit.
  EXPECT_EQ(beyond.message,
            "median step time 1.0500000000000003 s against 1 s (+5.0%), limit 1.05 s; beyond the "
            "limit and significant: Mann-Whitney U 0, p < 0.001 at alpha 0.05");
}

TEST(GateStepTime, BeyondTheLimitButNotSignificantPasses) {
  // 1..10 s against 1.5..10.5 s: the median 9 % slower, the samples overlapping.
  std::vector<double> a, b;
  for (int i = 1; i <= 10; ++i) {
    a.push_back(i);
    b.push_back(i + 0.5);
  }
  const GateResult r = one("step_time:+5%", {make(a, 5.5)}, make(b, 6.0));
  EXPECT_EQ(r.outcome, GateOutcome::kPass);
  EXPECT_TRUE(r.parts[0].beyond);
  ASSERT_TRUE(r.test.has_value());
  EXPECT_GE(r.test->p_value, 0.05);
  EXPECT_NE(r.message.find("beyond the limit and not significant"), std::string::npos) << r.message;
  // At alpha 0.9 the same difference is significant.
  GateOptions loose;
  loose.alpha = 0.9;
  EXPECT_EQ(one("step_time:+5%", {make(a, 5.5)}, make(b, 6.0), loose).outcome, GateOutcome::kFail);
}

TEST(GateStepTime, TooFewSamplesIsItsOwnOutcomeEvenWhenFaster) {
  const report::Report base = make(constant(1.0, 8), 1.0);
  for (double t : {0.5, 1.0, 2.0}) {
    const GateResult r = one("step_time:+5%", {base}, make(constant(t, 8), t));
    EXPECT_EQ(r.outcome, GateOutcome::kTooFewSamples) << t;
    EXPECT_NE(r.message.find("too few samples for the test: 8 measured steps in the baseline, 8 "
                             "in the new run; it needs 9 on each side and a p below alpha 0.05 "
                             "within reach"),
              std::string::npos)
        << r.message;
  }
  // Nine each decide; --min-samples moves the bar.
  EXPECT_EQ(
      one("step_time:+5%", {make(constant(1.0, 9), 1.0)}, make(constant(2.0, 9), 2.0)).outcome,
      GateOutcome::kFail);
  GateOptions eight;
  eight.min_samples = 8;
  EXPECT_EQ(one("step_time:+5%", {base}, make(constant(2.0, 8), 2.0), eight).outcome,
            GateOutcome::kFail);
  // A folder baseline pools its reports' steps: two of 8 make 16.
  EXPECT_EQ(one("step_time:+5%", {base, base}, make(constant(2.0, 9), 2.0)).outcome,
            GateOutcome::kFail);
}

TEST(GateStepTime, NoMeasuredStepIsNotMeasured) {
  report::Report none = make({}, 0.0);
  none.summary.measured_steps = 0;
  const GateResult r = one("step_time:+5%", {make(constant(1.0), 1.0)}, none);
  EXPECT_EQ(r.outcome, GateOutcome::kNotMeasured);
  EXPECT_EQ(r.message,
            "the new report lacks a measured step (every step was timing warm-up, or none ran)");
}

TEST(GateThroughput, FallsFivePercentOnTheLimit) {
  const report::Report base = make(constant(1.0), 1.0);  // 1000 tokens/s
  report::Report on = make(constant(1.0 / 0.95), 1.0 / 0.95);
  on.summary.tokens_per_second_real = 1000.0 * (1.0 - 0.05);
  EXPECT_EQ(one("tokens_per_second:-5%", {base}, on).outcome, GateOutcome::kPass);
  report::Report below = on;
  below.summary.tokens_per_second_real = std::nextafter(950.0, 0.0);
  const GateResult r = one("tokens_per_second:-5%", {base}, below);
  EXPECT_EQ(r.outcome, GateOutcome::kFail) << r.message;
  EXPECT_EQ(*r.parts[0].limit, 950.0);
  // Faster is never a failure.
  report::Report faster = make(constant(0.5), 0.5);
  EXPECT_EQ(one("tokens_per_second:-5%", {base}, faster).outcome, GateOutcome::kPass);
}

TEST(GateLevels, TimeToFirstStepMemoryLossAndMfuAtTheirEdges) {
  const report::Report base = make(constant(1.0), 1.0);
  report::Report r = base;
  r.time_to_first_step_seconds = 10.0 * (1.0 + 0.2);
  EXPECT_EQ(one("time_to_first_step:+20%", {base}, r).outcome, GateOutcome::kPass);
  r.time_to_first_step_seconds = std::nextafter(12.0, 13.0);
  EXPECT_EQ(one("time_to_first_step:+20%", {base}, r).outcome, GateOutcome::kFail);
  r.time_to_first_step_seconds = 10.0 + 30.0;
  EXPECT_EQ(one("time_to_first_step:+30s", {base}, r).outcome, GateOutcome::kPass);

  // peak_memory holds every kind both reports have: the allocator on its limit, RSS beyond.
  r = base;
  r.memory.peak_allocated_bytes = 1100;
  GateResult m = one("peak_memory:+10%", {base}, r);
  EXPECT_EQ(m.outcome, GateOutcome::kPass);
  ASSERT_EQ(m.parts.size(), 2u);  // no device-wide figure on either side
  EXPECT_EQ(m.parts[0].name, "allocator peak");
  EXPECT_EQ(m.parts[1].name, "host RSS peak");
  r.memory.peak_rss_bytes = 5501;
  m = one("peak_memory:+10%", {base}, r);
  EXPECT_EQ(m.outcome, GateOutcome::kFail);
  EXPECT_FALSE(m.parts[0].beyond);
  EXPECT_TRUE(m.parts[1].beyond);
  EXPECT_EQ(one("peak_allocated:+10%", {base}, r).outcome, GateOutcome::kPass);
  EXPECT_EQ(one("peak_device_used:+10%", {base}, r).outcome, GateOutcome::kNotMeasured);

  r = base;
  r.summary.mean_last_losses = 2.0 + 0.02;
  EXPECT_EQ(one("final_loss:+0.02", {base}, r).outcome, GateOutcome::kPass);
  r.summary.mean_last_losses = std::nextafter(2.02, 3.0);
  const GateResult loss = one("final_loss:+0.02", {base}, r);
  EXPECT_EQ(loss.outcome, GateOutcome::kFail);
  EXPECT_EQ(loss.message,
            "smoothed final loss 2.0200000000000005 against 2.0000 (+0.0200), limit 2.02");

  report::Report with_mfu = base;
  with_mfu.summary.mfu = {{"lora_frozen_base", false, 1.0, 1.0, 0.40}};
  r = with_mfu;
  r.summary.mfu.front().mfu = 0.40 - 0.03;
  EXPECT_EQ(one("mfu:-3pp", {with_mfu}, r).outcome, GateOutcome::kPass);
  r.summary.mfu.front().mfu = std::nextafter(0.37, 0.0);
  const GateResult mfu = one("mfu:-3pp", {with_mfu}, r);
  EXPECT_EQ(mfu.outcome, GateOutcome::kFail);
  EXPECT_EQ(mfu.message, fmt::format("MFU (datasheet peak) {:.17g} % against 40.00 % (-3.00 pp), "
                                     "limit {:.17g} %",
                                     100.0 * std::nextafter(0.37, 0.0), 100.0 * (0.40 - 0.03)));
  // Without a peak there is no MFU: undecided, never a pass.
  const GateResult none = one("mfu:-3pp", {base}, base);
  EXPECT_EQ(none.outcome, GateOutcome::kNotMeasured);
  EXPECT_EQ(none.message,
            "each report lacks an MFU figure (no peak TFLOP/s was known for the device: ftbench "
            "run --peak-tflops)");
}

TEST(GateStatus, AnyRunThatDidNotCompleteFails) {
  const report::Report base = make(constant(1.0), 1.0);
  for (const char* status : {"diverged", "failed", "interrupted"}) {
    report::Report r = base;
    r.status = status;
    const GateResult g = one("status", {base}, r);
    EXPECT_EQ(g.outcome, GateOutcome::kFail);
    EXPECT_EQ(g.message, std::string("the run did not complete: status ") + status);
  }
  EXPECT_EQ(one("status", {base}, base).outcome, GateOutcome::kPass);
}

TEST(GateCost, BillsBothRunsAtEachPrice) {
  const report::Report base = make(constant(1.0), 1.0, 100.0);
  const report::Report slower = make(constant(1.0), 1.0, 110.0);  // +10 % run time
  GateOptions options;
  cost::Rate per_second;
  per_second.usd_per_gpu_hour = 3.6;
  per_second.billing = cost::Billing::kPerSecond;
  cost::Rate per_hour = per_second;
  per_hour.billing = cost::Billing::kPerHour;
  options.prices = {{"--rate", per_second}, {"hourly", per_hour}};
  const GateResult r = one("cost:+5%", {base}, slower, options);
  // Per second: $0.10 against $0.11, beyond; per hour both bill one hour: $3.60 each.
  EXPECT_EQ(r.outcome, GateOutcome::kFail);
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_DOUBLE_EQ(*r.parts[0].baseline, 0.1);
  EXPECT_DOUBLE_EQ(*r.parts[0].current, 0.11);
  EXPECT_TRUE(r.parts[0].beyond);
  EXPECT_DOUBLE_EQ(*r.parts[1].current, 3.6);
  EXPECT_FALSE(r.parts[1].beyond);
  options.prices = {{"hourly", per_hour}};
  EXPECT_EQ(one("cost:+5%", {base}, slower, options).outcome, GateOutcome::kPass);
  // A cost rule without a price is refused.
  EXPECT_THROW(one("cost:+5%", {base}, slower), std::invalid_argument);
}

TEST(GateBaseline, MedianOfSeveralAndTheirSpreadWidensTheLimit) {
  // Spread: 1.4826 x the median absolute deviation.
  const Center c = center_of({1.0, 1.1, 0.9});
  EXPECT_DOUBLE_EQ(c.median, 1.0);
  ASSERT_TRUE(c.spread.has_value());
  // With the small-sample factor of 3 values (benchmarks/mad-small-sample.py).
  EXPECT_NEAR(*c.spread, 1.489 * 1.4826 * 0.1, 1e-15);
  EXPECT_FALSE(center_of({2.0}).spread.has_value());
  // An outlier night moves neither the median nor the spread: 10, 10, 13 s to first step.
  report::Report a = make(constant(1.0), 1.0), b = a, outlier = a;
  outlier.time_to_first_step_seconds = 13.0;
  report::Report now = a;
  now.time_to_first_step_seconds = std::nextafter(12.0, 13.0);
  GateResult r = one("time_to_first_step:+20%", {a, b, outlier}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kFail);
  EXPECT_EQ(*r.parts[0].baseline, 10.0);
  EXPECT_EQ(*r.parts[0].spread, 0.0);
  EXPECT_FALSE(r.parts[0].widened);
  // Noisy nights (9, 10, 11 s: spread 1.489 x 1.4826 s) widen a 5 % limit to 3 x the spread.
  a.time_to_first_step_seconds = 9.0;
  outlier.time_to_first_step_seconds = 11.0;
  now.time_to_first_step_seconds = 14.0;
  r = one("time_to_first_step:+5%", {a, b, outlier}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kPass);
  EXPECT_TRUE(r.parts[0].widened);
  EXPECT_NEAR(*r.parts[0].limit, 10.0 + 3 * 1.489 * 1.4826, 1e-12);
  EXPECT_NE(r.message.find("(widened to 3 x the baseline's spread of 2.208 s)"), std::string::npos)
      << r.message;
  GateOptions tight;
  tight.noise_sigmas = 0.0;
  EXPECT_EQ(one("time_to_first_step:+5%", {a, b, outlier}, now, tight).outcome, GateOutcome::kFail);
}

TEST(GateVerdicts, CountsAndTheUndecidedPolicy) {
  std::vector<GateResult> results(4);
  results[0].outcome = GateOutcome::kPass;
  results[1].outcome = GateOutcome::kPass;
  results[2].outcome = GateOutcome::kTooFewSamples;
  results[3].outcome = GateOutcome::kNotMeasured;
  GateVerdict v = gate_verdict(results, /*undecided_fails=*/true);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.rules, 4);
  EXPECT_EQ(v.passes, 2);
  EXPECT_EQ(v.failures, 0);
  EXPECT_EQ(v.undecided, 2);
  EXPECT_TRUE(gate_verdict(results, false).passed);
  results[0].outcome = GateOutcome::kFail;
  EXPECT_FALSE(gate_verdict(results, false).passed);
  EXPECT_TRUE(gate_verdict({}, true).passed);
}

// Defects a hostile review found, each first a failing test.

TEST(GateReview, TwoReportsHaveNoSpreadSoOneOutlierCannotWidenTheLimit) {
  EXPECT_FALSE(center_of({1.0, 2.0}).spread.has_value());
  report::Report a = make(constant(1.0), 1.0), outlier = a, now = a;
  outlier.memory.peak_allocated_bytes = 1500;
  now.memory.peak_allocated_bytes = 2300;
  const GateResult r = one("peak_allocated:+5%", {a, outlier}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kFail) << r.message;
  EXPECT_FALSE(r.parts[0].widened);
  EXPECT_EQ(*r.parts[0].limit, 1250.0 * 1.05);
}

TEST(GateReview, EveryRanksMemoryIsHeld) {
  report::Report base = make(constant(1.0), 1.0);
  base.distributed = report::Distributed{};
  base.distributed->ranks.resize(2);
  base.distributed->ranks[0].peak_allocated_bytes = 1000;
  base.distributed->ranks[1].peak_allocated_bytes = 1000;
  base.distributed->ranks[1].peak_rss_bytes = 5000;
  report::Report now = base;
  now.distributed->ranks[1].peak_allocated_bytes = 4000;
  now.distributed->ranks[1].peak_rss_bytes = 20000;
  const GateResult r = one("peak_memory:+10%", {base}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kFail);
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(*r.parts[0].current, 4000.0);
  EXPECT_EQ(*r.parts[1].current, 20000.0);
}

TEST(GateReview, AStepTestThatCannotReachAlphaIsTooFewSamples) {
  EXPECT_FALSE(test_can_decide(3, 3, 0.05));  // smallest p: 2 / C(6, 3) = 0.1
  EXPECT_TRUE(test_can_decide(4, 4, 0.05));   // 2 / C(8, 4) = 0.029
  EXPECT_FALSE(test_can_decide(4, 4, 0.01));
  GateOptions three;
  three.min_samples = 3;
  const GateResult r =
      one("step_time:+5%", {make(constant(1.0, 3), 1.0)}, make(constant(10.0, 3), 10.0), three);
  EXPECT_EQ(r.outcome, GateOutcome::kTooFewSamples) << r.message;
}

TEST(GateReview, RuleParsingGaps) {
  try {
    parse_gate_rules({"step_time:+5%,step_time: 5%"});
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "rules \"step_time:+5%\" and \"step_time: 5%\" are the same rule");
  }
  EXPECT_EQ(parse_gate_rules({"status,\n  step_time:+5%\n"}).size(), 2u);
  EXPECT_EQ(refusal("step_time:1e400%"),
            "rule \"step_time:1e400%\": the amount \"1e400\" is out of range; expected a finite "
            "number");
  // An absolute fall to or below zero can never happen: against this baseline the rule cannot
  // decide (and a partial new run still fails status rather than stopping the gate).
  const GateResult never =
      one("tokens_per_second:-1e12", {make(constant(1.0), 1.0)}, make(constant(1.0), 1.0));
  EXPECT_EQ(never.outcome, GateOutcome::kNotMeasured);
  EXPECT_NE(never.message.find("; the rule's amount puts the limit at or below 0 against this "
                               "baseline: it can never fail"),
            std::string::npos)
      << never.message;
}

TEST(GateReview, AFigureJustBeyondItsLimitIsShownWithEveryDigit) {
  const report::Report base = make(constant(1.0), 1.0);
  report::Report now = base;
  now.summary.mean_last_losses = std::nextafter(2.0001, 3.0);
  const GateResult r = one("final_loss:+0.0001", {base}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kFail);
  // Rounded to 4 places both read 2.0001; the message gives every digit instead.
  EXPECT_EQ(r.message, fmt::format("smoothed final loss {:.17g} against 2.0000 (+0.0001), limit "
                                   "{:.17g}",
                                   now.summary.mean_last_losses, 2.0 + 0.0001));
  EXPECT_NE(fmt::format("{:.17g}", now.summary.mean_last_losses),
            fmt::format("{:.17g}", 2.0 + 0.0001));
}

// From a second review.

TEST(GateReview2, ThroughputLostToStallsFailsTokensPerSecond) {
  // 2 of 12 measured steps 20 times slower: tokens over time falls by 3.5 x, though a rank test
  // of each step's tokens/s would call it noise.
  const report::Report base = make(constant(1.0, 12), 1.0);
  std::vector<double> stalled = constant(1.0, 12);
  stalled[3] = stalled[8] = 20.0;
  report::Report now = make(stalled, 1.0);
  now.summary.tokens_per_second_real = 12000.0 / (10.0 + 40.0);
  const GateResult r = one("tokens_per_second:-5%", {base}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kFail) << r.message;
  EXPECT_FALSE(r.test.has_value());
}

TEST(GateReview2, StepTimeCountsOnlyASlowdownThatIsSignificantInTheWorseDirection) {
  // The median beyond its limit (0.6 against 0.55 x 1.05) while most pairs rank the new run's
  // steps faster: significant, but not a slowdown.
  std::vector<double> a, b;
  for (int i = 0; i < 25; ++i) {
    a.push_back(0.1);
    a.push_back(1.0);
  }
  for (int i = 0; i < 30; ++i) b.push_back(0.6);
  for (int i = 0; i < 20; ++i) b.push_back(0.01);
  const GateResult r = one("step_time:+5%", {make(a, 0.55)}, make(b, 0.6));
  EXPECT_TRUE(r.parts[0].beyond);
  ASSERT_TRUE(r.test.has_value());
  EXPECT_LT(r.test->p_value, 0.05);
  EXPECT_EQ(r.outcome, GateOutcome::kPass) << r.message;
  EXPECT_NE(r.message.find(", but the new run's steps rank faster"), std::string::npos)
      << r.message;
}

TEST(GateReview2, TimeToFirstStepIsTheFirstProcesssForAResumedRun) {
  const report::Report base = make(constant(1.0), 1.0);
  report::Report resumed = base;
  resumed.segments.resize(2);
  resumed.segments[0].time_to_first_step_seconds = 11.0;
  resumed.segments[1].time_to_first_step_seconds = 11.0;
  resumed.time_to_first_step_seconds = 22.0;
  const GateResult r = one("time_to_first_step:+20%", {base}, resumed);
  EXPECT_EQ(r.outcome, GateOutcome::kPass) << r.message;
  EXPECT_EQ(*r.parts[0].current, 11.0);
}

TEST(GateReview2, APartialRunsFiguresCannotDecide) {
  const report::Report base = make(constant(1.0), 1.0);
  report::Report stopped = base;
  stopped.status = "interrupted";
  stopped.summary.mean_last_losses = 2.5;
  const GateResult r = one("final_loss:+0.02", {base}, stopped);
  EXPECT_EQ(r.outcome, GateOutcome::kNotMeasured);
  EXPECT_EQ(r.message.rfind("the new run did not complete (status interrupted): its figures are "
                            "a partial run's; smoothed final loss",
                            0),
            0u)
      << r.message;
}

TEST(GateReview2, ALimitTheSpreadPushesBelowZeroCannotDecide) {
  report::Report a = make(constant(1.0), 1.0), b = a, c = a;
  a.summary.tokens_per_second_real = 100.0;
  b.summary.tokens_per_second_real = 1000.0;
  c.summary.tokens_per_second_real = 2000.0;
  report::Report now = a;
  now.summary.tokens_per_second_real = 10.0;
  const GateResult r = one("tokens_per_second:-5%", {a, b, c}, now);
  EXPECT_EQ(r.outcome, GateOutcome::kTooFewSamples) << r.message;
  EXPECT_NE(r.message.find("too noisy to decide"), std::string::npos);
}

}  // namespace
}  // namespace ftbench::compare
