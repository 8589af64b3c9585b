// What an HTML report draws and a markdown summary lists, computed once from the reports: the
// loss curves, step times and their distribution, the phases on the rented timeline from t0,
// memory by phase, throughput, MFU, each offer's bill split at the first step, the comparison's
// verdict, and the spec, environment and fingerprints. The page's script only hands these to the
// charting library; nothing is computed in the browser (docs/html-report.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare/fairness.h"
#include "analysis/compare/side_by_side.h"
#include "economics/cost/billing.h"
#include "economics/cost/catalog.h"
#include "report/report.h"

namespace ftbench::view {

// The version of the page's data object (window.ftbench.data, docs/html-report.md).
inline constexpr const char* kPageSchema = "ftbench.html-report/1";
// The most bins a step-time histogram is drawn with.
inline constexpr int64_t kMaxHistogramBins = 30;

struct PageInput {
  std::vector<report::Report> reports;
  std::vector<std::string> sources;              // the files they were read from, one each
  std::vector<std::optional<cost::Rate>> rates;  // the price each is set at; empty or nullopt: none
  const cost::Catalog* catalog = nullptr;  // every offer of each report's GPU is priced from it
  cost::Date today;                        // for the offers' ages
  int64_t max_age_days = 90;
  double alpha = 0.05;  // significance level of the step-time test
};

// Equal-width bins from the least to the largest sample; a sample on an inner edge counts in
// the bin above it, the largest in the last bin. All samples equal: one bin [v, v]. None: empty.
struct Histogram {
  std::vector<double> edges;  // bins + 1 edges
  std::vector<int64_t> counts;
};
Histogram histogram(const std::vector<double>& samples, int64_t bins);

// How many bins `samples` values fill: 2 n^(1/3) rounded up (Rice's rule: the least k with
// k^3 >= 8n, in integers), at most kMaxHistogramBins and at most n; 0 for none. 6 samples: 4
// bins (not 30 with 24 empty); 100: 10; 370: 15; 3375 and more: 30.
int64_t histogram_bins(std::size_t samples);

// A memory chart's value axis, its ticks at whole multiples of a round step of one binary unit:
// 1, 2 or 5 x 10^k of B, KiB, MiB, GiB, TiB, PiB or EiB (k >= 0), from 0 to `top_bytes`, at
// most 8 steps. The unit is the largest that the largest value holds at least twice, so that
// 1.2 GiB reads 0 to 1400 MiB by 200 and 9 GiB reads 0 to 10 GiB by 2. Byte counts are doubles
// here as in the page's script (powers of two and their round multiples stay exact).
struct ByteAxis {
  std::string unit;         // "MiB"
  double unit_bytes = 1.0;  // 1048576
  double step_bytes = 1.0;  // between two ticks
  double top_bytes = 1.0;   // the last tick: a whole number of steps, at least the largest value
};
ByteAxis byte_axis(double largest_bytes);

// A stretch of the run on the rented timeline, in seconds from t0 (the instance's start when a
// wrapper passed one, else the process start): a resumed run's earlier processes first ("process
// N (resumed after)", each its segment's run_seconds, one after the other), then "t0 to process
// start" when t0_before_process_seconds is above 0, then this process's phases shifted by both,
// consecutive phases of one name joined.
struct TimelineBar {
  std::string phase;
  double start_seconds = 0.0;
  double end_seconds = 0.0;
};
std::vector<TimelineBar> timeline(const report::Report& report);

// Memory over each kind of phase, in the order the kinds first ran: the largest figure among
// its occurrences; unset where no occurrence measured it.
struct PhaseMemoryRow {
  std::string phase;
  std::optional<int64_t> peak_rss_bytes;
  std::optional<int64_t> peak_allocated_bytes;
  std::optional<int64_t> device_used_peak_bytes;
};
std::vector<PhaseMemoryRow> memory_by_phase(const report::Report& report);

// The reports compared as `ftbench compare` compares them: fairness, each against the first, and
// the verdict sentences (left empty for different jobs, which compare refuses).
struct PageComparison {
  compare::Fairness fairness;
  std::vector<compare::Column> columns;
  std::vector<std::string> sentences;
};
PageComparison compare_reports(const PageInput& input);

// The page's data object: {"schema", "generated_by", "reports": [...], "memory_axes",
// "comparison": ...}, each field in docs/html-report.md. Throws BadInput naming the file when a
// report cannot be costed or compared.
nlohmann::ordered_json page_data(const PageInput& input);

}  // namespace ftbench::view
