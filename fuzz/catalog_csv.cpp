// Fuzz target: the SkyPilot catalog CSV parser (cost::parse_skypilot_csv), with the built-in
// catalog's GPUs for name mapping, as `--catalog aws=vms.csv` reads a file.
#include <string>
#include <utility>

#include "economics/cost/catalog.h"
#include "fuzz_target.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace cost = ftbench::cost;
  static const cost::Catalog builtin = cost::builtin_catalog();  // the same for every input
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    cost::SkyPilotCsvStats stats;
    cost::Catalog parsed = cost::parse_skypilot_csv(text, "fuzz/vms.csv", "fuzz", builtin, &stats);
    cost::Catalog merged = builtin;
    cost::merge(merged, std::move(parsed));
  } catch (const cost::CatalogError&) {
    return FuzzVerdict::kRejected;
  }
  return FuzzVerdict::kAccepted;
}
