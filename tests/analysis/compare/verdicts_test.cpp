// The sentences of `ftbench compare`, exact: time, step-time test, cost, who is faster and
// cheaper, the break-even rate, and what is said when a figure is missing.
#include "analysis/compare/verdicts.h"

#include <gtest/gtest.h>

namespace ftbench::compare {
namespace {

Column column(const std::string& label, const std::string& gpu, double run_seconds,
              std::optional<double> usd) {
  Column c;
  c.label = label;
  c.gpu = gpu;
  c.times.run_seconds = run_seconds;
  if (usd) {
    cost::Rate r;
    r.usd_per_gpu_hour = 2.0;
    c.rate = r;
    cost::Cost k;
    k.billed_usd = *usd;
    c.cost = k;
  }
  return c;
}

TEST(Verdicts, PValueText) {
  EXPECT_EQ(p_value_text(0.0004), "p < 0.001");
  EXPECT_EQ(p_value_text(0.04), "p = 0.040");
}

TEST(Verdicts, Significance) {
  stats::MannWhitneyResult t;
  t.n1 = 5;
  t.n2 = 6;
  t.u1 = 3;
  t.p_value = 0.03;
  t.too_few_samples = true;
  EXPECT_EQ(significance(t, 0.05),
            "Mann-Whitney U 3, p = 0.030: significant at 0.05 (only 5 and 6 measured steps; 9 "
            "or more each give the test power)");
  t.too_few_samples = false;
  EXPECT_EQ(significance(t, 0.01), "Mann-Whitney U 3, p = 0.030: not significant at 0.01");
}

TEST(Verdicts, SlowerAndDearerWithABreakEvenRate) {
  Column a = column("A", "H100", 1080, 0.90);
  Column b = column("B", "MI300X", 2040, 1.36);
  b.cost_ratio = 1.36 / 0.90;
  b.step_p50_change = 0.5;
  b.break_even_usd_per_gpu_hour = 1.32;
  const std::vector<std::string> v = verdicts({a, b}, 0.05);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0],
            "B (MI300X) vs A (H100): took 1.89x as long (34.0 min vs 18.0 min); step time p50 "
            "+50.0%; cost $1.36 vs $0.900 (+51.1%). A is faster and cheaper. B would cost the "
            "same as A at $1.32/GPU-h (its rate: $2.00/GPU-h).");
}

// Two identical ci-tiny runs differed by -52.4 % at p = 0.002: steps within one run are not
// independent samples of the run-to-run variation, so that p says nothing of a rerun.
TEST(Verdicts, AStepTestWithinOneRunPerSideIsNotCalledSignificant) {
  Column a = column("A", "cpu", 100, std::nullopt);
  Column b = column("B", "cpu", 100, std::nullopt);
  b.step_p50_change = -0.524;
  stats::MannWhitneyResult t;
  t.n1 = 9;
  t.n2 = 9;
  t.u1 = 8;
  t.p_value = 0.002;
  b.step_test = t;
  const std::vector<std::string> v = verdicts({a, b}, 0.05);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0],
            "B (cpu) vs A (cpu): same total time (100.0 s vs 100.0 s); step time p50 -52.4% "
            "(Mann-Whitney U 8, p = 0.002 over the steps of one run each: steps within a run "
            "are not independent samples of the run-to-run variation, so this is no evidence "
            "that another run would differ; repeat each run to tell); no cost (give --rate or "
            "--offer per report, or add catalog offers for the GPU).");
  // A run with no step after its warm-up: said beside the step times.
  b.warmup_caveat =
      "no step is after the 5 warm-up steps, so the timed steps include the cold ones";
  EXPECT_NE(verdicts({a, b}, 0.05)[0].find("; B: no step is after the 5 warm-up steps, so the "
                                           "timed steps include the cold ones"),
            std::string::npos);
}

TEST(Verdicts, TimesWithinHalfAPercentAreTheSameAndNoCostIsSaid) {
  const std::vector<std::string> v =
      verdicts({column("A", "x", 1000, std::nullopt), column("B", "y", 1004, std::nullopt)}, 0.05);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0],
            "B (y) vs A (x): same total time (16.7 min vs 16.7 min); no measured steps to compare; "
            "no cost (give --rate or --offer per report, or add catalog offers for the GPU).");
}

TEST(Verdicts, ARunOfZeroSecondsHasNoRatio) {
  const std::vector<std::string> v =
      verdicts({column("A", "x", 0, 1.0), column("B", "y", 10, 1.0)}, 0.05);
  EXPECT_EQ(v[0].substr(0, 30), "B (y) vs A (x): took longer (1");
}

}  // namespace
}  // namespace ftbench::compare
