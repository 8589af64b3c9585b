// `ftbench cost REPORT.json`: what a measured run cost, per run, epoch, step and token, what a
// larger job would cost, and the same run priced at every catalog offer of its GPU.
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "economics/cost/cost_json.h"
#include "economics/cost/estimate.h"
#include "economics/cost/pricing.h"
#include "economics/cost/spot_risk.h"
#include "report/summary_text.h"
#include "util/text/json_values.h"
#include "util/text/markdown.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::cli {
namespace {

struct CostFlags {
  CommonFlags common;
  std::string report_path;
  std::string offer;
  std::optional<double> rate;
  std::string billing;
  int64_t min_seconds = 0;
  std::optional<int64_t> gpus;
  std::string project_tokens;
  std::string project_examples;
  std::string project_epochs;
  std::optional<double> energy_price;  // USD per kWh
  std::optional<double> preemptions_per_hour;
};

using cost::PricedOffer;
using OJson = nlohmann::ordered_json;
using text::Align;
using text::Cell;
using text::format_duration;
using text::format_percent;
using text::format_usd;

std::string usd_or_na(const std::optional<double>& v) { return v ? format_usd(*v) : "n/a"; }

text::Table offers_table(const std::vector<PricedOffer>& priced, bool with_projection) {
  text::Table t;
  t.header = {"offer",       "$/GPU-h",  "billing",   "GPUs billed",
              "billed time", "run cost", "per epoch", "per 1M tokens"};
  if (with_projection) t.header.push_back("projected");
  t.header.push_back("date");
  t.header.push_back("flags");
  t.align = {Align::kLeft,  Align::kRight, Align::kLeft,  Align::kRight, Align::kRight,
             Align::kRight, Align::kRight, Align::kRight, Align::kRight};
  if (with_projection) t.align.push_back(Align::kRight);
  for (const PricedOffer& p : priced) {
    std::vector<Cell> row = {Cell(p.rate.label + (p.chosen ? " *" : ""),
                                  p.chosen ? text::Color::kBold : text::Color::kNone),
                             format_usd(p.rate.usd_per_gpu_hour),
                             cost::to_string(p.rate.billing),
                             std::to_string(p.cost.gpus_billed),
                             format_duration(p.cost.billed_seconds),
                             format_usd(p.cost.billed_usd),
                             usd_or_na(p.cost.per_epoch_usd),
                             usd_or_na(p.cost.per_million_tokens_usd)};
    if (with_projection) row.emplace_back(format_usd(p.projection->cost.billed_usd));
    row.emplace_back(p.rate.date ? cost::to_string(*p.rate.date) : "undated");
    row.emplace_back(p.flags, p.flags.empty() ? text::Color::kNone : text::Color::kYellow);
    t.rows.push_back(std::move(row));
  }
  return t;
}

// `energy`: with --energy-price, the energy cost when the report measured energy (the same on
// every row: it is the run's, not the offer's); its columns are empty otherwise.
text::Table csv_table(const std::vector<PricedOffer>& priced,
                      const std::optional<cost::EnergyCost>& energy) {
  text::Table t;
  t.header = {"offer",
              "chosen",
              "usd_per_gpu_hour",
              "billing",
              "min_billed_seconds",
              "gpus_billed",
              "run_seconds",
              "billed_seconds",
              "linear_usd",
              "billed_usd",
              "per_epoch_usd",
              "per_epoch_training_usd",
              "per_step_usd",
              "per_million_tokens_usd",
              "before_first_step_share",
              "projected_seconds",
              "projected_billed_usd",
              "date",
              "flags",
              "energy_usd_per_kwh",
              "energy_kwh",
              "energy_usd",
              "energy_per_epoch_usd",
              "energy_per_step_usd",
              "energy_per_million_tokens_usd"};
  auto num = [](const std::optional<double>& v) { return v ? text::format_number(*v) : ""; };
  const std::vector<std::string> energy_cells =
      energy ? std::vector<std::string>{text::format_number(energy->usd_per_kwh),
                                        text::format_number(energy->kwh),
                                        text::format_number(energy->usd),
                                        num(energy->per_epoch_usd),
                                        num(energy->per_step_usd),
                                        num(energy->per_million_tokens_usd)}
             : std::vector<std::string>(6);
  for (const PricedOffer& p : priced) {
    t.rows.push_back(
        {p.rate.label, p.chosen ? "true" : "false", text::format_number(p.rate.usd_per_gpu_hour),
         cost::to_string(p.rate.billing), std::to_string(p.rate.min_billed_seconds),
         std::to_string(p.cost.gpus_billed), text::format_number(p.cost.run_seconds),
         text::format_number(p.cost.billed_seconds), text::format_number(p.cost.linear_usd),
         text::format_number(p.cost.billed_usd), num(p.cost.per_epoch_usd),
         num(p.cost.per_epoch_training_usd), num(p.cost.per_step_usd),
         num(p.cost.per_million_tokens_usd), text::format_number(p.cost.before_first_step_share),
         p.projection ? text::format_number(p.projection->total_seconds) : "",
         p.projection ? text::format_number(p.projection->cost.billed_usd) : "",
         p.rate.date ? cost::to_string(*p.rate.date) : "", p.flags});
    t.rows.back().insert(t.rows.back().end(), energy_cells.begin(), energy_cells.end());
  }
  return t;
}

// The energy rows (--energy-price): board energy of the step loop, priced.
void energy_rows(text::Table& t, const report::Report& rep, double usd_per_kwh) {
  auto row = [&t](const std::string& k, const std::string& v) { t.rows.push_back({k, v}); };
  const std::optional<cost::EnergyCost> c = cost::energy_cost(rep, usd_per_kwh);
  if (!c) {
    row("GPU board energy", "n/a: " + cost::no_energy_reason(rep));
    return;
  }
  const report::Energy& e = *rep.energy;
  // A resumed run measured its last process only: said, so that the figure is not read as the
  // run's (the per-epoch, per-step and per-token figures are that process's rates).
  const std::string scope = report::energy_scope(rep);
  row("GPU board energy",
      fmt::format("{:.4g} kWh ({}) at {}/kWh: {} (step loop{}, {} device{}, {:.1f}% sampled)",
                  c->kwh, e.method, format_usd(usd_per_kwh), format_usd(c->usd),
                  scope.empty() ? "" : " of " + scope, c->devices, c->devices == 1 ? "" : "s",
                  100.0 * e.coverage.value_or(0.0)));
  row("energy per epoch",
      fmt::format("{} ({:.2f} epochs)", usd_or_na(c->per_epoch_usd), c->epochs));
  row("energy per optimizer step", usd_or_na(c->per_step_usd));
  row("energy per 1M trained tokens", usd_or_na(c->per_million_tokens_usd));
}

text::Table summary_table(const report::Report& rep, const cost::RunTimes& times,
                          const PricedOffer& chosen,
                          const std::optional<double>& projected_tokens) {
  const cost::Cost& c = chosen.cost;
  text::Table t;
  t.header = {"", ""};
  auto row = [&t](const std::string& k, const std::string& v) { t.rows.push_back({k, v}); };
  row("run", fmt::format("{} ({}), {} x {} ({})", rep.run_name, rep.status, times.gpus,
                         rep.environment.device.name, rep.environment.device.backend));
  row("rate", chosen.rate.label + ": " + cost::describe_rate(chosen.rate));
  if (!chosen.rate.source.empty() && chosen.rate.source != "command line") {
    row("rate source",
        chosen.rate.source +
            (chosen.rate.date ? ", " + cost::to_string(*chosen.rate.date) : ", undated") +
            (chosen.flags.empty() ? "" : " [" + chosen.flags + "]"));
  }
  row("run time", fmt::format("{} (t0: {}), billed {} on {} GPU{}", format_duration(c.run_seconds),
                              rep.t0_source, format_duration(c.billed_seconds), c.gpus_billed,
                              c.gpus_billed == 1 ? "" : "s"));
  row("cost of the run",
      fmt::format("{} billed, {} linear", format_usd(c.billed_usd), format_usd(c.linear_usd)));
  if (times.steps > 0) {
    row("until the first step ended",
        fmt::format("{} ({} of the run, {})", format_usd(c.before_first_step_usd),
                    format_percent(c.before_first_step_share),
                    format_duration(times.time_to_first_step_seconds)));
  } else {
    row("until the first step ended", "n/a (no step finished)");
  }
  row("per epoch",
      fmt::format("{} whole run, {} training only ({:.2f} epochs)", usd_or_na(c.per_epoch_usd),
                  usd_or_na(c.per_epoch_training_usd), times.epochs));
  row("per optimizer step", fmt::format("{} ({} steps)", usd_or_na(c.per_step_usd), times.steps));
  row("per 1M trained tokens", fmt::format("{} ({} tokens)", usd_or_na(c.per_million_tokens_usd),
                                           report::group_thousands(times.trained_tokens)));
  if (projected_tokens && chosen.projection) {
    const cost::Projection& p = *chosen.projection;
    row("projected job",
        fmt::format("{} tokens: {} ({} fixed + {} at {:.0f} tokens/s), {} billed",
                    report::group_thousands(static_cast<int64_t>(std::llround(p.tokens))),
                    format_duration(p.total_seconds), format_duration(p.fixed_seconds),
                    format_duration(p.training_seconds), times.steady_tokens_per_second,
                    format_usd(p.cost.billed_usd)));
  }
  return t;
}

OJson priced_json(const PricedOffer& p) {
  OJson j;
  j["rate"] = p.rate;
  j["chosen"] = p.chosen;
  j["flags"] = p.flags;
  j["cost"] = p.cost;
  if (p.projection) {
    j["projection"] = {{"tokens", p.projection->tokens},
                       {"fixed_seconds", p.projection->fixed_seconds},
                       {"training_seconds", p.projection->training_seconds},
                       {"total_seconds", p.projection->total_seconds},
                       {"billed_seconds", p.projection->cost.billed_seconds},
                       {"linear_usd", p.projection->cost.linear_usd},
                       {"billed_usd", p.projection->cost.billed_usd}};
  } else {
    j["projection"] = nullptr;
  }
  return j;
}

// The flags as a pricing request: prices, GPUs, the projection and the dates.
cost::PricingRequest pricing_request(const CostFlags& f, const cost::Catalog& catalog) {
  cost::PricingRequest request;
  request.today = today_or(f.common.today);
  check_max_age_days(f.common.max_age_days);
  request.max_age_days = f.common.max_age_days;
  request.gpus = f.gpus;
  if (f.rate) {
    request.rate =
        rate_from_flags(*f.rate, f.billing.empty() ? "per-second" : f.billing, f.min_seconds);
  } else if (!f.offer.empty()) {
    request.offers = cost::resolve_offers(catalog, f.offer);
    request.offer_text = f.offer;
  }
  if (!f.project_tokens.empty()) {
    request.projection_unit = cost::ProjectionUnit::kTokens;
    request.projection_amount = parse_count(f.project_tokens, "--project-tokens");
  } else if (!f.project_examples.empty()) {
    request.projection_unit = cost::ProjectionUnit::kExamples;
    request.projection_amount = parse_count(f.project_examples, "--project-examples");
  } else if (!f.project_epochs.empty()) {
    request.projection_unit = cost::ProjectionUnit::kEpochs;
    request.projection_amount = parse_count(f.project_epochs, "--project-epochs");
  }
  return request;
}

// --preemptions-per-hour: the chosen price's run (or projected job) under reclaims.
struct SpotView {
  cost::SpotBasis basis;
  cost::SpotRisk risk;
  double usd_per_second = 0.0;  // the chosen rate x GPUs billed, linear
  // Linear, as the expected cost is: the work at the chosen rate, and the expected time at it.
  double without_reclaims_usd = 0.0;
  std::optional<double> expected_usd;
  std::optional<PricedOffer> on_demand;  // the default on-demand offer, when the chosen is not
};

std::optional<SpotView> spot_view(const CostFlags& f, const report::Report& rep,
                                  const cost::RunPricing& pricing, const cost::Catalog& catalog) {
  const PricedOffer& chosen = pricing.chosen;
  // --preemptions-per-hour, else the chosen offer's own rate (catalog preemptions_per_hour).
  const std::optional<double> rate =
      f.preemptions_per_hour
          ? f.preemptions_per_hour
          : (chosen.offer != nullptr ? chosen.offer->preemptions_per_hour : std::nullopt);
  if (!rate) return std::nullopt;
  SpotView v;
  v.basis = cost::spot_basis(
      rep, pricing.times,
      chosen.projection ? std::optional<double>(chosen.projection->total_seconds) : std::nullopt,
      *rate);
  v.risk = cost::spot_risk(v.basis.inputs);
  v.usd_per_second =
      chosen.rate.usd_per_gpu_hour * static_cast<double>(chosen.cost.gpus_billed) / 3600.0;
  v.without_reclaims_usd = v.basis.inputs.work_seconds * v.usd_per_second;
  if (v.risk.expected_seconds) v.expected_usd = *v.risk.expected_seconds * v.usd_per_second;
  if (chosen.offer == nullptr || chosen.offer->tier != cost::kOnDemand) {
    const cost::OfferChoice od = cost::cheapest_for_run(
        pricing.times, cost::default_candidates(catalog, pricing.gpu), pricing.projected_tokens);
    for (const PricedOffer& p : pricing.offers) {
      if (od.offer != nullptr && p.offer == od.offer) v.on_demand = p;
    }
  }
  return v;
}

// What the printers need: the report, the pricing, the energy price and the spot risk.
struct CostResult {
  const CostFlags& flags;
  const report::Report& report;
  const cost::RunPricing& pricing;
  const std::optional<SpotView>& spot;
};

double billed_usd(const PricedOffer& p) {
  return p.projection ? p.projection->cost.billed_usd : p.cost.billed_usd;
}

// Seconds for the spot rows: sub-second figures (a tiny test job's steps and saves) with their
// digits, where format_duration would print "0.0 s".
std::string spot_duration(double seconds) {
  return seconds > 0.0 && seconds < 1.0 ? fmt::format("{:.2g} s", seconds)
                                        : format_duration(seconds);
}

// The spot rows (--preemptions-per-hour): reclaims, expected time and cost, the interval.
void spot_rows(text::Table& t, const SpotView& v) {
  auto row = [&t](const std::string& k, const std::string& val) { t.rows.push_back({k, val}); };
  const cost::SpotInputs& in = v.basis.inputs;
  const cost::SpotRisk& r = v.risk;
  row("spot reclaims",
      fmt::format("{} an hour: one every {} on average; chance of at least one in {}: {}",
                  text::format_number(in.preemptions_per_hour),
                  spot_duration(r.mean_seconds_between), spot_duration(in.work_seconds),
                  format_percent(r.p_at_least_one)));
  const bool resumes = r.segment_seconds < in.work_seconds;
  const std::string how =
      resumes ? fmt::format(
                    "a reclaim redoes the work since the last checkpoint (every {}) "
                    "after a {} restart",
                    spot_duration(r.segment_seconds), spot_duration(r.restart_counted_seconds))
              : std::string(in.checkpoint_interval_seconds
                                ? "a reclaim starts the job again: its first checkpoint would "
                                  "come after the work's end"
                                : "a reclaim starts the job again: no checkpoints");
  if (r.expected_seconds) {
    const std::string more =
        in.work_seconds > 0.0
            ? fmt::format(" ({} over {})",
                          format_percent(*r.expected_seconds / in.work_seconds - 1.0, true),
                          spot_duration(in.work_seconds))
            : "";
    row("spot expected time",
        fmt::format("{}{}: {:.2f} reclaims expected, each costing {} on average; {}",
                    spot_duration(*r.expected_seconds), more, *r.expected_interruptions,
                    spot_duration(*r.lost_per_interruption_seconds), how));
    std::string cost_text =
        fmt::format("{} against {} without reclaims (both linear)", format_usd(*v.expected_usd),
                    format_usd(v.without_reclaims_usd));
    if (v.on_demand) {
      cost_text += fmt::format("; on demand, billed: {} ({})", format_usd(billed_usd(*v.on_demand)),
                               text::printable(v.on_demand->rate.label));
    }
    row("spot expected cost", cost_text);
  } else {
    row("spot expected time",
        fmt::format("beyond any finite figure: a stretch of {} without a reclaim is needed, and "
                    "one comes every {}; {}",
                    spot_duration(r.segment_seconds), spot_duration(r.mean_seconds_between), how));
  }
  row("spot basis",
      fmt::format("work: {}; interval: {}; save {} ({}); restart {} ({})", v.basis.work_from,
                  v.basis.interval_from, spot_duration(in.save_seconds), v.basis.save_from,
                  spot_duration(in.restart_seconds),
                  r.restart_counted_seconds > 0.0 || in.restart_seconds == 0.0
                      ? v.basis.restart_from
                      : v.basis.restart_from + "; not added: the job's own set-up, run again"));
  row("optimal checkpoint interval",
      r.optimal_interval_seconds
          ? fmt::format("{} (Young: sqrt(2 x save {} x {} between reclaims))",
                        spot_duration(*r.optimal_interval_seconds), spot_duration(in.save_seconds),
                        spot_duration(r.mean_seconds_between))
          : std::string("n/a: the run saved no checkpoint to time"));
}

OJson spot_json(const SpotView& v) {
  const cost::SpotInputs& in = v.basis.inputs;
  const cost::SpotRisk& r = v.risk;
  OJson j;
  j["preemptions_per_hour"] = in.preemptions_per_hour;
  j["mean_seconds_between"] = r.mean_seconds_between;
  j["work_seconds"] = in.work_seconds;
  j["p_at_least_one"] = r.p_at_least_one;
  j["checkpoint_interval_seconds"] = text::optional_number(in.checkpoint_interval_seconds);
  j["interval_from"] = v.basis.interval_from;
  j["save_seconds"] = in.save_seconds;
  j["save_from"] = v.basis.save_from;
  j["restart_seconds"] = in.restart_seconds;
  j["restart_from"] = v.basis.restart_from;
  j["segment_seconds"] = r.segment_seconds;
  j["restart_counted_seconds"] = r.restart_counted_seconds;
  j["work_from"] = v.basis.work_from;
  j["lost_per_interruption_seconds"] = text::optional_number(r.lost_per_interruption_seconds);
  j["expected_seconds"] = text::optional_number(r.expected_seconds);
  j["expected_interruptions"] = text::optional_number(r.expected_interruptions);
  j["expected_usd"] = text::optional_number(v.expected_usd);
  j["without_reclaims_usd"] = v.without_reclaims_usd;
  j["on_demand_usd"] = v.on_demand ? OJson(billed_usd(*v.on_demand)) : OJson(nullptr);
  j["optimal_interval_seconds"] = text::optional_number(r.optimal_interval_seconds);
  return j;
}

void print_json(const CostResult& r) {
  OJson out;
  out["report"] = r.flags.report_path;
  out["run_name"] = r.report.run_name;
  out["status"] = r.report.status;
  out["device"] = r.report.environment.device.name;
  out["gpu"] = r.pricing.gpu ? OJson(r.pricing.gpu->name) : OJson(nullptr);
  out["times"] = r.pricing.times;
  out["projected_tokens"] = text::optional_number(r.pricing.projected_tokens);
  out["chosen"] = priced_json(r.pricing.chosen);
  out["choice"] = r.pricing.choice.empty() ? OJson(nullptr) : OJson(r.pricing.choice);
  OJson offers = OJson::array();
  for (const PricedOffer& p : r.pricing.offers) offers.push_back(priced_json(p));
  out["offers"] = std::move(offers);
  out["energy"] = r.flags.energy_price ? cost::energy_cost_json(r.report, *r.flags.energy_price)
                                       : OJson(nullptr);
  out["spot_risk"] = r.spot ? spot_json(*r.spot) : OJson(nullptr);
  std::cout << out.dump(2) << "\n";
}

void print_csv(const CostResult& r) {
  std::vector<PricedOffer> rows = {r.pricing.chosen};
  for (const PricedOffer& p : r.pricing.offers) {
    if (!p.chosen) rows.push_back(p);
  }
  std::cout << text::render_csv(
      csv_table(rows, r.flags.energy_price ? cost::energy_cost(r.report, *r.flags.energy_price)
                                           : std::nullopt));
}

text::Table summary_with_energy(const CostResult& r) {
  text::Table summary =
      summary_table(r.report, r.pricing.times, r.pricing.chosen, r.pricing.projected_tokens);
  if (!r.pricing.choice.empty()) {
    // After "rate": why this offer among several.
    summary.rows.insert(summary.rows.begin() + 2, {"offer chosen as", r.pricing.choice});
  }
  if (r.flags.energy_price) energy_rows(summary, r.report, *r.flags.energy_price);
  if (r.spot) spot_rows(summary, *r.spot);
  return summary;
}

std::string offers_title(const CostResult& r) {
  if (r.pricing.gpu == nullptr) return "";
  return fmt::format("Every catalog offer of {} (cheapest for {} first; * = used above)",
                     r.pricing.gpu->name,
                     r.pricing.projected_tokens ? "the projected job" : "this run");
}

void print_markdown(const CostResult& r) {
  text::Table md = summary_with_energy(r);
  md.header = {"figure", "value"};
  std::cout << "## Cost of " << text::markdown_literal(r.report.run_name) << "\n\n"
            << text::render_markdown(md);
  if (!r.pricing.offers.empty()) {
    std::cout << "\n### " << text::markdown_literal(offers_title(r)) << "\n\n"
              << text::render_markdown(
                     offers_table(r.pricing.offers, r.pricing.projected_tokens.has_value()));
  }
}

void print_text(const CostResult& r, bool color) {
  // Labels padded to the longest ("until the first step ended"), not to a fixed width that
  // a longer label runs past into its value.
  std::cout << text::render_fields(summary_with_energy(r));
  if (!r.pricing.offers.empty()) {
    std::cout << "\n"
              << text::paint(text::printable(offers_title(r)), text::Color::kBold, color) << "\n"
              << text::render_text(
                     offers_table(r.pricing.offers, r.pricing.projected_tokens.has_value()), color);
  }
}

int run_cost(const CostFlags& f) {
  const text::Format format = parse_format_flag(f.common.format);
  const report::Report rep = load_report(f.report_path);
  const cost::Catalog catalog = cost::load_catalogs(f.common.catalogs);
  const cost::PricingRequest request = pricing_request(f, catalog);
  if (f.energy_price) {
    try {
      cost::check_usd_per_kwh(*f.energy_price);
    } catch (const std::invalid_argument& e) {
      throw InputError(std::string("--energy-price: ") + e.what());
    }
  }
  if (!request.offers.empty()) {  // every offer it names is of one GPU
    warn_if_other_gpu(catalog, rep, f.report_path, *request.offers.front(), f.offer);
  }
  cost::RunPricing pricing;
  try {
    pricing = cost::price_run(rep, catalog, request);
  } catch (const cost::PricingError& e) {
    throw InputError(f.report_path + ": " + e.what());
  }
  if (f.preemptions_per_hour) check_preemptions_per_hour(*f.preemptions_per_hour);
  const std::optional<SpotView> spot = spot_view(f, rep, pricing, catalog);
  const CostResult result{f, rep, pricing, spot};
  return print_as(
      format, f.common.color,
      {[&] { print_json(result); }, [&] { print_csv(result); }, [&] { print_markdown(result); },
       [&](bool color) { print_text(result, color); }});
}

}  // namespace

Action add_cost_command(CLI::App& app) {
  auto f = std::make_shared<CostFlags>();
  CLI::App* cmd = add_subcommand(app, "cost");
  cmd->add_option("report", f->report_path, "Report JSON written by ftbench run")->required();
  auto* offer = cmd->add_option("--offer", f->offer,
                                "Price from the catalog: PROVIDER/GPU[/TIER] "
                                "(ftbench catalog lists them)");
  auto* rate = cmd->add_option("--rate", f->rate, "Price in USD per GPU-hour");
  offer->excludes(rate);
  cmd->add_option("--billing", f->billing,
                  "Billing increment for --rate: per-second (default), per-minute, per-hour")
      ->needs(rate);
  cmd->add_option("--min-seconds", f->min_seconds, "Minimum billed time for --rate, seconds")
      ->check(whole_number(0, cost::kMaxMinBilledSeconds))
      ->needs(rate);
  cmd->add_option("--gpus", f->gpus, "GPUs the run used (default: the report's world size)")
      ->check(whole_number(1, 65536));
  auto* pt = cmd->add_option("--project-tokens", f->project_tokens,
                             "Project a job of N trained tokens (e.g. 22.5M)");
  auto* pe = cmd->add_option("--project-examples", f->project_examples,
                             "Project a job of N examples at the run's tokens per example");
  auto* pp = cmd->add_option("--project-epochs", f->project_epochs,
                             "Project a job of N epochs of the run's data set");
  pt->excludes(pe)->excludes(pp);
  pe->excludes(pp);
  cmd->add_option("--energy-price", f->energy_price,
                  "Price of electricity in USD per kWh: adds the measured GPU board energy's "
                  "cost (per run, epoch, step, 1M tokens)");

  cmd->add_option("--preemptions-per-hour", f->preemptions_per_hour,
                  "Spot reclaims per hour: adds the expected time and cost with reclaims, the "
                  "chance of at least one, and the optimal checkpoint interval");

  add_common_options(cmd, f->common, /*with_dates=*/true);

  return [f]() { return run_cost(*f); };
}

}  // namespace ftbench::cli
