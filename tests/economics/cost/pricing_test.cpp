// A run priced at a catalog: the default offer, the offers cheapest first, the flags, the
// projection, and the errors. Exact values: one hour of one GPU at whole-dollar prices.
#include "economics/cost/pricing.h"

#include <string>

#include <gtest/gtest.h>

namespace ftbench::cost {
namespace {

Offer offer_of(const std::string& provider, const std::string& tier, double usd, Billing billing,
               int64_t gpus_per_instance = 1) {
  Offer o;
  o.provider = provider;
  o.gpu = "G1";
  o.tier = tier;
  o.usd_per_gpu_hour = usd;
  o.billing = billing;
  o.gpus_per_instance = gpus_per_instance;
  o.source = "test";
  o.date = Date{2026, 11, 1};
  return o;
}

Catalog catalog() {
  Catalog c;
  Gpu g;
  g.name = "G1";
  g.aliases = {"Test GPU One"};
  c.gpus.push_back(g);
  c.offers.push_back(offer_of("a", "on-demand", 3.0, Billing::kPerSecond));
  c.offers.push_back(offer_of("b", "on-demand", 2.0, Billing::kUnknown));
  c.offers.push_back(offer_of("c", "spot", 1.0, Billing::kPerSecond));
  c.offers.push_back(offer_of("d", "on-demand", 2.5, Billing::kPerSecond, 8));
  return c;
}

// One hour on one GPU: 100 steps of 1000 tokens, 2 epochs.
report::Report one_hour_report(const std::string& device = "Test GPU One") {
  report::Report r;
  r.environment.device.name = device;
  report::Phase p;
  p.name = "train";
  p.start_seconds = 0.0;
  p.seconds = 3600.0;
  r.phases.push_back(p);
  for (int i = 0; i < 100; ++i) {
    report::StepRecord s;
    s.wall_seconds = 30.0;
    s.real_tokens = 1000;
    r.steps.push_back(s);
  }
  r.derived.steps_per_epoch = 50;
  r.derived.effective_batch = 4;
  r.world_size = 1;
  r.summary.tokens_per_second_real = 1000.0;
  return r;
}

PricingRequest request() {
  PricingRequest q;
  q.today = Date{2026, 12, 1};
  return q;
}

TEST(Pricing, OfferNamesAndSelectors) {
  Offer o = offer_of("aws", "on-demand", 1.0, Billing::kPerSecond);
  EXPECT_EQ(offer_name(o), "aws/G1/on-demand");
  o.region = "us-east-1";
  EXPECT_EQ(offer_name(o), "aws/G1/on-demand (us-east-1)");
  o.instance_type = "p5.48xlarge";
  EXPECT_EQ(offer_name(o), "aws/G1/on-demand (us-east-1, p5.48xlarge)");
  EXPECT_EQ(offer_selector(o), "aws/G1/on-demand");
  EXPECT_EQ(rate_from_offer(o).label, "aws/G1/on-demand (us-east-1, p5.48xlarge)");
}

TEST(Pricing, OfferFlags) {
  Offer o = offer_of("a", "on-demand", 1.0, Billing::kUnknown);
  EXPECT_EQ(offer_flags(o, Date{2026, 12, 1}, 90), "billing not stated");
  EXPECT_EQ(offer_flags(o, Date{2026, 12, 1}, 10), "stale (30 days); billing not stated");
  EXPECT_EQ(offer_flags(o, Date{2026, 10, 1}, 90), "dated after today; billing not stated");
  o.date.reset();
  o.billing = Billing::kPerHour;
  EXPECT_EQ(offer_flags(o, Date{2026, 12, 1}, 90), "undated");
}

TEST(Pricing, TheDefaultsAreTheOnDemandOffersWithStatedBilling) {
  Catalog c = catalog();
  // d (2.5 a GPU-hour) and a (3.0): b (2.0) does not state its billing, c is spot.
  std::vector<const Offer*> picks = default_candidates(c, find_gpu(c, "G1"));
  ASSERT_EQ(picks.size(), 2u);
  EXPECT_EQ(picks[0]->provider, "d");
  EXPECT_EQ(picks[1]->provider, "a");
  EXPECT_TRUE(default_candidates(c, nullptr).empty());
  // None states its billing: every on-demand offer.
  for (Offer& o : c.offers) o.billing = Billing::kUnknown;
  picks = default_candidates(c, find_gpu(c, "G1"));
  ASSERT_EQ(picks.size(), 3u);
  EXPECT_EQ(picks[0]->provider, "b");
}

TEST(Pricing, EveryOfferCheapestForThisRunFirst) {
  const Catalog c = catalog();
  const RunPricing p = price_run(one_hour_report(), c, request());
  ASSERT_NE(p.gpu, nullptr);
  EXPECT_EQ(p.gpu->name, "G1");
  ASSERT_EQ(p.offers.size(), 4u);
  // d bills 8 GPUs of its instance: 8 x 2.5 = 20 dollars, the dearest for this run.
  EXPECT_EQ(p.offers[0].offer->provider, "c");
  EXPECT_EQ(p.offers[1].offer->provider, "b");
  EXPECT_EQ(p.offers[2].offer->provider, "a");
  EXPECT_EQ(p.offers[3].offer->provider, "d");
  EXPECT_DOUBLE_EQ(p.offers[3].cost.billed_usd, 20.0);
  EXPECT_EQ(p.offers[3].flags, "pays for 8 GPUs, uses 1");
  EXPECT_EQ(p.offers[1].flags, "billing not stated");
  // The default for this run is the on-demand offer with stated billing that costs it least:
  // a (3 dollars), not d, cheaper per GPU-hour but 20 dollars on its 8-GPU instance.
  EXPECT_EQ(p.chosen.offer->provider, "a");
  EXPECT_TRUE(p.chosen.chosen);
  EXPECT_TRUE(p.offers[2].chosen);
  EXPECT_FALSE(p.offers[3].chosen);
  EXPECT_EQ(p.choice,
            "the catalog's on-demand offers of G1 with stated billing, cheapest for this run: "
            "a/G1/on-demand ($3.00), then d/G1/on-demand (8 GPUs an instance) ($20.00)");
  EXPECT_EQ(p.times.steps, 100);
  EXPECT_FALSE(p.projected_tokens.has_value());
}

// A provider with one GPU at $0.987 and an 8-GPU instance at $0.8975 per GPU-hour ($7.18 an
// instance-hour), both on demand, both billed by the second.
Catalog one_and_eight() {
  Catalog c = catalog();
  c.offers.push_back(offer_of("acme", "on-demand", 0.987, Billing::kPerSecond));
  c.offers.push_back(offer_of("acme", "on-demand", 0.8975, Billing::kPerSecond, 8));
  c.offers.back().instance_type = "8x";
  return c;
}

TEST(Pricing, AnOfferOfSeveralShapesIsTheOneThatCostsThisRunLeastAndSaysWhy) {
  const Catalog c = one_and_eight();
  PricingRequest q = request();
  q.offers = resolve_offers(c, "acme/G1");
  q.offer_text = "acme/G1";
  ASSERT_EQ(q.offers.size(), 2u);
  // One GPU for an hour: $0.987 on the 1-GPU offer, $7.18 on the 8-GPU instance.
  const RunPricing one = price_run(one_hour_report(), c, q);
  ASSERT_NE(one.chosen.offer, nullptr);
  EXPECT_EQ(one.chosen.offer->gpus_per_instance, 1);
  EXPECT_DOUBLE_EQ(one.chosen.cost.billed_usd, 0.987);
  EXPECT_EQ(one.choice,
            "--offer acme/G1 matches 2 on-demand offers; cheapest for this run: acme/G1/on-demand "
            "($0.987), then acme/G1/on-demand (8x) ($7.18)");
  // Without an instance type, the size tells the two apart.
  Catalog unnamed = one_and_eight();
  unnamed.offers.back().instance_type.clear();
  q.offers = resolve_offers(unnamed, "acme/G1");
  EXPECT_EQ(price_run(one_hour_report(), unnamed, q).choice,
            "--offer acme/G1 matches 2 on-demand offers; cheapest for this run: acme/G1/on-demand "
            "($0.987), then acme/G1/on-demand (8 GPUs an instance) ($7.18)");
  // The offers table ranks the same offer first among acme's.
  for (const PricedOffer& o : one.offers) {
    if (o.offer->provider == "acme") {
      EXPECT_EQ(o.chosen, o.offer->gpus_per_instance == 1);
    }
  }
  // Eight GPUs for an hour: the instance ($7.18) beats eight single GPUs ($7.896).
  q.gpus = 8;
  const RunPricing eight = price_run(one_hour_report(), c, q);
  EXPECT_EQ(eight.chosen.offer->gpus_per_instance, 8);
  EXPECT_DOUBLE_EQ(eight.chosen.cost.billed_usd, 7.18);
  // One match: nothing to explain.
  q.offers = resolve_offers(c, "a/G1");
  EXPECT_EQ(price_run(one_hour_report(), c, q).choice, "");
}

TEST(Pricing, AProjectionChoosesAndRanksByTheProjectedJob) {
  // X: $0.90 with a 4-hour minimum; Y: $1.00. The one-hour run costs $3.60 at X and $1.00 at Y;
  // the projected job (36M tokens at 1,000 a second, plus the run's 3,500 s fixed: 39,500 s)
  // $9.875 at X and $10.97 at Y.
  Catalog c = catalog();
  c.offers.push_back(offer_of("acme", "on-demand", 0.90, Billing::kPerSecond));
  c.offers.back().min_billed_seconds = 4 * 3600;
  c.offers.back().region = "x";
  c.offers.push_back(offer_of("acme", "on-demand", 1.00, Billing::kPerSecond));
  c.offers.back().region = "y";
  PricingRequest q = request();
  q.offers = resolve_offers(c, "acme/G1");
  q.offer_text = "acme/G1";
  const RunPricing run = price_run(one_hour_report(), c, q);
  EXPECT_EQ(run.chosen.offer->region, "y");
  q.projection_unit = ProjectionUnit::kTokens;
  q.projection_amount = 3.6e7;
  const RunPricing job = price_run(one_hour_report(), c, q);
  EXPECT_EQ(job.chosen.offer->region, "x");
  EXPECT_DOUBLE_EQ(job.chosen.projection->cost.billed_usd, 39500.0 / 3600.0 * 0.90);
  EXPECT_EQ(job.choice,
            "--offer acme/G1 matches 2 on-demand offers; cheapest for the projected job: "
            "acme/G1/on-demand (x) ($9.88), then acme/G1/on-demand (y) ($10.97)");
  // The table follows the same ranking: x before y.
  std::vector<std::string> acme;
  for (const PricedOffer& o : job.offers) {
    if (o.offer->provider == "acme") acme.push_back(o.offer->region);
  }
  EXPECT_EQ(acme, (std::vector<std::string>{"x", "y"}));
}

TEST(Pricing, AnOfferNamingOffersWithAndWithoutStatedBillingWeighsTheStatedOnes) {
  Catalog c = catalog();
  c.offers.push_back(offer_of("acme", "on-demand", 1.00, Billing::kPerMinute));
  c.offers.push_back(offer_of("acme", "on-demand", 0.50, Billing::kUnknown));
  c.offers.back().region = "somewhere";
  PricingRequest q = request();
  q.offers = resolve_offers(c, "acme/G1");
  q.offer_text = "acme/G1";
  const RunPricing p = price_run(one_hour_report(), c, q);
  EXPECT_EQ(p.chosen.offer->billing, Billing::kPerMinute);
  EXPECT_EQ(p.choice,
            "--offer acme/G1 matches 2 on-demand offers, 1 with stated billing; cheapest for this "
            "run: acme/G1/on-demand ($1.00)");
}

TEST(Pricing, AGivenRateIsChosenAndNoOfferIsMarked) {
  const Catalog c = catalog();
  PricingRequest q = request();
  Rate r;
  r.usd_per_gpu_hour = 4.0;
  r.billing = Billing::kPerHour;
  r.label = "--rate 4";
  q.rate = r;
  q.gpus = 2;
  const RunPricing p = price_run(one_hour_report(), c, q);
  EXPECT_EQ(p.chosen.offer, nullptr);
  EXPECT_EQ(p.chosen.rate.label, "--rate 4");
  EXPECT_DOUBLE_EQ(p.chosen.cost.billed_usd, 8.0);  // 1 h x 2 GPUs x 4
  for (const PricedOffer& o : p.offers) EXPECT_FALSE(o.chosen);
}

TEST(Pricing, ANamedOfferOfAnUnknownDeviceListsItsGpusOffers) {
  const Catalog c = catalog();
  PricingRequest q = request();
  q.offers = {&c.offers[0]};
  const RunPricing p = price_run(one_hour_report("some other card"), c, q);
  ASSERT_NE(p.gpu, nullptr);
  EXPECT_EQ(p.gpu->name, "G1");
  EXPECT_EQ(p.chosen.offer, &c.offers[0]);
  EXPECT_DOUBLE_EQ(p.chosen.cost.billed_usd, 3.0);
  EXPECT_EQ(p.offers.size(), 4u);
}

TEST(Pricing, ProjectionsByTokensExamplesAndEpochs) {
  const Catalog c = catalog();
  PricingRequest q = request();
  q.projection_unit = ProjectionUnit::kTokens;
  q.projection_amount = 5e5;
  EXPECT_DOUBLE_EQ(*price_run(one_hour_report(), c, q).projected_tokens, 5e5);
  q.projection_unit = ProjectionUnit::kExamples;
  q.projection_amount = 800;  // 400 examples hold 100'000 tokens: 250 tokens each
  EXPECT_DOUBLE_EQ(*price_run(one_hour_report(), c, q).projected_tokens, 2e5);
  q.projection_unit = ProjectionUnit::kEpochs;
  q.projection_amount = 3;  // 2 epochs hold 100'000 tokens
  const RunPricing p = price_run(one_hour_report(), c, q);
  EXPECT_DOUBLE_EQ(*p.projected_tokens, 1.5e5);
  ASSERT_TRUE(p.chosen.projection.has_value());
  EXPECT_DOUBLE_EQ(p.chosen.projection->tokens, 1.5e5);
}

TEST(Pricing, NoPriceNamesTheCheapestOtherOffer) {
  Catalog c = catalog();
  c.offers.erase(c.offers.begin());  // a
  c.offers.pop_back();               // d: only b (billing unknown) and c (spot) are left
  c.offers[0].tier = "reserved";
  try {
    price_run(one_hour_report(), c, request());
    FAIL() << "expected PricingError";
  } catch (const PricingError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no price: the catalog has no on-demand offer for device \"Test GPU One\" (it has "
              "2 other offers; cheapest for this run: --offer c/G1/spot); give --rate "
              "USD_PER_GPU_HOUR [--billing per-second|per-minute|per-hour] or --offer "
              "PROVIDER/GPU[/TIER]");
    EXPECT_EQ(e.exit_code(), ExitCode::kBadInput);
  }
}

TEST(Pricing, AReportWithoutPhasesIsAPricingError) {
  report::Report r = one_hour_report();
  r.phases.clear();
  EXPECT_THROW(price_run(r, catalog(), request()), PricingError);
}

}  // namespace
}  // namespace ftbench::cost
