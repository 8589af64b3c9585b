// `ftbench plan`'s arithmetic (plan/plan.h), exact against figures worked by hand: what fits, the
// time of a job from a datasheet peak, each offer's bill, the recommendation under a deadline and
// a budget, the break-even rate and the expected bill of a spot offer.
#include "ftbench/plan/plan.h"

#include <cmath>

#include <gtest/gtest.h>

#include "ftbench/model/shape_math.h"
#include "ftbench/spec/spec_loader.h"

namespace ftbench::plan {
namespace {

// Two made-up GPUs and four offers, so that every figure below follows from this text alone.
constexpr const char* kCatalog = R"(
gpus:
  - name: BIG-80
    memory_gb: 80
    dense_tflops: {bf16: 1000}
    source: test
  - name: SMALL-1
    memory_gb: 0.01
    dense_tflops: {bf16: 500}
    source: test
offers:
  - {provider: fast, gpu: BIG-80, tier: on-demand, usd_per_gpu_hour: 3.6, billing: per-second,
     source: test, date: 2026-12-01}
  - {provider: hourly, gpu: BIG-80, tier: on-demand, usd_per_gpu_hour: 1.8, billing: per-hour,
     source: test, date: 2026-12-01}
  - {provider: cheap-spot, gpu: BIG-80, tier: spot, usd_per_gpu_hour: 1.2, billing: per-second,
     source: test, date: 2026-12-01}
  - {provider: tiny-card, gpu: SMALL-1, tier: on-demand, usd_per_gpu_hour: 0.5,
     billing: per-second, source: test, date: 2026-12-01}
)";

cost::Catalog catalog() { return cost::parse_catalog_yaml(kCatalog, "test-catalog.yaml"); }

PlanRequest request() {
  PlanRequest r;
  r.spec = spec::load_spec_from_string(
      "model: {preset: tiny, dtype: bf16}\n"
      "lora: {rank: 8, targets: [q, v]}\n"
      "data: {seq_len: 128, max_tokens: 128}\n"
      "train: {micro_batch_size: 4, grad_accum_steps: 2}\n",
      "tiny.yaml");
  r.tokens = 1e12;
  return r;
}

const cost::Date kToday{2026, 12, 4};

double flops_per_token(const spec::RunSpec& s) {
  return model::training_flops_per_token(s.model, model::count_parameters(s.model, s.lora),
                                         s.data.seq_len, model::FlopFormula::kLoraFrozenBase,
                                         false);
}

const OfferPlan& offer(const Plan& p, const std::string& provider) {
  for (const OfferPlan& o : p.offers) {
    if (o.offer.provider == provider) return o;
  }
  throw std::logic_error("no offer " + provider);
}

TEST(Plan, TimeFromTheDatasheetPeakIsARangeOfEfficiencies) {
  const PlanRequest r = request();
  const TimeEstimate t = estimate_time(r, catalog().gpus[0], 1);
  const double flops = 1e12 * flops_per_token(r.spec);
  EXPECT_EQ(t.tokens, 1e12);
  EXPECT_EQ(t.steps, 1e12 / (4 * 2 * 128));
  EXPECT_DOUBLE_EQ(t.training_seconds_low, flops / (1000e12 * 0.55));
  EXPECT_DOUBLE_EQ(t.training_seconds_high, flops / (1000e12 * 0.35));
  EXPECT_EQ(t.setup_seconds_low, 180.0);
  EXPECT_EQ(t.setup_seconds_high, 840.0);
  EXPECT_DOUBLE_EQ(t.run_seconds_high, 840.0 + flops / (1000e12 * 0.35));
  EXPECT_FALSE(t.measured);
  EXPECT_EQ(t.throughput_basis, "datasheet dense bf16 1000 TFLOP/s x 35-55 %");
}

TEST(Plan, SeveralGpusScaleByTheStatedEfficiency) {
  const PlanRequest r = request();
  const TimeEstimate one = estimate_time(r, catalog().gpus[0], 1);
  const TimeEstimate two = estimate_time(r, catalog().gpus[0], 2);
  EXPECT_DOUBLE_EQ(two.training_seconds_low, one.training_seconds_low / (2 * 0.90));
  EXPECT_DOUBLE_EQ(two.training_seconds_high, one.training_seconds_high / (2 * 0.80));
  EXPECT_EQ(scaling_efficiency(4), (std::pair<double, double>{0.70, 0.80}));
  EXPECT_EQ(scaling_efficiency(8), (std::pair<double, double>{0.60, 0.70}));
  EXPECT_EQ(scaling_efficiency(16), (std::pair<double, double>{0.50, 0.70}));
}

TEST(Plan, EachOfferIsBilledByItsRules) {
  const Plan p = make_plan(request(), catalog(), kToday);
  const OfferPlan& fast = offer(p, "fast");
  const OfferPlan& hourly = offer(p, "hourly");
  // Per second at $3.60/h: a dollar per 1,000 s, whole seconds.
  EXPECT_NEAR(fast.cost_high.billed_usd, std::ceil(fast.time.run_seconds_high) * 0.001, 1e-9);
  // Per hour at $1.80: whole hours.
  EXPECT_NEAR(hourly.cost_high.billed_usd, std::ceil(hourly.time.run_seconds_high / 3600) * 1.8,
              1e-9);
  EXPECT_FALSE(offer(p, "tiny-card").fits);  // 10 MB of memory
}

TEST(Plan, TheRecommendationIsTheCheapestThatFitsMeetsTheDeadlineAndTheBudget) {
  PlanRequest r = request();
  Plan p = make_plan(r, catalog(), kToday);
  const OfferPlan& fast = offer(p, "fast");
  // Without limits: the job takes under an hour at the slow end, so one billed hour at $1.80
  // beats per-second billing at $3.60 ($2.75); the spot offer is cheaper still but its reclaims
  // are not priced, so it is not recommended.
  ASSERT_LT(fast.time.run_seconds_high, 3600);
  ASSERT_TRUE(p.recommended);
  EXPECT_EQ(p.offers[*p.recommended].offer.provider, "hourly");
  EXPECT_TRUE(offer(p, "cheap-spot").risk_unpriced);
  // A budget under every bill leaves nothing.
  r.budget_usd = offer(p, "hourly").cost_high.billed_usd / 2;
  EXPECT_FALSE(make_plan(r, catalog(), kToday).recommended);
  // A deadline shorter than the slow end of the job leaves nothing either.
  r.budget_usd.reset();
  r.deadline_seconds = fast.time.run_seconds_high - 1;
  const Plan late = make_plan(r, catalog(), kToday);
  EXPECT_FALSE(late.recommended);
  EXPECT_EQ(late.recommendation, "no offer fits, meets the deadline and stays within the budget");
  // Break-even: the runner-up's rate at which it would bill what the recommended one does.
  r.deadline_seconds.reset();
  p = make_plan(r, catalog(), kToday);
  ASSERT_TRUE(p.break_even_usd_per_gpu_hour);
  const OfferPlan& second = p.offers[1];
  const double hours = second.offer.billing == cost::Billing::kPerHour
                           ? std::ceil(second.time.run_seconds_high / 3600)
                           : std::ceil(second.time.run_seconds_high) / 3600;  // whole seconds
  EXPECT_NEAR(*p.break_even_usd_per_gpu_hour, p.offers[0].cost_high.billed_usd / hours, 1e-9);
}

TEST(Plan, ASpotOfferCarriesTheExpectedBillOfItsReclaims) {
  PlanRequest r = request();
  r.preemptions_per_hour = 0.5;  // one reclaim every 2 hours on average
  r.spec.train.checkpoint.every_minutes = 30;
  const Plan p = make_plan(r, catalog(), kToday);
  const OfferPlan& spot = offer(p, "cheap-spot");
  ASSERT_TRUE(spot.spot);
  ASSERT_TRUE(spot.spot_expected_usd);
  const double w = spot.time.run_seconds_high;
  const double m = 7200.0;
  const double s = 1800.0;
  const double restart = 840.0;
  const double expected = (w / s) * (m + restart) * std::expm1(s / m);
  EXPECT_NEAR(*spot.spot->expected_seconds, expected, 1e-6 * expected);
  EXPECT_NEAR(spot.spot->p_at_least_one, -std::expm1(-w / m), 1e-12);
  EXPECT_NEAR(*spot.spot->optimal_interval_seconds, std::sqrt(2 * 5.0 * m), 1e-9);
  EXPECT_NEAR(*spot.spot_expected_usd, std::ceil(expected) * 1.2 / 3600, 1e-9);
  EXPECT_FALSE(offer(p, "fast").spot);  // on-demand offers have none
  // Priced, its expected bill ($1.16) is the cheapest: it is recommended.
  ASSERT_TRUE(p.recommended);
  EXPECT_EQ(p.offers[*p.recommended].offer.provider, "cheap-spot");
}

TEST(Plan, FitsSaysTheLargestMicroBatchAndWhatItTakesOtherwise) {
  const PlanRequest r = request();
  const GpuFit big = fit_on(r.spec, catalog().gpus[0], 0.10, 8);
  EXPECT_TRUE(big.fits);
  EXPECT_EQ(big.largest_micro_batch, 1024);  // the search's limit
  // 0.6 GB of context and workspaces alone exceed 10 MB.
  const GpuFit small = fit_on(r.spec, catalog().gpus[1], 0.10, 8);
  EXPECT_FALSE(small.fits);
  EXPECT_EQ(small.largest_micro_batch, 0);
  EXPECT_EQ(small.gpus_with_sharded_base, 0);
  EXPECT_EQ(small.note, "does not fit on up to 8 GPUs");
}

TEST(Plan, AnUnknownGpuIsRefusedByName) {
  PlanRequest r = request();
  r.gpu = "H900";
  EXPECT_THROW(
      {
        try {
          make_plan(r, catalog(), kToday);
        } catch (const PlanError& e) {
          EXPECT_STREQ(e.what(),
                       "--gpu: no GPU \"H900\" in the catalog (ftbench catalog lists them)");
          throw;
        }
      },
      PlanError);
}

}  // namespace
}  // namespace ftbench::plan
