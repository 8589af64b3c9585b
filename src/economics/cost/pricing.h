// A measured run priced: the offer chosen for it (a rate given, an offer named, else the
// catalog's default), and the same run at every catalog offer of its GPU, cheapest first. What
// `ftbench cost` prints; how offers are named, flagged and picked by default, for every command.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "economics/cost/billing.h"
#include "economics/cost/catalog.h"
#include "economics/cost/estimate.h"
#include "report/report.h"
#include "util/error.h"

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

// "$2.97/GPU-h, per-minute billing, 60 s minimum".
std::string describe_rate(const Rate& rate);

// A rate from a catalog offer, labelled by offer_name().
Rate rate_from_offer(const Offer& offer);

// "stale (123 days)", "dated after today", "undated", "billing not stated", joined by "; ".
std::string offer_flags(const Offer& offer, const Date& today, int64_t max_age_days);

// The offers a run is priced at when no price is given: the on-demand offers of `gpu` whose
// billing is stated, else every on-demand one, cheapest per GPU-hour first; none for a null
// `gpu` (spot, reserved and marketplace prices are never picked silently). Which one is taken
// depends on the run: cheapest_for_run().
std::vector<const Offer*> default_candidates(const Catalog& catalog, const Gpu* gpu);

// Of `candidates`, the offer a run of `times` costs least at: its GPUs on whole instances, each
// offer's billing increment and minimum, the projected job when `projected_tokens` is given;
// ties keep the candidates' order. `ranked` holds each candidate's billed dollars, cheapest
// first. An empty `candidates` gives a null offer.
struct OfferChoice {
  const Offer* offer = nullptr;
  std::vector<std::pair<const Offer*, double>> ranked;
};
OfferChoice cheapest_for_run(const RunTimes& times, const std::vector<const Offer*>& candidates,
                             std::optional<double> projected_tokens = std::nullopt);

// "a/G/on-demand ($3.00), then d/G/on-demand (8x) ($20.00)": the two cheapest of a choice.
std::string describe_choice(const OfferChoice& choice);

// How large a job to project the run to; the amount is a count > 0.
enum class ProjectionUnit { kNone, kTokens, kExamples, kEpochs };

// What to price a run at.
struct PricingRequest {
  std::optional<Rate> rate;  // --rate: used as given
  // --offer: the offers it names (resolve_offers(), of the catalog passed to price_run()); the
  // run is priced at the one that costs it least. `offer_text` is the flag's value.
  std::vector<const Offer*> offers;
  std::string offer_text;
  std::optional<int64_t> gpus;  // GPUs billed for, default the report's world size
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
  // Why `chosen` among several offers (--offer matching several, or the default's candidates):
  // the two cheapest for this run. "" when there was no choice.
  std::string choice;
  std::vector<PricedOffer> offers;  // every catalog offer of `gpu`, cheapest for this run first
};

// The run priced as `request` says. Throws PricingError when there is no price (no rate, no
// offer and no on-demand offer of the run's GPU: the message names the cheapest other offer)
// or when the report's figures cannot be priced.
RunPricing price_run(const report::Report& report, const Catalog& catalog,
                     const PricingRequest& request);

}  // namespace ftbench::cost
