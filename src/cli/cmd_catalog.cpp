// `ftbench catalog [--gpu NAME]`: the offers in the catalog, cheapest first, stale prices flagged.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "economics/cost/cost_json.h"
#include "economics/cost/pricing.h"
#include "util/text/did_you_mean.h"
#include "util/text/json_values.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::cli {
namespace {

struct CatalogFlags {
  CommonFlags common;
  std::string gpu;
  std::string provider;
  std::string tier;
  bool gpus = false;
};

using OJson = nlohmann::ordered_json;
using text::Align;
using text::Cell;

std::string optional_text(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{:g}{}", *v, unit) : "";
}

// Whether `text` contains `part`, ignoring case.
bool fold_contains(const std::string& text, const std::string& part) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  return !part.empty() && lower(text).find(lower(part)) != std::string::npos;
}

// `plain`: raw numbers without units (CSV), and the header names the units.
text::Table gpu_table(const cost::Catalog& catalog, bool plain) {
  text::Table t;
  if (plain) {
    t.header = {"gpu",
                "vendor",
                "memory_gb",
                "bandwidth_tb_per_second",
                "dense_bf16_tflops",
                "dense_fp16_tflops",
                "dense_fp8_tflops",
                "source"};
  } else {
    t.header = {"GPU",        "vendor",     "memory",    "bandwidth",
                "dense BF16", "dense FP16", "dense FP8", "source"};
  }
  t.align = {Align::kLeft,  Align::kLeft,  Align::kRight, Align::kRight,
             Align::kRight, Align::kRight, Align::kRight, Align::kLeft};
  auto cell = [plain](const std::optional<double>& v, const char* unit) {
    if (plain) return v ? text::format_number(*v) : std::string();
    return optional_text(v, unit);
  };
  for (const cost::Gpu& g : catalog.gpus) {
    t.rows.push_back(
        {g.name, g.vendor,
         cell(g.memory_gb, " GB") + (g.memory_type.empty() || plain ? "" : " " + g.memory_type),
         cell(g.bandwidth_tb_per_second, " TB/s"), cell(g.dense_bf16_tflops, " TFLOP/s"),
         cell(g.dense_fp16_tflops, " TFLOP/s"), cell(g.dense_fp8_tflops, " TFLOP/s"), g.source});
  }
  return t;
}

OJson gpus_json(const cost::Catalog& catalog) {
  OJson out = OJson::array();
  for (const cost::Gpu& g : catalog.gpus) {
    out.push_back({{"name", g.name},
                   {"aliases", g.aliases},
                   {"vendor", g.vendor},
                   {"memory_gb", text::optional_number(g.memory_gb)},
                   {"memory_type", g.memory_type},
                   {"bandwidth_tb_per_second", text::optional_number(g.bandwidth_tb_per_second)},
                   {"dense_bf16_tflops", text::optional_number(g.dense_bf16_tflops)},
                   {"dense_fp16_tflops", text::optional_number(g.dense_fp16_tflops)},
                   {"dense_fp8_tflops", text::optional_number(g.dense_fp8_tflops)},
                   {"source", g.source}});
  }
  return out;
}

// The GPU --gpu names; an unknown name is an InputError with a hint: a name the user typed part
// of, else a close spelling, else the known names.
const cost::Gpu* find_gpu_or_throw(const cost::Catalog& catalog, const std::string& name) {
  if (const cost::Gpu* gpu = cost::find_gpu(catalog, name)) return gpu;
  std::vector<std::string> names;
  std::vector<std::string> candidates;  // names and aliases, for the hint
  for (const cost::Gpu& g : catalog.gpus) {
    names.push_back(g.name);
    candidates.push_back(g.name);
    candidates.insert(candidates.end(), g.aliases.begin(), g.aliases.end());
  }
  // Names and hints come from catalog files: quoted, so escaped (text::quoted).
  std::string message = fmt::format("--gpu: unknown GPU {}", text::quoted(name));
  // A name the user typed part of ("A100" for "A100-80GB") is a better hint than a close
  // spelling of another part ("H100").
  std::optional<std::string> hint;
  for (const std::string& c : candidates) {
    if (fold_contains(c, name)) {
      hint = c;
      break;
    }
  }
  if (!hint) hint = text::closest(name, candidates);
  if (hint) {
    message += fmt::format("; did you mean {}?", text::quoted(*hint));
  } else {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    message += "; known GPUs: " + text::printable(known);
  }
  throw InputError(message);
}

void check_tier(const std::string& tier) {
  if (tier.empty() ||
      std::find(std::begin(cost::kTiers), std::end(cost::kTiers), tier) != std::end(cost::kTiers)) {
    return;
  }
  throw InputError("--tier: " + text::not_one_of_message(
                                    tier, {std::begin(cost::kTiers), std::end(cost::kTiers)}));
}

bool same_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The offers of `gpu` (nullptr: every GPU) that --provider and --tier select, cheapest first;
// InputError when a filter leaves none.
std::vector<const cost::Offer*> select_offers(const CatalogFlags& f, const cost::Catalog& catalog,
                                              const cost::Gpu* gpu) {
  std::vector<const cost::Offer*> offers;
  for (const cost::Offer* o : cost::offers_for(catalog, gpu)) {
    if (!f.provider.empty() && !same_name(o->provider, f.provider)) continue;
    if (!f.tier.empty() && o->tier != f.tier) continue;
    offers.push_back(o);
  }
  if (!offers.empty() || (f.provider.empty() && f.tier.empty())) return offers;
  std::vector<std::string> providers;
  for (const cost::Offer& o : catalog.offers) {
    if (std::find(providers.begin(), providers.end(), o.provider) == providers.end()) {
      providers.push_back(o.provider);
    }
  }
  std::string message = "no offer matches";
  if (!f.provider.empty()) {
    message += fmt::format(" --provider {}", text::quoted(f.provider));
    if (std::find(providers.begin(), providers.end(), f.provider) == providers.end()) {
      if (auto hint = text::closest(f.provider, providers)) {
        message += fmt::format(" (did you mean {}?)", text::quoted(*hint));
      }
    }
  }
  if (!f.tier.empty()) message += fmt::format(" --tier {}", text::quoted(f.tier));
  throw InputError(message);
}

OJson offer_json(const cost::Offer& o, const cost::Date& today, int64_t max_age_days) {
  const auto age = cost::age_days(o, today);
  return {{"offer", cost::offer_name(o)},
          {"provider", o.provider},
          {"gpu", o.gpu},
          {"tier", o.tier},
          {"gpus_per_instance", o.gpus_per_instance},
          {"usd_per_gpu_hour", o.usd_per_gpu_hour},
          {"usd_per_instance_hour", o.usd_per_gpu_hour * static_cast<double>(o.gpus_per_instance)},
          {"price_basis", o.price_basis},
          {"billing", cost::to_string(o.billing)},
          {"min_billed_seconds", o.min_billed_seconds},
          {"region", o.region},
          {"instance_type", o.instance_type},
          {"source", o.source},
          {"date", o.date ? OJson(cost::to_string(*o.date)) : OJson(nullptr)},
          {"age_days", age ? OJson(*age) : OJson(nullptr)},
          {"flags", cost::offer_flags(o, today, max_age_days)},
          {"note", o.note}};
}

// `plain`: raw numbers without units (CSV).
text::Table offers_table(const std::vector<const cost::Offer*>& offers, const cost::Date& today,
                         int64_t max_age_days, bool plain) {
  text::Table t;
  t.header = {"offer", "$/GPU-h", "GPUs/inst", "$/inst-h", "billing",
              "min",   "region",  "date",      "flags",    "source"};
  t.align = {Align::kLeft,  Align::kRight, Align::kRight,
             Align::kRight, Align::kLeft,  Align::kRight};
  for (const cost::Offer* o : offers) {
    const std::string flags = cost::offer_flags(*o, today, max_age_days);
    const double instance = o->usd_per_gpu_hour * static_cast<double>(o->gpus_per_instance);
    t.rows.push_back(
        {cost::offer_name(*o),
         plain ? text::format_number(o->usd_per_gpu_hour) : text::format_usd(o->usd_per_gpu_hour),
         std::to_string(o->gpus_per_instance),
         plain ? text::format_number(instance) : text::format_usd(instance),
         cost::to_string(o->billing),
         plain ? std::to_string(o->min_billed_seconds)
               : (o->min_billed_seconds > 0 ? fmt::format("{} s", o->min_billed_seconds) : "-"),
         o->region, o->date ? cost::to_string(*o->date) : "undated",
         Cell(flags, flags.empty() ? text::Color::kNone : text::Color::kYellow), o->source});
  }
  return t;
}

int run_catalog(const CatalogFlags& f) {
  const text::Format format = parse_format_flag(f.common.format);
  const cost::Catalog catalog = cost::load_catalogs(f.common.catalogs);
  const cost::Date today = today_or(f.common.today);
  check_max_age_days(f.common.max_age_days);
  if (f.gpus) {
    for (const auto& [flag, value] :
         {std::pair<const char*, const std::string&>{"--provider", f.provider},
          {"--tier", f.tier}}) {
      if (!value.empty()) {
        throw InputError(
            fmt::format("{} filters offers; --gpus lists GPUs (give one of the two)", flag));
      }
    }
    // --gpu: that GPU alone, found as the offers' filter finds it.
    cost::Catalog shown = catalog;
    if (!f.gpu.empty()) shown.gpus = {*find_gpu_or_throw(catalog, f.gpu)};
    return print_as(
        format, f.common.color,
        {[&] { std::cout << gpus_json(shown).dump(2) << "\n"; },
         [&] { std::cout << text::render_csv(gpu_table(shown, true)); },
         [&] { std::cout << text::render_markdown(gpu_table(shown, false)); },
         [&](bool color) { std::cout << text::render_text(gpu_table(shown, false), color); }});
  }
  const cost::Gpu* gpu = f.gpu.empty() ? nullptr : find_gpu_or_throw(catalog, f.gpu);
  check_tier(f.tier);
  const std::vector<const cost::Offer*> offers = select_offers(f, catalog, gpu);
  const int64_t max_age = f.common.max_age_days;
  const auto table = [&](bool plain) { return offers_table(offers, today, max_age, plain); };
  return print_as(format, f.common.color,
                  {[&] {
                     OJson out = OJson::array();
                     for (const cost::Offer* o : offers)
                       out.push_back(offer_json(*o, today, max_age));
                     std::cout << out.dump(2) << "\n";
                   },
                   [&] { std::cout << text::render_csv(table(true)); },
                   [&] { std::cout << text::render_markdown(table(false)); },
                   [&](bool color) { std::cout << text::render_text(table(false), color); }});
}

}  // namespace

Action add_catalog_command(CLI::App& app) {
  auto f = std::make_shared<CatalogFlags>();
  CLI::App* cmd = add_subcommand(app, "catalog");
  cmd->add_option("--gpu", f->gpu, "Only offers of this GPU (name, alias or driver name)");
  cmd->add_option("--provider", f->provider, "Only offers of this provider");
  cmd->add_option("--tier", f->tier, "Only this tier: on-demand, spot, reserved, marketplace");
  cmd->add_flag("--gpus", f->gpus,
                "List the GPUs (datasheet figures) instead of offers; with --gpu, that one");

  add_common_options(cmd, f->common, /*with_dates=*/true);

  return [f]() { return run_catalog(*f); };
}

}  // namespace ftbench::cli
