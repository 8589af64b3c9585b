// `ftbench plan SPEC`: before renting, the memory the spec needs per GPU, what fits where, the
// time and the bill of the job at every catalog offer, and the cheapest that fits and meets a
// deadline and a budget (economics/plan/plan.h). Every figure is an estimate unless it says
// measured.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string_view>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/gemm_result.h"
#include "cli/commands.h"
#include "cli/inputs.h"
#include "economics/cost/pricing.h"
#include "economics/plan/plan.h"
#include "report/summary_text.h"
#include "spec/choices.h"
#include "spec/spec_loader.h"
#include "util/text/markdown.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::cli {
namespace {

struct PlanFlags {
  CommonFlags common;
  std::string spec_path;
  std::vector<std::string> overrides;
  std::string gpu;
  std::optional<int64_t> gpus;
  int64_t max_gpus = 8;
  std::string tokens;
  std::string deadline;
  std::optional<double> budget;
  std::string from_report;
  std::string gemm;
  std::optional<double> preemptions_per_hour;
  double headroom_percent = 100.0 * plan::kHeadroom;
};

using OJson = nlohmann::ordered_json;
using text::Align;
using text::Cell;
using text::format_duration;
using text::format_usd;

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// Bytes as a whole number for JSON.
int64_t bytes(double value) { return static_cast<int64_t>(std::llround(value)); }

std::string range(double low, double high, std::string (*f)(double)) {
  const std::string a = f(low);
  const std::string b = f(high);
  return a == b ? a : a + " to " + b;
}

text::Table memory_table(const plan::Plan& p) {
  text::Table t;
  t.header = {"held per GPU", "bytes", "basis"};
  t.align = {Align::kLeft, Align::kRight, Align::kLeft};
  const auto add = [&](const plan::MemoryItem& i) {
    t.rows.push_back({i.name, text::format_bytes(static_cast<int64_t>(i.bytes)), i.basis});
  };
  for (const plan::MemoryItem& i : p.memory.held) add(i);
  for (const plan::MemoryItem& i : p.memory.activations) add(i);
  add(p.memory.transient);
  t.rows.push_back({Cell("peak of tensors", text::Color::kBold),
                    text::format_bytes(static_cast<int64_t>(p.memory.peak_bytes)),
                    "at " + p.memory.peak_at});
  const double device = plan::device_bytes_needed(p.memory, p.overheads);
  t.rows.push_back(
      {"device memory needed", text::format_bytes(static_cast<int64_t>(device)),
       fmt::format("peak x {:.2f} (allocator fragmentation) + {} context + {} workspaces",
                   1.0 + p.overheads.fragmentation, gb(p.overheads.context_bytes),
                   gb(p.overheads.workspace_bytes))});
  return t;
}

// Every checkpointing policy: what it holds and needs, and its work against none's.
text::Table policies_table(const plan::Plan& p) {
  text::Table t;
  t.header = {"checkpointing", "activations", "peak of tensors", "device memory needed",
              "FLOPs a token", "work",        "breakdown above"};
  t.align = {Align::kLeft,  Align::kRight, Align::kRight, Align::kRight,
             Align::kRight, Align::kRight, Align::kLeft};
  const double none = p.policies.empty() ? 0.0 : p.policies.front().flops_per_token;
  for (const plan::PolicyEstimate& e : p.policies) {
    t.rows.push_back(
        {e.policy, text::format_bytes(static_cast<int64_t>(e.memory.activation_bytes)),
         text::format_bytes(static_cast<int64_t>(e.memory.peak_bytes)),
         text::format_bytes(static_cast<int64_t>(e.needed_bytes)),
         fmt::format("{:.4g}", e.flops_per_token),
         none > 0 ? fmt::format("{:+.1f} %", 100.0 * (e.flops_per_token / none - 1.0)) : "n/a",
         e.policy == p.memory_policy ? "yes" : ""});
  }
  return t;
}

text::Table fits_table(const plan::Plan& p) {
  text::Table t;
  t.header = {"GPU", "memory", "needs", "fits", "largest micro-batch", "planned checkpointing",
              "note"};
  t.align = {Align::kLeft,  Align::kRight, Align::kRight, Align::kLeft,
             Align::kRight, Align::kLeft,  Align::kLeft};
  for (const plan::GpuFit& f : p.fits) {
    t.rows.push_back({f.gpu.name, f.memory_bytes ? gb(*f.memory_bytes) : "n/a", gb(f.needed_bytes),
                      !f.memory_bytes ? Cell("unknown")
                      : f.fits        ? Cell("yes", text::Color::kGreen)
                                      : Cell("no", text::Color::kRed),
                      std::to_string(f.largest_micro_batch), f.checkpointing, f.note});
  }
  return t;
}

// An offer's flags less its price flags, which have a column of their own beside the price.
std::string other_flags(const plan::OfferPlan& o) {
  if (o.price_flags.empty()) return o.flags;
  std::string rest = o.flags;
  for (const std::string& part : {o.price_flags + "; ", "; " + o.price_flags, o.price_flags}) {
    const std::size_t at = rest.find(part);
    if (at != std::string::npos) return rest.erase(at, part.size());
  }
  return rest;
}

text::Table offers_table(const plan::Plan& p, bool spot) {
  text::Table t;
  t.header = {"offer", "GPUs", "$/GPU-h", "price flags", "time (estimate)", "billed (estimate)"};
  if (spot) t.header.push_back("spot, expected");
  t.header.push_back("throughput basis");
  t.header.push_back("flags");
  t.align = {Align::kLeft, Align::kRight, Align::kRight,
             Align::kLeft, Align::kRight, Align::kRight};
  if (spot) t.align.push_back(Align::kRight);
  for (std::size_t i = 0; i < p.offers.size(); ++i) {
    const plan::OfferPlan& o = p.offers[i];
    const bool chosen = p.recommended && *p.recommended == i;
    std::vector<Cell> row = {
        Cell(cost::offer_name(o.offer) + (chosen ? " *" : ""),
             chosen ? text::Color::kBold : text::Color::kNone),
        std::to_string(o.gpus),
        format_usd(o.offer.usd_per_gpu_hour),
        Cell(o.price_flags, o.price_flags.empty() ? text::Color::kNone : text::Color::kYellow),
        o.time.tflops_low > 0
            ? range(o.time.run_seconds_low, o.time.run_seconds_high, &format_duration)
            : "n/a",
        o.timed ? range(o.cost_low.billed_usd, o.cost_high.billed_usd, &format_usd) : "n/a"};
    if (spot) row.emplace_back(o.spot_expected_usd ? format_usd(*o.spot_expected_usd) : "");
    row.emplace_back(o.time.throughput_basis);
    const std::string rest = other_flags(o);
    row.emplace_back(rest, rest.empty() ? text::Color::kNone : text::Color::kYellow);
    t.rows.push_back(std::move(row));
  }
  return t;
}

bool any_spot(const plan::Plan& p) {
  for (const plan::OfferPlan& o : p.offers) {
    if (o.spot) return true;
  }
  return false;
}

std::string recommendation_text(const plan::Plan& p) {
  std::string s = "recommended: " + p.recommendation;
  if (p.break_even_usd_per_gpu_hour) {
    s += fmt::format("\nthe runner-up ({}, {}/GPU-h) bills the same at {}/GPU-h",
                     cost::offer_selector(p.offers[1].offer),
                     format_usd(p.offers[1].offer.usd_per_gpu_hour),
                     format_usd(*p.break_even_usd_per_gpu_hour));
  }
  return s;
}

OJson cost_json(const cost::Cost& c) {
  return {{"gpus_billed", c.gpus_billed},
          {"run_seconds", c.run_seconds},
          {"billed_seconds", c.billed_seconds},
          {"billed_usd", c.billed_usd}};
}

OJson spot_json(const plan::OfferPlan& o) {
  if (!o.spot) return nullptr;
  const cost::SpotRisk& s = *o.spot;
  const auto opt = [](const std::optional<double>& v) { return v ? OJson(*v) : OJson(nullptr); };
  return {{"p_at_least_one", s.p_at_least_one},
          {"expected_seconds", opt(s.expected_seconds)},
          {"expected_interruptions", opt(s.expected_interruptions)},
          {"optimal_interval_seconds", opt(s.optimal_interval_seconds)},
          {"expected_usd", opt(o.spot_expected_usd)}};
}

void print_json(const plan::Plan& p, const plan::PlanRequest& r) {
  OJson out;
  OJson memory;
  for (const auto* items : {&p.memory.held, &p.memory.activations}) {
    for (const plan::MemoryItem& i : *items) {
      memory["items"].push_back({{"name", i.name}, {"bytes", bytes(i.bytes)}, {"basis", i.basis}});
    }
  }
  memory["items"].push_back({{"name", p.memory.transient.name},
                             {"bytes", bytes(p.memory.transient.bytes)},
                             {"basis", p.memory.transient.basis}});
  memory["peak_bytes"] = bytes(p.memory.peak_bytes);
  memory["peak_at"] = p.memory.peak_at;
  memory["device_bytes_needed"] = bytes(plan::device_bytes_needed(p.memory, p.overheads));
  memory["overheads"] = {{"context_bytes", p.overheads.context_bytes},
                         {"workspace_bytes", p.overheads.workspace_bytes},
                         {"fragmentation", p.overheads.fragmentation}};
  out["estimate"] = true;
  const auto opt = [](const std::optional<double>& v) { return v ? OJson(*v) : OJson(nullptr); };
  out["request"] = {{"gpu", r.gpu},
                    {"gpus", r.gpus ? OJson(*r.gpus) : OJson(nullptr)},
                    {"max_gpus", r.max_gpus},
                    {"tokens", opt(r.tokens)},
                    {"deadline_seconds", opt(r.deadline_seconds)},
                    {"budget_usd", opt(r.budget_usd)},
                    {"preemptions_per_hour", opt(r.preemptions_per_hour)},
                    {"headroom", r.headroom},
                    {"from_report", r.from_report_path},
                    {"gemm", r.gemm_path}};
  memory["checkpointing"] = p.memory_policy;
  out["memory"] = memory;
  out["checkpointing_policies"] = OJson::array();
  for (const plan::PolicyEstimate& e : p.policies) {
    out["checkpointing_policies"].push_back({{"policy", e.policy},
                                             {"activation_bytes", bytes(e.memory.activation_bytes)},
                                             {"peak_bytes", bytes(e.memory.peak_bytes)},
                                             {"device_bytes_needed", bytes(e.needed_bytes)},
                                             {"flops_per_token", e.flops_per_token}});
  }
  out["fits"] = OJson::array();
  for (const plan::GpuFit& f : p.fits) {
    out["fits"].push_back(
        {{"gpu", f.gpu.name},
         {"memory_bytes", f.memory_bytes ? OJson(bytes(*f.memory_bytes)) : OJson(nullptr)},
         {"usable_bytes", bytes(f.usable_bytes)},
         {"needed_bytes", bytes(f.needed_bytes)},
         {"fits", f.fits},
         {"largest_micro_batch", f.largest_micro_batch},
         {"checkpointing", f.checkpointing},
         {"needs_checkpointing", f.needs_checkpointing},
         {"gpus_with_sharded_base", f.gpus_with_sharded_base},
         {"note", f.note}});
  }
  out["offers"] = OJson::array();
  for (std::size_t i = 0; i < p.offers.size(); ++i) {
    const plan::OfferPlan& o = p.offers[i];
    out["offers"].push_back(
        {{"offer", cost::offer_selector(o.offer)},
         {"name", cost::offer_name(o.offer)},
         {"recommended", p.recommended && *p.recommended == i},
         {"gpus", o.gpus},
         {"usd_per_gpu_hour", o.offer.usd_per_gpu_hour},
         {"price_flags", o.price_flags},
         {"tokens", o.time.tokens},
         {"steps", o.time.steps},
         {"flops_per_token", o.time.flops_per_token},
         {"tflops_per_gpu", {o.time.tflops_low, o.time.tflops_high}},
         {"throughput_basis", o.time.throughput_basis},
         {"measured", o.time.measured},
         {"setup_seconds", {o.time.setup_seconds_low, o.time.setup_seconds_high}},
         {"setup_basis", o.time.setup_basis},
         {"run_seconds", {o.time.run_seconds_low, o.time.run_seconds_high}},
         {"cost_fast", cost_json(o.cost_low)},
         {"cost_slow", cost_json(o.cost_high)},
         {"fits", o.fits},
         {"meets_deadline", o.meets_deadline},
         {"within_budget", o.within_budget},
         {"spot", spot_json(o)},
         {"flags", o.flags}});
  }
  out["recommendation"] = p.recommendation;
  out["recommended"] =
      p.recommended ? OJson(cost::offer_selector(p.offers[*p.recommended].offer)) : OJson(nullptr);
  out["break_even_usd_per_gpu_hour"] =
      p.break_even_usd_per_gpu_hour ? OJson(*p.break_even_usd_per_gpu_hour) : OJson(nullptr);
  std::cout << out.dump(2) << "\n";
}

// The policy of the memory breakdown: the spec's, or auto's choice on the first GPU planned.
std::string memory_policy_label(const plan::Plan& p, const plan::PlanRequest& r) {
  if (r.spec.model.activation_checkpointing != spec::choice::checkpointing::kAuto) {
    return p.memory_policy;
  }
  return p.fits.empty()
             ? "auto: " + p.memory_policy
             : fmt::format("auto: {}, as on the {}", p.memory_policy, p.fits.front().gpu.name);
}

void print_text(const plan::Plan& p, const plan::PlanRequest& r, const PlanFlags& f, bool color) {
  std::cout << text::paint(fmt::format("Memory on one GPU (estimate, fused attention, "
                                       "checkpointing {})",
                                       memory_policy_label(p, r)),
                           text::Color::kBold, color)
            << "\n"
            << text::render_text(memory_table(p), color) << "\n"
            << text::paint(
                   "Each activation-checkpointing policy (model.activation_checkpointing; "
                   "work: training FLOPs a token against none's)",
                   text::Color::kBold, color)
            << "\n"
            << text::render_text(policies_table(p), color) << "\n"
            << text::paint(fmt::format("What fits where ({:.4g} % of each GPU's memory left free)",
                                       f.headroom_percent),
                           text::Color::kBold, color)
            << "\n"
            << text::render_text(fits_table(p), color) << "\n"
            << text::paint(
                   "Time and bill of the job at each offer (estimates; the offers that "
                   "qualify first, each by its bill at the slow end)",
                   text::Color::kBold, color)
            << "\n"
            << text::render_text(offers_table(p, any_spot(p)), color) << "\n"
            << recommendation_text(p) << "\n";
}

// The recommendation's lines quote catalog strings (offer names): each shown as text.
std::string markdown_lines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    out += text::markdown_literal(std::string_view(text).substr(start, end - start)) + "\n";
    start = end + 1;
  }
  return out;
}

void print_markdown(const plan::Plan& p, const plan::PlanRequest& r) {
  std::cout << "### Memory on one GPU (estimate, checkpointing "
            << text::markdown_literal(memory_policy_label(p, r)) << ")\n\n"
            << text::render_markdown(memory_table(p))
            << "\n### Each activation-checkpointing policy\n\n"
            << text::render_markdown(policies_table(p)) << "\n### What fits where\n\n"
            << text::render_markdown(fits_table(p))
            << "\n### Time and bill of the job at each offer (estimates)\n\n"
            << text::render_markdown(offers_table(p, any_spot(p))) << "\n"
            << markdown_lines(recommendation_text(p));
}

plan::PlanRequest request_of(const PlanFlags& f) {
  plan::PlanRequest r;
  r.spec = spec::load_spec(f.spec_path, f.overrides);
  r.gpu = f.gpu;
  r.gpus = f.gpus;
  r.max_gpus = f.max_gpus;
  if (!f.tokens.empty()) {
    r.tokens = parse_count(f.tokens, "--tokens");
    if (*r.tokens < 1.0) {
      throw InputError(fmt::format("--tokens: expected at least 1 token, found {}", f.tokens));
    }
  }
  if (!f.deadline.empty()) r.deadline_seconds = parse_duration(f.deadline, "--deadline");
  if (f.budget) {
    if (!std::isfinite(*f.budget) || *f.budget <= 0.0) {
      throw InputError(fmt::format("--budget: expected dollars above 0, found {}", *f.budget));
    }
    r.budget_usd = f.budget;
  }
  if (f.preemptions_per_hour) {
    check_preemptions_per_hour(*f.preemptions_per_hour);
    r.preemptions_per_hour = f.preemptions_per_hour;
  }
  if (!(f.headroom_percent >= 0.0 && f.headroom_percent < 100.0)) {
    throw InputError(fmt::format("--headroom: expected a percentage from 0 to below 100, found {}",
                                 f.headroom_percent));
  }
  r.headroom = f.headroom_percent / 100.0;
  check_max_age_days(f.common.max_age_days);
  r.max_age_days = f.common.max_age_days;
  if (!f.from_report.empty()) {
    r.from_report = load_report(f.from_report);
    r.from_report_path = f.from_report;
  }
  if (!f.gemm.empty()) {
    try {
      r.gemm = bench::read_gemm_result(f.gemm);
    } catch (const BadInput& e) {
      throw InputError(e.what());
    }
    r.gemm_path = f.gemm;
  }
  return r;
}

int run_plan(const PlanFlags& f) {
  const text::Format format = parse_format_flag(f.common.format);
  const plan::PlanRequest request = request_of(f);
  const cost::Catalog catalog = cost::load_catalogs(f.common.catalogs);
  plan::Plan p;
  try {
    p = plan::make_plan(request, catalog, today_or(f.common.today));
  } catch (const plan::PlanError& e) {
    throw InputError(e.what());
  }
  return print_as(
      format, f.common.color,
      {[&] { print_json(p, request); },
       [&] { std::cout << text::render_csv(offers_table(p, any_spot(p))); },
       [&] { print_markdown(p, request); }, [&](bool color) { print_text(p, request, f, color); }});
}

}  // namespace

Action add_plan_command(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* cmd = add_subcommand(app, "plan");
  cmd->add_option("spec", f->spec_path, "YAML run spec")->required();
  cmd->add_option("--set", f->overrides, "Override a key: --set lora.rank=8 (repeatable)");
  cmd->add_option("--gpu", f->gpu, "Plan for this GPU only (a catalog name or alias)");
  cmd->add_option("--gpus", f->gpus, "GPUs per job (default: the fewest that fit)")
      ->check(whole_number(1, 4096));
  cmd->add_option("--max-gpus", f->max_gpus,
                  "Most GPUs to split the base across when one does not fit (default 8)")
      ->check(whole_number(1, 4096));
  cmd->add_option("--tokens", f->tokens,
                  "Tokens the job trains, as the device processes them (e.g. 22.5M; default: the "
                  "spec's steps x tokens per step)");
  cmd->add_option("--deadline", f->deadline, "Latest finish, from the rental's start (e.g. 2h)");
  cmd->add_option("--budget", f->budget, "Most dollars the job may bill");
  cmd->add_option("--from-report", f->from_report,
                  "A measured report: its throughput and set-up win over datasheet estimates");
  cmd->add_option("--gemm", f->gemm,
                  "A `ftbench gemm` result: its device's achievable peak instead of the datasheet");
  cmd->add_option("--preemptions-per-hour", f->preemptions_per_hour,
                  "Spot reclaims per hour: adds each spot offer's expected bill");
  cmd->add_option("--headroom", f->headroom_percent,
                  "Percent of each GPU's memory left free (default 10)");
  add_common_options(cmd, f->common, /*with_dates=*/true);
  return [f]() { return run_plan(*f); };
}

}  // namespace ftbench::cli
