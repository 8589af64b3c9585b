// The provider catalog: offers (what a provider charges for a GPU) and the GPUs they name (the
// datasheets of device/gpus/datasheet.h, plus any a catalog file adds).
//
// Sources, later wins: the catalog built into the binary (configs/catalog.yaml, compiled in), then
// each file given with --catalog, in order. A file is either ftbench's YAML catalog
// (docs/catalog.md) or a SkyPilot-style catalog CSV (columns found by header name). Every price
// carries its source and date; undated prices are kept and flagged as such.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "device/gpus/datasheet.h"
#include "util/error.h"
#include "util/text/spellings.h"

namespace ftbench::cost {

// A bad catalog file or a name that is not in the catalog. The message names the file and line
// (or the flag), what was expected and what was found, with a "did you mean" hint where one is
// close.
class CatalogError : public BadInput {
 public:
  using BadInput::BadInput;
};

// How a provider rounds the rented time up. kUnknown: the source does not say; billed cost is
// then the linear cost and is flagged as such.
enum class Billing { kPerSecond, kPerMinute, kPerHour, kUnknown };
inline constexpr text::Spelling<Billing> kBillingSpellings[] = {{Billing::kPerSecond, "per-second"},
                                                                {Billing::kPerMinute, "per-minute"},
                                                                {Billing::kPerHour, "per-hour"},
                                                                {Billing::kUnknown, "unknown"}};

// "per-second", "per-minute", "per-hour", "unknown".
std::string to_string(Billing billing);
// Accepts the names above (case-insensitive); nullopt for anything else.
std::optional<Billing> parse_billing(std::string_view text);
// 1, 60, 3600; 1 for kUnknown (linear).
int64_t increment_seconds(Billing billing);

// A calendar date (proleptic Gregorian), for price dates.
struct Date {
  int year = 0;
  int month = 0;  // 1-12
  int day = 0;    // 1-31
};
// Parses "YYYY-MM-DD" (a valid calendar date); nullopt otherwise.
std::optional<Date> parse_date(std::string_view text);
std::string to_string(const Date& date);  // "YYYY-MM-DD"
// Days since 1970-01-01 (negative before).
int64_t days_since_epoch(const Date& date);

// A GPU's datasheet (device/gpus/datasheet.h): the catalog's GPUs are the built-in datasheets and
// those of its files; offers name them.
using Gpu = gpus::Gpu;

// An offer's tier, as catalogs spell it; the first two are the ones ftbench's rules name.
inline constexpr const char* kOnDemand = "on-demand";
inline constexpr const char* kSpot = "spot";
inline constexpr const char* kTiers[] = {kOnDemand, kSpot, "reserved", "marketplace"};

struct Offer {
  std::string provider;  // e.g. "reference-run", "aws"
  std::string gpu;       // Gpu::name when the catalog knows the GPU, else the name as given
  int64_t gpus_per_instance = 1;
  std::string tier;           // one of kTiers
  std::string region;         // "" when not stated
  std::string instance_type;  // "" when not stated
  // Always per GPU-hour. A price stated per instance-hour is divided by gpus_per_instance on
  // loading; `price_basis` keeps how the source stated it.
  double usd_per_gpu_hour = 0.0;
  std::string price_basis = "per-gpu";  // "per-gpu" or "per-instance"
  Billing billing = Billing::kUnknown;
  int64_t min_billed_seconds = 0;  // 0 = no minimum
  std::string source;              // where the price comes from ("" not allowed in YAML)
  std::optional<Date> date;        // when the price was seen; nullopt = undated
  std::string note;                // free text, e.g. "quote-only"
  // Spot offers: reclaims per hour as the source states them (the spot risk's rate when no
  // --preemptions-per-hour is given); nullopt: not stated.
  std::optional<double> preemptions_per_hour;
  std::string origin;  // "file:line" of the entry or CSV row
};

// Provider defaults, applied to offers of that provider whose file did not state billing
// (SkyPilot CSVs never do).
struct ProviderDefaults {
  std::string name;
  std::optional<Billing> billing;
  std::optional<int64_t> min_billed_seconds;
  std::string origin;
};

struct Catalog {
  std::vector<Gpu> gpus;
  std::vector<Offer> offers;
  std::vector<ProviderDefaults> providers;
};

// The catalog compiled into the binary: the datasheets of configs/gpus.yaml and the offers and
// providers of configs/catalog.yaml.
Catalog builtin_catalog();

// Parses ftbench's YAML catalog. `source_name` is used in messages ("configs/catalog.yaml").
// `known`: the catalog it will be merged into, whose GPU names and aliases make two offers of
// this file that name one GPU two ways the same offer. Throws CatalogError listing every
// problem with line numbers.
Catalog parse_catalog_yaml(std::string_view text, const std::string& source_name,
                           const Catalog* known = nullptr);

// What parse_skypilot_csv() read and what it skipped (rows are data rows, header not counted).
struct SkyPilotCsvStats {
  int64_t rows = 0;
  int64_t offers = 0;                    // offers returned
  int64_t skipped_no_accelerator = 0;    // empty AcceleratorName or AcceleratorCount (CPU rows)
  int64_t skipped_fractional_count = 0;  // AcceleratorCount not a positive integer (e.g. 0.5)
  int64_t skipped_no_price = 0;          // neither Price nor SpotPrice given (empty or 0)
  int64_t folded_duplicates = 0;  // same GPU, tier, instance type and size: cheapest zone and
                                  // region kept
  // GCP-style rows that price a GPU without its host VM (no InstanceType): priced with the host
  // VM of their zone, or skipped when the file has none there.
  int64_t priced_with_host = 0;
  int64_t skipped_no_host = 0;
};

// Parses a SkyPilot-style catalog CSV (header row; columns by name: InstanceType,
// AcceleratorName, AcceleratorCount, Price, SpotPrice, Region, AvailabilityZone, GpuInfo, ...;
// RFC 4180 quoting). Rows without an accelerator or a price are skipped; Price gives an
// on-demand offer and SpotPrice a spot offer, both per instance-hour, converted to per GPU-hour.
// A GPU row without an instance type (GCP's layout) is priced with its host VM's row. GPU names
// are mapped to catalog names through `known` (aliases) when they match and the row does not
// name another part (PCIe, NVL). Offers of one GPU, tier, instance type and size fold to the
// cheapest zone and region. Problems past the first ten are counted, not listed. `stats`, when
// given, receives the counts. load_catalog_file() reads a file the same way without holding it.
Catalog parse_skypilot_csv(std::string_view text, const std::string& source_name,
                           const std::string& provider, const Catalog& known,
                           SkyPilotCsvStats* stats = nullptr);

// Loads a file by its content type: ".csv" → SkyPilot CSV, anything else → YAML. A spec of the
// form PROVIDER=PATH names the provider of a CSV; otherwise the provider is the parent folder of
// a file named vms.csv (SkyPilot's layout: .../aws/vms.csv) or else the file's stem.
Catalog load_catalog_file(const std::string& path_spec, const Catalog& known);

// Adds `later` to `into`; later wins: a GPU of the same name replaces the earlier one, an offer
// with the same key (provider, gpu, tier, region, instance_type, gpus_per_instance) replaces
// the earlier one, provider defaults of the same name replace the earlier ones. An offer of
// `later` whose gpu is not a GPU name is first mapped through find_gpu() on the merged GPUs, so
// a file may name a built-in GPU by any of its aliases.
void merge(Catalog& into, Catalog later);

// builtin_catalog(), then each --catalog file in order, merged; then provider defaults applied
// to offers with Billing::kUnknown.
Catalog load_catalogs(const std::vector<std::string>& path_specs);

// gpus::find_gpu over the catalog's GPUs: by canonical name, alias or a device name as a driver
// reports it; nullptr when none matches.
const Gpu* find_gpu(const Catalog& catalog, std::string_view name);

// Offers of one GPU (nullptr: all), cheapest per GPU-hour first; ties by provider, tier, region.
std::vector<const Offer*> offers_for(const Catalog& catalog, const Gpu* gpu);

// The offers "PROVIDER/GPU[/TIER]" names (GPU by find_gpu, or the offer's own gpu text), cheapest
// per GPU-hour first: every region and instance size; without TIER the on-demand ones if there
// are any, else every tier. Which of them a run is billed at depends on the run (an 8-GPU
// instance may be cheaper per GPU-hour and dearer for one GPU): pricing.h's cheapest_for_run.
// Throws CatalogError naming the flag value with close providers, GPUs or tiers suggested when
// nothing matches.
std::vector<const Offer*> resolve_offers(const Catalog& catalog, std::string_view text);

// Age of an offer's price on `today`, in days: nullopt when undated, negative when the price is
// dated after `today`.
std::optional<int64_t> age_days(const Offer& offer, const Date& today);

}  // namespace ftbench::cost
