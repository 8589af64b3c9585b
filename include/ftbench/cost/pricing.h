// A measured run priced: the offer chosen for it (a rate given, an offer named, else the
// catalog's default), and the same run at every catalog offer of its GPU, cheapest first. What
// `ftbench cost` prints; how offers are named, flagged and picked by default, for every command.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ftbench/cost/billing.h"
#include "ftbench/cost/catalog.h"
#include "ftbench/cost/estimate.h"
#include "ftbench/error.h"
#include "ftbench/report/report.h"

namespace ftbench::cost {

// A run that cannot be priced as asked: no offer to price it at, or figures the estimate refuses.
class PricingError : public BadInput {
 public:
  using BadInput::BadInput;
};

// "reference-run/H100-SXM/on-demand", with " (us-east-1, p5.48xlarge)" when the offer names a
// region or an instance type, so that offers of one provider stay apart.
std::string offer_name(const Offer& offer);

// "reference-run/H100-SXM/on-demand": what --offer takes.
std::string offer_selector(const Offer& offer);

// A rate from a catalog offer, labelled by offer_name().
Rate rate_from_offer(const Offer& offer);

// "stale (123 days)", "dated after today", "undated", "billing not stated", joined by "; ".
std::string offer_flags(const Offer& offer, const Date& today, int64_t max_age_days);

// The offer used when no price is given: the cheapest on-demand offer of `gpu` whose billing is
// stated, else the cheapest on-demand one, else nullptr (spot, reserved and marketplace prices
// are never picked silently).
const Offer* default_offer(const Catalog& catalog, const Gpu* gpu);

// How large a job to project the run to; the amount is a count > 0.
enum class ProjectionUnit { kNone, kTokens, kExamples, kEpochs };

// What to price a run at.
struct PricingRequest {
  std::optional<Rate> rate;      // --rate: used as given
  const Offer* offer = nullptr;  // --offer: an offer of the catalog passed to price_run()
  std::optional<int64_t> gpus;   // GPUs billed for, default the report's world size
  ProjectionUnit projection_unit = ProjectionUnit::kNone;
  double projection_amount = 0.0;
  Date today;  // for the offers' ages
  int64_t max_age_days = 90;
};

// One offer (or the given rate) priced for the run.
struct PricedOffer {
  const Offer* offer = nullptr;  // nullptr for a given rate
  Rate rate;
  Cost cost;
  std::optional<Projection> projection;
  std::string flags;  // offer_flags(), and "pays for N GPUs, uses M"
  bool chosen = false;
};

struct RunPricing {
  RunTimes times;
  const Gpu* gpu = nullptr;  // whose offers are listed: the report's, else the offer's
  std::optional<double> projected_tokens;
  PricedOffer chosen;
  std::vector<PricedOffer> offers;  // every catalog offer of `gpu`, cheapest for this run first
};

// The run priced as `request` says. Throws PricingError when there is no price (no rate, no
// offer and no on-demand offer of the run's GPU: the message names the cheapest other offer)
// or when the report's figures cannot be priced.
RunPricing price_run(const report::Report& report, const Catalog& catalog,
                     const PricingRequest& request);

}  // namespace ftbench::cost
