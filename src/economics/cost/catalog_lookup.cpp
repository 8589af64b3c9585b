// Finding a GPU by any of its names, its offers cheapest first, an offer from a --offer
// selector, and an offer's age.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "economics/cost/catalog.h"
#include "economics/cost/offer_names.h"
#include "util/text/did_you_mean.h"
#include "util/text/messages.h"

namespace ftbench::cost {
namespace {

using detail::fold;
using detail::lowercase;
using detail::tier_index;
using detail::tier_names;
using text::join;
using text::not_one_of_message;
using text::unknown_name_message;

// Cheapest per GPU-hour first; ties by provider, tier (kTiers order), region, then the rest of
// the key so that the order never depends on the catalog's order.
bool cheaper(const Offer* a, const Offer* b) {
  if (a->usd_per_gpu_hour != b->usd_per_gpu_hour) return a->usd_per_gpu_hour < b->usd_per_gpu_hour;
  const std::size_t tier_a = tier_index(a->tier);
  const std::size_t tier_b = tier_index(b->tier);
  return std::tie(a->provider, tier_a, a->region, a->instance_type, a->gpus_per_instance) <
         std::tie(b->provider, tier_b, b->region, b->instance_type, b->gpus_per_instance);
}

}  // namespace

const Gpu* find_gpu(const Catalog& catalog, std::string_view name) {
  return gpus::find_gpu(catalog.gpus, name);
}

std::vector<const Offer*> offers_for(const Catalog& catalog, const Gpu* gpu) {
  std::vector<const Offer*> offers;
  for (const Offer& offer : catalog.offers) {
    if (gpu == nullptr || offer.gpu == gpu->name) offers.push_back(&offer);
  }
  std::stable_sort(offers.begin(), offers.end(), cheaper);
  return offers;
}

std::vector<const Offer*> resolve_offers(const Catalog& catalog, std::string_view text) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t slash = text.find('/', start);
    parts.emplace_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  const std::string flag = "offer " + text::quoted(text);
  if (parts.size() < 2 || parts.size() > 3 ||
      std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
    throw CatalogError(flag + ": expected PROVIDER/GPU or PROVIDER/GPU/TIER");
  }
  const std::string& provider = parts[0];
  const std::string& gpu_text = parts[1];

  std::vector<const Offer*> of_provider;
  std::vector<std::string> providers;
  for (const Offer& offer : catalog.offers) {
    if (lowercase(offer.provider) == lowercase(provider)) of_provider.push_back(&offer);
    if (std::find(providers.begin(), providers.end(), offer.provider) == providers.end()) {
      providers.push_back(offer.provider);
    }
  }
  if (of_provider.empty()) {
    throw CatalogError(flag + ": " + unknown_name_message("provider", provider, providers));
  }

  const Gpu* gpu = find_gpu(catalog, gpu_text);
  std::vector<const Offer*> of_gpu;
  std::vector<std::string> provider_gpus;
  for (const Offer* offer : of_provider) {
    if ((gpu != nullptr && offer->gpu == gpu->name) || fold(offer->gpu) == fold(gpu_text)) {
      of_gpu.push_back(offer);
    }
    if (std::find(provider_gpus.begin(), provider_gpus.end(), offer->gpu) == provider_gpus.end()) {
      provider_gpus.push_back(offer->gpu);
    }
  }
  if (of_gpu.empty()) {
    std::string message =
        gpu != nullptr
            ? fmt::format("{}: {} has no offer for {}", flag, text::quoted(provider), gpu->name)
            : fmt::format("{}: unknown GPU {} for {}", flag, text::quoted(gpu_text),
                          text::quoted(provider));
    if (auto hint = text::closest(gpu_text, provider_gpus)) {
      message += fmt::format("; did you mean {}?", text::quoted(*hint));
    } else {
      message += fmt::format("; it offers {}", join(provider_gpus));
    }
    throw CatalogError(message);
  }

  std::vector<const Offer*> matches = of_gpu;
  if (parts.size() == 3) {
    const std::string tier = lowercase(parts[2]);
    if (tier_index(tier) >= std::size(kTiers)) {
      throw CatalogError(
          fmt::format("{}: tier: {}", flag, not_one_of_message(parts[2], tier_names())));
    }
    matches.clear();
    std::vector<std::string> tiers;
    for (const Offer* offer : of_gpu) {
      if (offer->tier == tier) matches.push_back(offer);
      if (std::find(tiers.begin(), tiers.end(), offer->tier) == tiers.end()) {
        tiers.push_back(offer->tier);
      }
    }
    if (matches.empty()) {
      throw CatalogError(fmt::format("{}: {} has no {} offer for {}; tiers offered: {}", flag,
                                     text::quoted(provider), tier, of_gpu.front()->gpu,
                                     join(tiers)));
    }
  }
  std::stable_sort(matches.begin(), matches.end(), cheaper);
  std::vector<const Offer*> on_demand;
  for (const Offer* offer : matches) {
    if (offer->tier == kOnDemand) on_demand.push_back(offer);
  }
  return on_demand.empty() ? matches : on_demand;
}

std::optional<int64_t> age_days(const Offer& offer, const Date& today) {
  if (!offer.date) return std::nullopt;
  return days_since_epoch(today) - days_since_epoch(*offer.date);
}

}  // namespace ftbench::cost
