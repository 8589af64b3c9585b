#include "economics/cost/pricing.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::cost {

std::string offer_name(const Offer& offer) {
  std::string name = offer_selector(offer);
  std::string where = offer.region;
  if (!offer.instance_type.empty()) where += (where.empty() ? "" : ", ") + offer.instance_type;
  return where.empty() ? name : name + " (" + where + ")";
}

std::string describe_rate(const Rate& rate) {
  std::string text = fmt::format("{}/GPU-h, ", text::format_usd(rate.usd_per_gpu_hour));
  text += rate.billing == Billing::kUnknown ? "billing not stated (billed = linear)"
                                            : to_string(rate.billing) + " billing";
  if (rate.min_billed_seconds > 0) text += fmt::format(", {} s minimum", rate.min_billed_seconds);
  if (rate.gpus_per_instance > 1) {
    text += fmt::format(", {} GPUs per instance", rate.gpus_per_instance);
  }
  return text;
}

std::string offer_selector(const Offer& offer) {
  return offer.provider + "/" + offer.gpu + "/" + offer.tier;
}

Rate rate_from_offer(const Offer& offer) {
  Rate rate;
  rate.usd_per_gpu_hour = offer.usd_per_gpu_hour;
  rate.billing = offer.billing;
  rate.min_billed_seconds = offer.min_billed_seconds;
  rate.gpus_per_instance = offer.gpus_per_instance;
  rate.label = offer_name(offer);
  rate.date = offer.date;
  rate.source = offer.source;
  return rate;
}

std::string offer_flags(const Offer& offer, const Date& today, int64_t max_age_days) {
  std::vector<std::string> flags;
  if (const auto age = age_days(offer, today)) {
    if (*age > max_age_days) flags.push_back(fmt::format("stale ({} days)", *age));
    if (*age < 0) flags.push_back("dated after today");
  } else {
    flags.push_back("undated");
  }
  if (offer.billing == Billing::kUnknown) flags.push_back("billing not stated");
  std::string out;
  for (const std::string& f : flags) out += (out.empty() ? "" : "; ") + f;
  return out;
}

std::vector<const Offer*> default_candidates(const Catalog& catalog, const Gpu* gpu) {
  if (gpu == nullptr) return {};
  std::vector<const Offer*> stated;
  std::vector<const Offer*> on_demand;
  for (const Offer* o : offers_for(catalog, gpu)) {
    if (o->tier != kOnDemand) continue;
    on_demand.push_back(o);
    if (o->billing != Billing::kUnknown) stated.push_back(o);
  }
  return stated.empty() ? on_demand : stated;
}

OfferChoice cheapest_for_run(const RunTimes& times, const std::vector<const Offer*>& candidates,
                             std::optional<double> projected_tokens) {
  OfferChoice choice;
  for (const Offer* o : candidates) {
    const Rate rate = rate_from_offer(*o);
    const double usd = projected_tokens ? project(times, rate, *projected_tokens).cost.billed_usd
                                        : estimate(times, rate).billed_usd;
    choice.ranked.emplace_back(o, usd);
  }
  std::stable_sort(choice.ranked.begin(), choice.ranked.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  if (!choice.ranked.empty()) choice.offer = choice.ranked.front().first;
  return choice;
}

std::string describe_choice(const OfferChoice& choice) {
  std::string out;
  for (std::size_t i = 0; i < choice.ranked.size() && i < 2; ++i) {
    const auto& [offer, usd] = choice.ranked[i];
    // Two offers that differ only in their instance size would read the same.
    const std::string size = offer->gpus_per_instance > 1 && offer->instance_type.empty()
                                 ? fmt::format(" ({} GPUs an instance)", offer->gpus_per_instance)
                                 : "";
    out += fmt::format("{}{}{} ({})", i == 0 ? "" : ", then ", offer_name(*offer), size,
                       text::format_usd(usd));
  }
  return out;
}

namespace {

std::optional<double> projected_tokens(const RunTimes& times, const PricingRequest& request) {
  switch (request.projection_unit) {
    case ProjectionUnit::kNone:
      return std::nullopt;
    case ProjectionUnit::kTokens:
      return request.projection_amount;
    case ProjectionUnit::kExamples:
      return tokens_for_examples(times, request.projection_amount);
    case ProjectionUnit::kEpochs:
      return tokens_for_epochs(times, request.projection_amount);
  }
  return std::nullopt;
}

// One offer (nullptr: the given rate) priced for the run, flagged when the instance bills for
// more GPUs than the run used.
PricedOffer price_at(const RunPricing& run, const Offer* offer, const Rate& rate,
                     std::string flags) {
  PricedOffer p;
  p.offer = offer;
  p.rate = rate;
  const int64_t billed = billed_gpus(run.times.gpus, rate.gpus_per_instance);
  if (billed > run.times.gpus) {
    flags += fmt::format("{}pays for {} GPUs, uses {}", flags.empty() ? "" : "; ", billed,
                         run.times.gpus);
  }
  p.flags = flags;
  p.cost = estimate(run.times, rate);
  if (run.projected_tokens) p.projection = project(run.times, rate, *run.projected_tokens);
  return p;
}

std::string no_price_message(const report::Report& report, const RunPricing& run) {
  std::string message = fmt::format("no price: the catalog has no on-demand offer for device {}",
                                    text::quoted(report.environment.device.name));
  if (!run.offers.empty()) {
    message +=
        fmt::format(" (it has {} other offers; cheapest for this run: --offer {})",
                    run.offers.size(), text::printable(offer_selector(*run.offers.front().offer)));
  }
  return message +
         "; give --rate USD_PER_GPU_HOUR [--billing per-second|per-minute|per-hour] or "
         "--offer PROVIDER/GPU[/TIER]";
}

RunPricing price_run_or_throw(const report::Report& report, const Catalog& catalog,
                              const PricingRequest& request) {
  RunPricing run;
  run.times = run_times(report);
  if (request.gpus) run.times.gpus = *request.gpus;
  run.projected_tokens = projected_tokens(run.times, request);
  run.gpu = find_gpu(catalog, report.environment.device.name);

  std::optional<PricedOffer> chosen;
  if (request.rate) {
    chosen = price_at(run, nullptr, *request.rate, "");
  } else if (!request.offers.empty()) {
    // As for the default: offers that state their billing first (the others are priced
    // linearly, a lower bound that would win every comparison).
    std::vector<const Offer*> stated;
    for (const Offer* o : request.offers) {
      if (o->billing != Billing::kUnknown) stated.push_back(o);
    }
    const OfferChoice pick =
        cheapest_for_run(run.times, stated.empty() ? request.offers : stated, run.projected_tokens);
    const Offer& o = *pick.offer;
    chosen =
        price_at(run, &o, rate_from_offer(o), offer_flags(o, request.today, request.max_age_days));
    if (run.gpu == nullptr) run.gpu = find_gpu(catalog, o.gpu);
    if (request.offers.size() > 1) {
      const std::string with_billing =
          pick.ranked.size() < request.offers.size()
              ? fmt::format(", {} with stated billing", pick.ranked.size())
              : "";
      run.choice = fmt::format(
          "--offer {} matches {} {}offers{}; cheapest for {}: {}", request.offer_text,
          request.offers.size(), o.tier == kOnDemand ? "on-demand " : "", with_billing,
          run.projected_tokens ? "the projected job" : "this run", describe_choice(pick));
    }
  }
  if (run.gpu != nullptr) {
    for (const Offer* o : offers_for(catalog, run.gpu)) {
      run.offers.push_back(price_at(run, o, rate_from_offer(*o),
                                    offer_flags(*o, request.today, request.max_age_days)));
    }
  }
  // What this run (or the projected job: the ranking the choice follows) would cost, cheapest
  // first: a per-GPU price on a larger instance may cost more than a dearer single GPU.
  const auto usd = [](const PricedOffer& p) {
    return p.projection ? p.projection->cost.billed_usd : p.cost.billed_usd;
  };
  std::stable_sort(run.offers.begin(), run.offers.end(),
                   [&usd](const PricedOffer& a, const PricedOffer& b) { return usd(a) < usd(b); });
  if (!chosen) {
    const std::vector<const Offer*> candidates = default_candidates(catalog, run.gpu);
    const OfferChoice pick = cheapest_for_run(run.times, candidates, run.projected_tokens);
    if (pick.offer == nullptr) throw PricingError(no_price_message(report, run));
    for (const PricedOffer& p : run.offers) {
      if (p.offer == pick.offer) chosen = p;
    }
    if (pick.ranked.size() > 1) {
      const bool stated = pick.offer->billing != Billing::kUnknown;
      run.choice = fmt::format("the catalog's on-demand offers of {}{}, cheapest for {}: {}",
                               run.gpu->name, stated ? " with stated billing" : "",
                               run.projected_tokens ? "the projected job" : "this run",
                               describe_choice(pick));
    }
  }
  for (PricedOffer& p : run.offers) {
    p.chosen = chosen->offer != nullptr && p.offer == chosen->offer;
  }
  run.chosen = *chosen;
  run.chosen.chosen = true;
  return run;
}

}  // namespace

RunPricing price_run(const report::Report& report, const Catalog& catalog,
                     const PricingRequest& request) {
  try {
    return price_run_or_throw(report, catalog, request);
  } catch (const std::invalid_argument& e) {
    throw PricingError(e.what());
  }
}

}  // namespace ftbench::cost
