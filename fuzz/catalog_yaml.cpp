// Fuzz target: the provider catalog's YAML parser (cost::parse_catalog_yaml), then what
// --catalog does with a file it accepts: merged over the built-in catalog, its offers' GPUs
// looked up and its offers resolved by name.
#include <string>
#include <utility>
#include <vector>

#include "economics/cost/catalog.h"
#include "fuzz_target.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace cost = ftbench::cost;
  // Parsed once: the same for every input.
  static const cost::Catalog builtin = cost::builtin_catalog();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    cost::Catalog parsed = cost::parse_catalog_yaml(text, "fuzz-catalog.yaml");
    std::vector<std::string> names;  // "PROVIDER/GPU/TIER" of the file's offers
    for (const cost::Offer& offer : parsed.offers) {
      names.push_back(offer.provider + "/" + offer.gpu + "/" + offer.tier);
    }
    cost::Catalog merged = builtin;
    cost::merge(merged, std::move(parsed));
    for (const std::string& name : names) {
      try {
        cost::offers_for(merged, cost::find_gpu(merged, name.substr(name.find('/') + 1)));
        cost::resolve_offers(merged, name);
      } catch (const cost::CatalogError&) {
      }
    }
  } catch (const cost::CatalogError&) {
    return FuzzVerdict::kRejected;
  }
  return FuzzVerdict::kAccepted;
}
