// `ftbench plan`'s arithmetic (plan/plan.h), exact against figures worked by hand: what fits, the
// time of a job from a datasheet peak, each offer's bill, the recommendation under a deadline and
// a budget, the break-even rate and the expected bill of a spot offer.
#include "ftbench/plan/plan.h"

#include <cmath>

#include <gtest/gtest.h>

#include "ftbench/data/synthetic_dataset.h"
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
      "data: {seq_len: 128, max_tokens: 128, length_distribution: fixed}\n"
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

TEST(Plan, SyntheticRowsPadToTheirExpectedLongest) {
  spec::DataSpec d;
  d.seq_len = 128;
  d.source = "synthetic";
  d.padding = "longest";
  d.length_distribution = "uniform";
  d.min_tokens = 2;
  d.max_tokens = 4;
  // Lengths 2, 3, 4 equally likely; the longer of two: 2 (1/9), 3 (3/9), 4 (5/9).
  EXPECT_DOUBLE_EQ(expected_padded_length(d, 2), 31.0 / 9.0);
  EXPECT_DOUBLE_EQ(expected_padded_length(d, 1), 3.0);
  d.length_distribution = "fixed";
  EXPECT_EQ(expected_padded_length(d, 2), 4.0);
  d.padding = "max_length";
  EXPECT_EQ(expected_padded_length(d, 2), 128.0);
  d.padding = "longest";
  d.length_distribution = "lognormal";
  d.min_tokens = 2;
  d.max_tokens = 128;
  d.lognormal_median_tokens = 64;
  d.lognormal_sigma = 0.5;
  // Against the generator itself (data/synthetic_dataset.h): the mean length of 40,000 examples
  // and the mean longest of 5,000 groups of 8, within 1 %.
  for (const int64_t rows : {int64_t{1}, int64_t{8}}) {
    for (const char* distribution : {"lognormal", "uniform"}) {
      d.length_distribution = distribution;
      double sum = 0.0;
      const int64_t groups = 40000 / rows;
      for (int64_t g = 0; g < groups; ++g) {
        int64_t longest = 0;
        for (int64_t i = 0; i < rows; ++i) {
          longest = std::max(longest, data::synthetic_example_length(d, g * rows + i));
        }
        sum += static_cast<double>(longest);
      }
      const double simulated = sum / static_cast<double>(groups);
      EXPECT_NEAR(expected_padded_length(d, rows) / simulated, 1.0, 0.01)
          << distribution << ", " << rows << " rows";
    }
  }
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
  EXPECT_EQ(late.recommendation,
            "none of the 4 offers qualifies: 1 do not fit, 4 may miss the deadline, 1 are spot "
            "offers whose reclaims are not priced");
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

TEST(Plan, ASpotOffersOwnReclaimRateIsUsedUnlessTheFlagGivesOne) {
  cost::Catalog c = catalog();
  for (cost::Offer& o : c.offers) {
    if (o.tier == cost::kSpot) o.preemptions_per_hour = 0.5;
  }
  PlanRequest r = request();
  const Plan p = make_plan(r, c, kToday);
  ASSERT_TRUE(offer(p, "cheap-spot").spot);
  EXPECT_NEAR(offer(p, "cheap-spot").spot->mean_seconds_between, 7200.0, 1e-9);
  r.preemptions_per_hour = 2.0;  // the flag wins
  EXPECT_NEAR(offer(make_plan(r, c, kToday), "cheap-spot").spot->mean_seconds_between, 1800.0,
              1e-9);
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
  EXPECT_EQ(small.note,
            "does not fit on up to 8 GPUs (a split base takes a GPU count that divides "
            "train.grad_accum_steps, 2)");
}

TEST(Plan, GivenGpusAreCheckedForMemoryAndForTheAccumulationTheyShare) {
  PlanRequest r = request();
  r.gpus = 3;  // train.grad_accum_steps is 2: ftbench run refuses 3 ranks
  const Plan p = make_plan(r, catalog(), kToday);
  const OfferPlan& fast = offer(p, "fast");
  EXPECT_FALSE(fast.fits);
  EXPECT_NE(fast.flags.find("ftbench run needs train.grad_accum_steps (2) to be a multiple of the "
                            "GPUs (3)"),
            std::string::npos)
      << fast.flags;
  r.gpus = 2;  // 10 MB cards: not even split in two
  const Plan two = make_plan(r, catalog(), kToday);
  const OfferPlan& tiny = offer(two, "tiny-card");
  EXPECT_FALSE(tiny.fits);
  EXPECT_NE(tiny.flags.find("does not fit on 2 GPU(s)"), std::string::npos) << tiny.flags;
}

TEST(Plan, AJobThatNeedsCheckpointingIsTimedWithTheRecomputedForward) {
  const PlanRequest r = request();
  // A card between the spec's needs with and without checkpointing.
  MemoryOptions o;
  o.prefetched_batches = r.spec.train.grad_accum_steps;
  const double whole = device_bytes_needed(estimate_memory(r.spec, o), default_gpu_overheads());
  o.activation_checkpointing = true;
  const double recompute = device_bytes_needed(estimate_memory(r.spec, o), default_gpu_overheads());
  ASSERT_LT(recompute, whole);
  cost::Catalog c = catalog();
  c.gpus[1].memory_gb = (whole + recompute) / 2 / 0.9 / 1e9;
  const Plan p = make_plan(r, c, kToday);
  const OfferPlan& card = offer(p, "tiny-card");
  EXPECT_TRUE(card.fits);
  EXPECT_NE(card.flags.find("needs activation checkpointing"), std::string::npos);
  const model::ParamCounts counts = model::count_parameters(r.spec.model, r.spec.lora);
  EXPECT_EQ(card.time.flops_per_token,
            model::training_flops_per_token(r.spec.model, counts, 128,
                                            model::FlopFormula::kLoraFrozenBase, true));
}

report::Report measured_on(const std::string& device, const std::string& dtype, double tflops) {
  report::Report rep;
  rep.environment.device.name = device;
  rep.spec = {{"model", {{"dtype", dtype}, {"activation_checkpointing", false}}}};
  rep.summary.mfu.push_back({"lora_frozen_base", false, 1e12, tflops, std::nullopt});
  return rep;
}

TEST(Plan, AReportItCannotUseIsRefusedNamingWhy) {
  PlanRequest r = request();
  r.from_report_path = "r.json";
  const auto error = [&](const report::Report& rep) {
    r.from_report = rep;
    try {
      check_sources(r);
    } catch (const PlanError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(measured_on("cpu", "bf16", 0.1)),
            "--from-report r.json: the run's device \"cpu\" is not a GPU of the datasheets "
            "(configs/gpus.yaml): its throughput cannot be held against a GPU's");
  EXPECT_EQ(error(measured_on("NVIDIA H100 80GB HBM3", "fp32", 100)),
            "--from-report r.json: the run trained in \"fp32\", the spec in \"bf16\"");
  EXPECT_EQ(error(measured_on("NVIDIA H100 80GB HBM3", "bf16", 0)),
            "--from-report r.json: no measured throughput (summary.mfu has no lora_frozen_base "
            "entry above 0 TFLOP/s: no measured steps?)");
  EXPECT_EQ(error(measured_on("NVIDIA H100 80GB HBM3", "bf16", 1200)),
            "--from-report r.json: 1200.0 TFLOP/s per GPU is above the H100-SXM's dense bf16 peak "
            "of 989 TFLOP/s: not a plausible measurement");
  EXPECT_EQ(error(measured_on("NVIDIA H100 80GB HBM3", "bf16", 400)), "no error");
}

TEST(Plan, AReportOfTheGpuIsMeasuredAndOtherGpusAreScaledByTheirPeaks) {
  PlanRequest r = request();
  r.from_report = measured_on("NVIDIA H100 80GB HBM3", "bf16", 400);
  r.from_report_path = "r.json";
  const cost::Catalog c = cost::builtin_catalog();
  const TimeEstimate h100 = estimate_time(r, *cost::find_gpu(c, "H100"), 1);
  EXPECT_TRUE(h100.measured);
  EXPECT_EQ(h100.tflops_low, 400.0);
  const TimeEstimate mi300x = estimate_time(r, *cost::find_gpu(c, "MI300X"), 1);
  EXPECT_FALSE(mi300x.measured);
  EXPECT_DOUBLE_EQ(mi300x.tflops_high, 400.0 * 1307.4 / 989);
  EXPECT_DOUBLE_EQ(mi300x.tflops_low, 0.8 * 400.0 * 1307.4 / 989);
}

TEST(Plan, AnOfferOfAGpuWithoutADatasheetIsListedNotPlanned) {
  cost::Catalog c = catalog();
  cost::Offer o = c.offers[0];
  o.provider = "mystery";
  o.gpu = "RTX-9090";
  c.offers.push_back(o);
  const Plan p = make_plan(request(), c, kToday);
  const OfferPlan& mystery = offer(p, "mystery");
  EXPECT_FALSE(mystery.fits);
  EXPECT_FALSE(mystery.timed);
  EXPECT_EQ(p.offers.back().offer.provider, "mystery");  // ranked last
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
                       "--gpu: no datasheet for a GPU \"H900\" (configs/gpus.yaml and --catalog "
                       "files' gpus: sections; ftbench catalog lists the GPUs offered)");
          throw;
        }
      },
      PlanError);
}

}  // namespace
}  // namespace ftbench::plan
