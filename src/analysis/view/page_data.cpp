#include "analysis/view/page_data.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "analysis/compare/verdicts.h"
#include "economics/cost/estimate.h"
#include "economics/cost/pricing.h"
#include "report/metrics/run_summary.h"
#include "util/error.h"
#include "util/text/json_values.h"
#include "util/version.h"

namespace ftbench::view {
namespace {

using OJson = nlohmann::ordered_json;
using text::number_or_null;
using text::optional_integer;
using text::optional_number;

std::string label_of(std::size_t i) { return std::string(1, static_cast<char>('A' + i)); }

// The per-step series, one array each (index i is the report's i-th step).
OJson steps_json(const report::Report& r) {
  OJson step = OJson::array(), loss = OJson::array(), wall = OJson::array(),
        tokens = OJson::array(), lr = OJson::array(), warmup = OJson::array();
  const std::vector<bool> excluded = metrics::warmup_mask(r);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const report::StepRecord& s = r.steps[i];
    step.push_back(s.step);
    loss.push_back(number_or_null(s.loss));
    wall.push_back(s.wall_seconds);
    tokens.push_back(s.real_tokens);
    lr.push_back(s.lr);
    warmup.push_back(excluded[i]);
  }
  return {{"step", std::move(step)},
          {"loss", std::move(loss)},
          {"wall_seconds", std::move(wall)},
          {"real_tokens", std::move(tokens)},
          {"lr", std::move(lr)},
          {"warmup", std::move(warmup)}};
}

OJson evaluations_json(const report::Report& r) {
  OJson after = OJson::array(), loss = OJson::array();
  for (const report::Evaluation& e : r.evaluations) {
    after.push_back(e.after_step);
    loss.push_back(number_or_null(e.loss));
  }
  return {{"after_step", std::move(after)}, {"loss", std::move(loss)}};
}

OJson step_time_json(const report::Report& r) {
  const report::SampleSummary& s = r.summary.step_seconds;
  std::vector<double> measured;
  const std::vector<bool> excluded = metrics::warmup_mask(r);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (!excluded[i]) measured.push_back(r.steps[i].wall_seconds);
  }
  const Histogram h = histogram(measured, histogram_bins(measured.size()));
  return {{"summary",
           {{"count", s.count},
            {"mean", s.mean},
            {"median", s.median},
            {"p90", s.p90},
            {"p99", s.p99},
            {"min", s.min},
            {"max", s.max},
            {"stddev", s.stddev},
            {"cv", s.cv}}},
          {"warmup_steps_excluded", r.summary.warmup_steps_excluded},
          {"histogram", {{"edges", h.edges}, {"counts", h.counts}}}};
}

OJson timeline_json(const report::Report& r) {
  OJson bars = OJson::array();
  for (const TimelineBar& b : timeline(r)) {
    bars.push_back(
        {{"phase", b.phase}, {"start_seconds", b.start_seconds}, {"end_seconds", b.end_seconds}});
  }
  OJson phases = OJson::array();
  for (const report::Phase& p : r.phases) {
    phases.push_back(
        {{"name", p.name}, {"start_seconds", p.start_seconds}, {"seconds", p.seconds}});
  }
  // As cost and compare take it: over every process of a resumed run.
  const double to_first_step = r.phases.empty() ? r.time_to_first_step_seconds
                                                : cost::run_times(r).time_to_first_step_seconds;
  return {{"t0_source", r.t0_source},
          {"t0_before_process_seconds", r.t0_before_process_seconds},
          {"time_to_first_step_seconds", to_first_step},
          {"processes", std::max<std::size_t>(1, r.segments.size())},
          {"bars", std::move(bars)},
          {"phases", std::move(phases)}};
}

OJson memory_json(const report::Report& r) {
  OJson rows = OJson::array();
  for (const PhaseMemoryRow& m : memory_by_phase(r)) {
    rows.push_back({{"phase", m.phase},
                    {"peak_rss_bytes", optional_integer(m.peak_rss_bytes)},
                    {"peak_allocated_bytes", optional_integer(m.peak_allocated_bytes)},
                    {"device_used_peak_bytes", optional_integer(m.device_used_peak_bytes)}});
  }
  const report::Memory& m = r.memory;
  return {{"by_phase", std::move(rows)},
          {"peak_rss_bytes", optional_integer(m.peak_rss_bytes)},
          {"peak_allocated_bytes", optional_integer(m.peak_allocated_bytes)},
          {"peak_reserved_bytes", optional_integer(m.peak_reserved_bytes)},
          {"device_used_peak_bytes", optional_integer(m.device_used_peak_bytes)},
          {"device_total_bytes", optional_integer(m.device_total_bytes)},
          {"predicted_peak_bytes", optional_integer(m.predicted_peak_bytes)}};
}

OJson mfu_json(const report::Report& r) {
  OJson entries = OJson::array();
  for (const report::MfuEntry& e : r.summary.mfu) {
    entries.push_back({{"formula", e.formula},
                       {"recompute", e.recompute},
                       {"achieved_tflops", e.achieved_tflops},
                       {"mfu", optional_number(e.mfu)},
                       {"mfu_gemm", optional_number(e.mfu_gemm)}});
  }
  return {{"peak_tflops", optional_number(r.summary.peak_tflops)},
          {"peak_source", r.summary.peak_source},
          {"gemm_peak_tflops", optional_number(r.summary.gemm_peak_tflops)},
          {"gemm_peak_source", r.summary.gemm_peak_source},
          {"entries", std::move(entries)}};
}

OJson priced_offer_json(const cost::PricedOffer& p) {
  const double before = std::min(p.cost.before_first_step_usd, p.cost.billed_usd);
  return {{"name", p.offer != nullptr ? cost::offer_name(*p.offer) : p.rate.label},
          {"billing", cost::describe_rate(p.rate)},
          {"usd_per_gpu_hour", p.rate.usd_per_gpu_hour},
          {"gpus_billed", p.cost.gpus_billed},
          {"before_first_step_usd", before},
          {"from_first_step_usd", p.cost.billed_usd - before},
          {"billed_usd", p.cost.billed_usd},
          {"chosen", p.chosen},
          {"flags", p.flags}};
}

// Every catalog offer of the report's GPU, and the price it is set at; a report that cannot be
// priced (a CPU run without --rate) says why instead.
OJson cost_json(const PageInput& in, std::size_t i) {
  OJson out = {{"rate", nullptr}, {"reason", ""}, {"offers", OJson::array()}};
  if (in.catalog == nullptr) {
    out["reason"] = "no catalog";
    return out;
  }
  cost::PricingRequest request;
  if (i < in.rates.size()) request.rate = in.rates[i];
  request.today = in.today;
  request.max_age_days = in.max_age_days;
  try {
    const cost::RunPricing p = cost::price_run(in.reports[i], *in.catalog, request);
    out["rate"] = p.chosen.rate.label;
    // A price taken from a catalog offer (compare's choice, --offer) is that offer's row, with
    // its flags; a --rate is a row of its own.
    const auto is_chosen = [&](const cost::PricedOffer& o) {
      return o.offer != nullptr && cost::offer_name(*o.offer) == p.chosen.rate.label &&
             o.rate.usd_per_gpu_hour == p.chosen.rate.usd_per_gpu_hour;
    };
    const bool in_catalog = std::any_of(p.offers.begin(), p.offers.end(), is_chosen);
    if (!in_catalog) out["offers"].push_back(priced_offer_json(p.chosen));
    for (const cost::PricedOffer& o : p.offers) {
      OJson j = priced_offer_json(o);
      j["chosen"] = is_chosen(o);
      out["offers"].push_back(std::move(j));
    }
  } catch (const cost::PricingError& e) {
    out["reason"] = e.what();
  } catch (const std::invalid_argument& e) {
    throw BadInput(in.sources[i] + ": " + e.what());
  }
  return out;
}

// The figures the page opens with: the run's time from t0 to the end (every process of a resumed
// run), real tokens/s over the measured steps, the bill at the price the run is set at (the
// cost section's chosen offer) and the first MFU entry; null where the report has none.
OJson headline_json(const report::Report& r, const OJson& cost) {
  OJson out = {{"run_seconds", nullptr},
               {"tokens_per_second", nullptr},
               {"cost_usd", nullptr},
               {"cost_rate", nullptr},
               {"mfu", nullptr}};
  if (!r.phases.empty()) out["run_seconds"] = cost::run_times(r).run_seconds;
  if (r.summary.measured_steps > 0) out["tokens_per_second"] = r.summary.tokens_per_second_real;
  for (const OJson& o : cost["offers"]) {
    if (!o["chosen"].get<bool>()) continue;
    out["cost_usd"] = o["billed_usd"];
    out["cost_rate"] = cost["rate"];
  }
  if (!r.summary.mfu.empty()) out["mfu"] = optional_number(r.summary.mfu.front().mfu);
  return out;
}

// One axis for each memory chart, over every report's phases: host (peak RSS) and device (the
// allocator's peak and the device-wide used peak); null where no phase measured it.
OJson memory_axes_json(const PageInput& in) {
  std::optional<int64_t> host, device;
  const auto larger = [](std::optional<int64_t>& into, const std::optional<int64_t>& v) {
    if (v && (!into || *v > *into)) into = v;
  };
  for (const report::Report& r : in.reports) {
    for (const PhaseMemoryRow& m : memory_by_phase(r)) {
      larger(host, m.peak_rss_bytes);
      larger(device, m.peak_allocated_bytes);
      larger(device, m.device_used_peak_bytes);
    }
  }
  const auto axis = [](const std::optional<int64_t>& largest) -> OJson {
    if (!largest) return nullptr;
    const ByteAxis a = byte_axis(static_cast<double>(*largest));
    return {{"unit", a.unit},
            {"unit_bytes", a.unit_bytes},
            {"step_bytes", a.step_bytes},
            {"top_bytes", a.top_bytes}};
  };
  return {{"host", axis(host)}, {"device", axis(device)}};
}

OJson report_json(const PageInput& in, std::size_t i) {
  const report::Report& r = in.reports[i];
  const report::DeviceInfo& d = r.environment.device;
  OJson j = {{"label", label_of(i)},
             {"source", in.sources[i]},
             {"run_name", r.run_name},
             {"status", r.status},
             {"error", r.error},
             {"schema", r.schema},
             {"device", d.name},
             {"backend", d.backend},
             {"gpus", r.world_size},
             {"started_at_utc", r.started_at_utc},
             {"finished_at_utc", r.finished_at_utc}};
  j["steps"] = steps_json(r);
  j["evaluations"] = evaluations_json(r);
  j["step_time"] = step_time_json(r);
  j["timeline"] = timeline_json(r);
  j["memory"] = memory_json(r);
  // A run without measured steps has no throughput (null, drawn as none), not 0 tokens/s.
  const bool measured = r.summary.measured_steps > 0;
  const auto if_measured = [&](double v) { return measured ? OJson(v) : OJson(nullptr); };
  j["throughput"] = {{"tokens_per_second_real", if_measured(r.summary.tokens_per_second_real)},
                     {"tokens_per_second_padded", if_measured(r.summary.tokens_per_second_padded)},
                     {"padding_fraction", if_measured(r.summary.padding_fraction)}};
  j["mfu"] = mfu_json(r);
  j["cost"] = cost_json(in, i);
  j["headline"] = headline_json(r, j["cost"]);
  j["loss"] = {{"final", number_or_null(r.summary.final_loss)},
               {"window", r.summary.loss_window},
               {"mean_last", number_or_null(r.summary.mean_last_losses)}};
  j["fingerprints"] = {{"spec", r.spec_fingerprint},
                       {"data", r.data ? r.data->fingerprint : std::string()},
                       {"weights", r.weights ? r.weights->fingerprint : std::string()}};
  j["spec"] = r.spec;
  j["environment"] = report::to_json(r.environment);
  return j;
}

OJson comparison_json(const PageInput& in) {
  if (in.reports.size() < 2) return nullptr;
  const PageComparison c = compare_reports(in);
  OJson differences = OJson::array();
  for (const compare::Difference& d : c.fairness.differences) {
    differences.push_back({{"what", d.what},
                           {"severity", compare::to_string(d.severity)},
                           {"values", d.values},
                           {"note", d.note}});
  }
  return {{"kind", compare::fairness_kind(c.fairness)},
          {"headline", compare::fairness_headline(c.fairness)},
          {"refused", !c.fairness.same_job},
          {"differences", std::move(differences)},
          {"verdicts", c.sentences},
          {"alpha", in.alpha}};
}

void check_input(const PageInput& in) {
  if (in.reports.empty()) throw BadInput("no report given");
  if (in.sources.size() != in.reports.size()) {
    throw std::logic_error("view::PageInput: one source per report");
  }
  if (in.reports.size() > 26) {
    throw BadInput("at most 26 reports (labelled A to Z), found " +
                   std::to_string(in.reports.size()));
  }
}

}  // namespace

Histogram histogram(const std::vector<double>& samples, int64_t bins) {
  Histogram h;
  if (samples.empty() || bins < 1) return h;
  const auto [lo_it, hi_it] = std::minmax_element(samples.begin(), samples.end());
  const double lo = *lo_it;
  const double hi = *hi_it;
  if (!(hi > lo)) {
    h.edges = {lo, hi};
    h.counts = {static_cast<int64_t>(samples.size())};
    return h;
  }
  const double width = (hi - lo) / static_cast<double>(bins);
  for (int64_t b = 0; b < bins; ++b) h.edges.push_back(lo + width * static_cast<double>(b));
  h.edges.push_back(hi);
  h.counts.assign(static_cast<std::size_t>(bins), 0);
  for (double v : samples) {
    // The bin whose edges hold v: the last edge at or below it (the largest in the last bin).
    const auto above = std::upper_bound(h.edges.begin(), h.edges.end(), v);
    const auto bin = std::min<std::ptrdiff_t>(above - h.edges.begin() - 1, bins - 1);
    ++h.counts[static_cast<std::size_t>(bin)];
  }
  return h;
}

int64_t histogram_bins(std::size_t samples) {
  if (samples == 0) return 0;
  const auto n = static_cast<int64_t>(samples);
  int64_t k = 1;
  while (k < kMaxHistogramBins && k * k * k < 8 * n) ++k;
  return std::min(k, n);
}

ByteAxis byte_axis(double largest_bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr int kMaxSteps = 8;
  ByteAxis a;
  a.unit = kUnits[0];
  if (!(largest_bytes > 0.0) || !std::isfinite(largest_bytes)) return a;
  for (std::size_t u = 1; u < std::size(kUnits) && largest_bytes >= 2.0 * a.unit_bytes * 1024.0;
       ++u) {
    a.unit = kUnits[u];
    a.unit_bytes *= 1024.0;
  }
  // The least of 1, 2, 5, 10, 20, 50, ... units that covers the largest value in kMaxSteps.
  for (double decade = 1.0;; decade *= 10.0) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double step = m * decade * a.unit_bytes;
      const double steps = std::ceil(largest_bytes / step);
      if (steps <= kMaxSteps) {
        a.step_bytes = step;
        a.top_bytes = steps * step;
        return a;
      }
    }
  }
}

std::vector<TimelineBar> timeline(const report::Report& r) {
  std::vector<TimelineBar> bars;
  // A resumed run's earlier processes, each a rental of its own, come first, one after the
  // other; this process's phases follow them.
  double offset = 0.0;
  for (std::size_t i = 0; i + 1 < r.segments.size(); ++i) {
    const report::Segment& g = r.segments[i];
    bars.push_back(
        {fmt::format("process {} (resumed after)", g.index), offset, offset + g.run_seconds});
    offset += g.run_seconds;
  }
  if (r.t0_before_process_seconds > 0.0) {
    bars.push_back({"t0 to process start", offset, offset + r.t0_before_process_seconds});
  }
  const double shift = offset + r.t0_before_process_seconds;
  for (const report::Phase& p : r.phases) {
    const double start = shift + p.start_seconds;
    const double end = start + p.seconds;
    if (!bars.empty() && bars.back().phase == p.name) {
      bars.back().end_seconds = std::max(bars.back().end_seconds, end);
      continue;
    }
    bars.push_back({p.name, start, end});
  }
  return bars;
}

std::vector<PhaseMemoryRow> memory_by_phase(const report::Report& r) {
  std::vector<PhaseMemoryRow> rows;
  const auto larger = [](std::optional<int64_t>& into, const std::optional<int64_t>& v) {
    if (v && (!into || *v > *into)) into = v;
  };
  for (const report::Phase& p : r.phases) {
    if (!p.memory) continue;
    auto row = std::find_if(rows.begin(), rows.end(),
                            [&](const PhaseMemoryRow& m) { return m.phase == p.name; });
    if (row == rows.end()) row = rows.insert(rows.end(), PhaseMemoryRow{p.name, {}, {}, {}});
    larger(row->peak_rss_bytes, p.memory->peak_rss_bytes);
    larger(row->peak_allocated_bytes, p.memory->peak_allocated_bytes);
    larger(row->device_used_peak_bytes, p.memory->device_used_peak_bytes);
  }
  return rows;
}

PageComparison compare_reports(const PageInput& in) {
  check_input(in);
  PageComparison c;
  c.fairness = compare::check_fairness(in.reports);
  compare::SideBySideOptions options;
  options.rates = in.rates;
  options.sources = in.sources;
  try {
    c.columns = compare::side_by_side(in.reports, options);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  if (c.fairness.same_job) c.sentences = compare::verdicts(c.columns, in.alpha);
  return c;
}

nlohmann::ordered_json page_data(const PageInput& in) {
  check_input(in);
  OJson reports = OJson::array();
  for (std::size_t i = 0; i < in.reports.size(); ++i) reports.push_back(report_json(in, i));
  return {{"schema", kPageSchema},
          {"generated_by", std::string("ftbench ") + version()},
          {"reports", std::move(reports)},
          {"memory_axes", memory_axes_json(in)},
          {"comparison", comparison_json(in)}};
}

}  // namespace ftbench::view
