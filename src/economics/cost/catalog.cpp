#include "economics/cost/catalog.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "economics/cost/billing.h"
#include "economics/cost/offer_names.h"
#include "economics/cost/price_bounds.h"
#include "economics/cost/skypilot_csv.h"
#include "util/io/whole_file.h"
#include "util/text/did_you_mean.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"
#include "util/text/yaml_fields.h"

namespace ftbench::cost {

namespace detail {

// configs/catalog.yaml, written into a generated source by cmake/EmbedFile.cmake at build time.
extern const char kBuiltinCatalogYaml[];
extern const std::size_t kBuiltinCatalogYamlSize;
}  // namespace detail

namespace {

constexpr const char* kBuiltinName = "configs/catalog.yaml (built in)";

// A line of a SkyPilot CSV: real rows are under 1 KB, their GpuInfo cells included.
constexpr std::uint64_t kMaxSkyPilotCsvLineBytes = 1 * io::kMiB;

// ---------------------------------------------------------------------------------------------
// Message text.

using detail::fold;
using detail::lowercase;
using detail::tier_index;
using detail::tier_names;
using detail::words_of;
using text::describe;
using text::join;
using text::not_one_of_message;
using text::unknown_name_message;

// ---------------------------------------------------------------------------------------------
// Reading (util/text/yaml_fields.h), and the catalog's own kinds of value.

using text::Field;
using text::Fields;
using text::Issues;
using text::line_of;

void throw_if_any(const Issues& issues) {
  if (!issues.empty()) throw CatalogError(issues.text());
}

// min_billed_seconds: 0 to kMaxMinBilledSeconds, as --min-seconds.
std::optional<int64_t> min_billed_seconds(Fields& f) {
  const std::optional<int64_t> value = f.integer("min_billed_seconds", 0);
  if (value && *value > kMaxMinBilledSeconds) {
    f.fail(*f.find("min_billed_seconds"),
           fmt::format("must be an integer between 0 and {} (366 days), found {}",
                       kMaxMinBilledSeconds, *value));
    return std::nullopt;
  }
  return value;
}

std::optional<Billing> billing(Fields& f, const std::string& name) {
  std::optional<std::string> value = f.string(name);
  if (!value) return std::nullopt;
  std::optional<Billing> billing = parse_billing(*value);
  if (!billing)
    f.fail(*f.find(name), not_one_of_message(*value, text::spellings(kBillingSpellings)));
  return billing;
}

std::optional<Date> date(Fields& f, const std::string& name) {
  const Field* field = f.find(name);
  if (field == nullptr) return std::nullopt;
  std::optional<Date> date;
  if (field->value.IsScalar()) date = parse_date(field->value.Scalar());
  if (!date) {
    f.fail(*field, "expected a calendar date YYYY-MM-DD, found " + describe(field->value));
  }
  return date;
}

// ---------------------------------------------------------------------------------------------
// The three sections.

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = {"gpus", "providers", "offers"};
  return names;
}

const std::vector<std::string>& provider_keys() {
  static const std::vector<std::string> keys = {"name", "billing", "min_billed_seconds"};
  return keys;
}

const std::vector<std::string>& offer_keys() {
  static const std::vector<std::string> keys = {"provider",
                                                "gpu",
                                                "gpus_per_instance",
                                                "tier",
                                                "usd_per_gpu_hour",
                                                "usd_per_instance_hour",
                                                "billing",
                                                "min_billed_seconds",
                                                "region",
                                                "instance_type",
                                                "source",
                                                "date",
                                                "note",
                                                "preemptions_per_hour"};
  return keys;
}

ProviderDefaults read_provider(Issues& issues, const YAML::Node& node, const std::string& path,
                               const std::string& origin_file) {
  ProviderDefaults provider;
  Fields f(issues, node, path, provider_keys());
  f.require("name");
  provider.name = f.nonempty_string("name").value_or("");
  provider.billing = billing(f, "billing");
  provider.min_billed_seconds = min_billed_seconds(f);
  provider.origin = fmt::format("{}:{}", origin_file, f.line());
  return provider;
}

Offer read_offer(Issues& issues, const YAML::Node& node, const std::string& path,
                 const std::string& origin_file) {
  Offer offer;
  Fields f(issues, node, path, offer_keys());
  for (const char* key : {"provider", "gpu", "tier"}) f.require(key);
  offer.provider = f.nonempty_string("provider").value_or("");
  offer.gpu = f.nonempty_string("gpu").value_or("");
  offer.gpus_per_instance = f.integer("gpus_per_instance", 1).value_or(1);
  if (offer.gpus_per_instance > kMaxGpus) {
    f.fail(*f.find("gpus_per_instance"),
           fmt::format("must be at most {}, found {}", kMaxGpus, offer.gpus_per_instance));
    offer.gpus_per_instance = 1;
  }
  offer.tier = f.choice("tier", tier_names()).value_or("");

  const bool per_gpu = f.has("usd_per_gpu_hour");
  const bool per_instance = f.has("usd_per_instance_hour");
  if (per_gpu && per_instance) {
    f.fail(*f.find("usd_per_instance_hour"),
           "give either usd_per_gpu_hour or usd_per_instance_hour, not both");
  } else if (!per_gpu && !per_instance) {
    issues.add(f.line(), path, "missing a price: give usd_per_gpu_hour or usd_per_instance_hour");
  } else if (std::optional<double> usd =
                 f.positive_number(per_gpu ? "usd_per_gpu_hour" : "usd_per_instance_hour")) {
    const int64_t gpus = per_gpu ? 1 : offer.gpus_per_instance;
    offer.usd_per_gpu_hour = *usd / static_cast<double>(gpus);
    offer.price_basis = per_gpu ? "per-gpu" : "per-instance";
    const Field& price = *f.find(per_gpu ? "usd_per_gpu_hour" : "usd_per_instance_hour");
    const std::string problem =
        detail::price_per_gpu_problem(describe(price.value), gpus, offer.usd_per_gpu_hour);
    if (!problem.empty()) f.fail(price, problem);
  }

  offer.billing = billing(f, "billing").value_or(Billing::kUnknown);
  offer.min_billed_seconds = min_billed_seconds(f).value_or(0);
  offer.region = f.string("region").value_or("");
  offer.instance_type = f.string("instance_type").value_or("");
  f.require("source", "where the price comes from");
  offer.source = f.nonempty_string("source").value_or("");
  offer.date = date(f, "date");
  offer.note = f.string("note").value_or("");
  if (const Field* rate = f.find("preemptions_per_hour")) {
    offer.preemptions_per_hour = f.positive_number("preemptions_per_hour");
    if (offer.preemptions_per_hour && *offer.preemptions_per_hour > 3600.0) {
      f.fail(*rate, fmt::format("expected reclaims per hour above 0 and at most 3600, found {}",
                                describe(rate->value)));
      offer.preemptions_per_hour.reset();
    } else if (offer.preemptions_per_hour && offer.tier != kSpot) {
      f.fail(*rate, fmt::format("only a spot offer is reclaimed; this offer's tier is {}",
                                text::quoted(offer.tier)));
      offer.preemptions_per_hour.reset();
    }
  }
  offer.origin = fmt::format("{}:{}", origin_file, f.line());
  return offer;
}

using OfferKey =
    std::tuple<std::string, std::string, std::string, std::string, std::string, int64_t>;

OfferKey key_of(const Offer& offer) {
  return {offer.provider, offer.gpu,           offer.tier,
          offer.region,   offer.instance_type, offer.gpus_per_instance};
}

bool is_gpu_name(const Catalog& catalog, const std::string& name) {
  return std::any_of(catalog.gpus.begin(), catalog.gpus.end(),
                     [&](const Gpu& gpu) { return gpu.name == name; });
}

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && lowercase(s.substr(s.size() - suffix.size())) == suffix;
}

std::string read_file(const std::string& path, const io::FileKind& kind) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw CatalogError(fmt::format("{}: is a folder, not a catalog file", path));
  }
  try {
    return io::read_whole_file(path, kind);
  } catch (const io::FileReadError& e) {
    throw CatalogError(fmt::format("{}: cannot read file: {}", path, e.reason()));
  }
}

// A SkyPilot CSV read line by line through a fixed buffer, never whole (a catalog of every
// cloud is tens of megabytes, of which the GPU rows are a few percent).
Catalog read_skypilot_csv_file(const std::string& path, const std::string& provider,
                               const Catalog& known) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw CatalogError(fmt::format("{}: is a folder, not a catalog file", path));
  }
  try {
    io::LineReader lines(path, io::kSkyPilotCsvFile, kMaxSkyPilotCsvLineBytes);
    std::string line;
    bool line_given = false;  // the line went out; its '\n' is next
    const auto next_chunk = [&]() -> std::string_view {
      if (line_given) {
        line_given = false;
        return "\n";
      }
      if (!lines.next(line)) return {};
      line_given = true;
      // An empty line is handed out as its line break alone: an empty view ends the reading.
      if (line.empty()) {
        line_given = false;
        return "\n";
      }
      return line;
    };
    return detail::read_skypilot_csv(next_chunk, path, provider, known, nullptr);
  } catch (const io::FileReadError& e) {
    throw CatalogError(fmt::format("{}: cannot read file: {}", path, e.reason()));
  }
}

// A name or alias of this file's GPUs that already stands for another GPU of `known` (by its
// name or an alias) is refused: lookups would take the one loaded first, and the file's offers
// its own. Restating a GPU under its name is allowed (merge() replaces it).
void check_names_are_free(Issues& issues, const std::vector<Gpu>& gpus,
                          const std::vector<std::pair<std::string, int64_t>>& where,
                          const Catalog& known) {
  const auto other_owner = [&](const Gpu& gpu, const std::string& name) -> const Gpu* {
    for (const Gpu& k : known.gpus) {
      if (fold(k.name) == fold(gpu.name)) continue;
      if (fold(k.name) == fold(name)) return &k;
      for (const std::string& alias : k.aliases) {
        if (fold(alias) == fold(name)) return &k;
      }
    }
    return nullptr;
  };
  const auto refuse = [&](std::size_t i, const std::string& key, const std::string& what,
                          const Gpu& owner) {
    issues.add(where[i].second, where[i].first + key,
               fmt::format("{} already names GPU {} ({}); a name stands for one GPU", what,
                           text::quoted(owner.name), owner.origin));
  };
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (const Gpu* owner = other_owner(gpus[i], gpus[i].name)) {
      refuse(i, ".name", text::quoted(gpus[i].name), *owner);
    }
    for (const std::string& alias : gpus[i].aliases) {
      if (const Gpu* owner = other_owner(gpus[i], alias)) {
        refuse(i, ".aliases", "alias " + text::quoted(alias), *owner);
      }
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Loading.

Catalog parse_catalog_yaml(std::string_view text, const std::string& source_name,
                           const Catalog* known) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    const int64_t line = e.mark.is_null() ? 0 : static_cast<int64_t>(e.mark.line) + 1;
    throw CatalogError(line > 0 ? fmt::format("{}:{}: invalid YAML: {}", source_name, line,
                                              ftbench::text::yaml_error_text(e))
                                : fmt::format("{}: invalid YAML: {}", source_name,
                                              ftbench::text::yaml_error_text(e)));
  }

  Issues issues(source_name);
  Catalog catalog;
  if (root.IsNull()) return catalog;  // empty file: an empty catalog
  if (!root.IsMap()) {
    issues.add(line_of(root), "",
               fmt::format("expected a mapping with keys {}, found {}", join(section_names()),
                           describe(root)));
    throw_if_any(issues);
  }

  std::vector<std::pair<std::string, int64_t>> gpu_where;  // path, line of each GPU
  std::vector<std::pair<std::string, int64_t>> offer_where;
  std::map<std::string, int64_t> provider_line;
  std::map<std::string, int64_t> section_line;
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      issues.add(line_of(key), "", "expected a section name, found " + describe(key));
      continue;
    }
    const std::string name = key.Scalar();
    const int64_t line = line_of(key);
    if (std::find(section_names().begin(), section_names().end(), name) == section_names().end()) {
      issues.add(line, name, unknown_name_message("section", name, section_names()));
      continue;
    }
    const auto [seen, inserted] = section_line.emplace(name, line);
    if (!inserted) {
      issues.add(line, name,
                 fmt::format("duplicate section {} (first given at line {})", text::quoted(name),
                             seen->second));
      continue;
    }
    if (name == "gpus") {
      text::read_list(issues, name, entry.second,
                      [&](const YAML::Node& item, const std::string& p) {
                        catalog.gpus.push_back(gpus::read_gpu(issues, item, p, source_name));
                        gpu_where.emplace_back(p, line_of(item));
                      });
    } else if (name == "providers") {
      text::read_list(
          issues, name, entry.second, [&](const YAML::Node& item, const std::string& p) {
            ProviderDefaults provider = read_provider(issues, item, p, source_name);
            if (!provider.name.empty()) {
              const auto [first, fresh] = provider_line.emplace(provider.name, line_of(item));
              if (!fresh) {
                issues.add(line_of(item), p + ".name",
                           fmt::format("duplicate provider {} (first given at line {})",
                                       text::quoted(provider.name), first->second));
              }
            }
            catalog.providers.push_back(std::move(provider));
          });
    } else {
      text::read_list(issues, name, entry.second,
                      [&](const YAML::Node& item, const std::string& p) {
                        catalog.offers.push_back(read_offer(issues, item, p, source_name));
                        offer_where.emplace_back(p, line_of(item));
                      });
    }
  }

  gpus::check_gpu_names(issues, catalog.gpus, gpu_where);
  if (known != nullptr) check_names_are_free(issues, catalog.gpus, gpu_where, *known);

  // Offers naming one of this file's GPUs by an alias get its canonical name; a GPU this file
  // does not define is mapped by merge() against the GPUs loaded before, and by that name here
  // two offers of this file are the same offer.
  std::map<OfferKey, std::size_t> first_offer;
  for (std::size_t i = 0; i < catalog.offers.size(); ++i) {
    Offer& offer = catalog.offers[i];
    Offer as_merged = offer;
    if (!offer.gpu.empty() && !is_gpu_name(catalog, offer.gpu)) {
      if (const Gpu* gpu = find_gpu(catalog, offer.gpu)) {
        offer.gpu = gpu->name;
        as_merged.gpu = gpu->name;
      } else if (known != nullptr && !is_gpu_name(*known, offer.gpu)) {
        if (const Gpu* earlier = find_gpu(*known, offer.gpu)) as_merged.gpu = earlier->name;
      }
    }
    if (offer.provider.empty() || offer.gpu.empty() || offer.tier.empty()) continue;
    const auto [it, inserted] = first_offer.emplace(key_of(as_merged), i);
    if (!inserted) {
      issues.add(offer_where[i].second, offer_where[i].first,
                 fmt::format("same provider, gpu, tier, region, instance_type and "
                             "gpus_per_instance as {} (line {})",
                             offer_where[it->second].first, offer_where[it->second].second));
    }
  }

  throw_if_any(issues);
  return catalog;
}

// The datasheets of configs/gpus.yaml, then the offers of configs/catalog.yaml (named by the
// datasheets' names or aliases).
Catalog builtin_catalog() {
  Catalog catalog;
  catalog.gpus = gpus::builtin_gpus();
  merge(catalog, parse_catalog_yaml(
                     std::string_view(detail::kBuiltinCatalogYaml, detail::kBuiltinCatalogYamlSize),
                     kBuiltinName, &catalog));
  return catalog;
}

Catalog load_catalog_file(const std::string& path_spec, const Catalog& known) {
  // PROVIDER=PATH when the text before the first '=' is a plain name (no path separator).
  std::string provider;
  std::string path = path_spec;
  const std::size_t eq = path_spec.find('=');
  if (eq != std::string::npos && eq > 0 && path_spec.find_first_of("/\\") > eq) {
    provider = path_spec.substr(0, eq);
    path = path_spec.substr(eq + 1);
  }
  if (path.empty()) throw CatalogError(fmt::format("{}: expected PATH after PROVIDER=", path_spec));

  const bool is_csv = ends_with_ci(path, ".csv");
  if (!provider.empty() && !is_csv) {
    throw CatalogError(fmt::format(
        "{}: PROVIDER=PATH names the provider of a SkyPilot CSV (a .csv file); a YAML catalog "
        "names its providers itself",
        path_spec));
  }
  if (!is_csv) return parse_catalog_yaml(read_file(path, io::kCatalogFile), path, &known);

  if (provider.empty()) {
    // SkyPilot keeps one folder per cloud: .../aws/vms.csv. Otherwise the stem: lambda.csv.
    const std::filesystem::path fs_path(path);
    const std::string parent = fs_path.parent_path().filename().string();
    provider = lowercase(fs_path.filename().string()) == "vms.csv" && !parent.empty() &&
                       parent != "." && parent != ".."
                   ? parent
                   : fs_path.stem().string();
  }
  return read_skypilot_csv_file(path, provider, known);
}

void merge(Catalog& into, Catalog later) {
  for (Gpu& gpu : later.gpus) {
    const auto same = std::find_if(into.gpus.begin(), into.gpus.end(),
                                   [&](const Gpu& g) { return fold(g.name) == fold(gpu.name); });
    if (same != into.gpus.end()) {
      // A user entry that restates a GPU's figures keeps the names it is known by unless it
      // gives its own.
      if (gpu.aliases.empty()) gpu.aliases = same->aliases;
      if (gpu.exclude_words.empty()) gpu.exclude_words = same->exclude_words;
      *same = std::move(gpu);
    } else {
      into.gpus.push_back(std::move(gpu));
    }
  }

  std::map<OfferKey, std::size_t> index;
  for (std::size_t i = 0; i < into.offers.size(); ++i) index.emplace(key_of(into.offers[i]), i);
  for (Offer& offer : later.offers) {
    if (!is_gpu_name(into, offer.gpu)) {
      if (const Gpu* gpu = find_gpu(into, offer.gpu)) offer.gpu = gpu->name;
    }
    const OfferKey key = key_of(offer);
    const auto it = index.find(key);
    if (it != index.end()) {
      into.offers[it->second] = std::move(offer);
    } else {
      index.emplace(key, into.offers.size());
      into.offers.push_back(std::move(offer));
    }
  }

  for (ProviderDefaults& provider : later.providers) {
    const auto same =
        std::find_if(into.providers.begin(), into.providers.end(),
                     [&](const ProviderDefaults& p) { return p.name == provider.name; });
    if (same != into.providers.end()) {
      *same = std::move(provider);
    } else {
      into.providers.push_back(std::move(provider));
    }
  }
}

Catalog load_catalogs(const std::vector<std::string>& path_specs) {
  Catalog catalog = builtin_catalog();
  for (const std::string& spec : path_specs) merge(catalog, load_catalog_file(spec, catalog));
  for (Offer& offer : catalog.offers) {
    if (offer.billing != Billing::kUnknown) continue;
    for (const ProviderDefaults& defaults : catalog.providers) {
      if (defaults.name != offer.provider) continue;
      if (defaults.billing) offer.billing = *defaults.billing;
      if (defaults.min_billed_seconds) offer.min_billed_seconds = *defaults.min_billed_seconds;
    }
  }
  return catalog;
}

}  // namespace ftbench::cost
