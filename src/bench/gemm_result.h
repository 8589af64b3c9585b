// The result of a `ftbench gemm` sweep: raw call times per shape and dtype, the figures derived
// from them, the JSON file (`ftbench gemm --json` / `-o`) and the text table. Pure and
// torch-free, so `ftbench run --gemm FILE` reads it without a device and every figure is
// recomputable from the samples (docs/methodology.md, "Measured GEMM peak").
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/gemm_sweep.h"
#include "report/report.h"
#include "util/error.h"

namespace ftbench::bench {

// "ftbench.gemm/1": what this code writes. Readers accept any "ftbench.gemm/1.x" and ignore
// fields they do not know, as for run reports.
// 1.1: the check's tolerance is per shape (it grows with k: bench/gemm_check.h) with the dtype's
// rule in words; 1.0 had one fixed tolerance per dtype.
inline constexpr const char* kGemmSchema = "ftbench.gemm/1.1";

// The fastest rate a gemm file may claim for one call, TFLOP/s: 100 PFLOP/s, over ten times
// the densest figure any accelerator's datasheet gives today. A faster "measurement" is refused
// as a time no device took.
inline constexpr double kMaxPlausibleTflops = 1e5;
// The longest time a gemm file may give one timed call: a day, far beyond any call a sweep
// makes; a longer "measurement" (1e300 s) would make a peak near zero and every utilisation
// measured against it absurd.
inline constexpr double kMaxGemmCallSeconds = 86400.0;

// A file that is not a readable gemm result; the message names the file and the JSON path.
class GemmFileError : public BadInput {
 public:
  using BadInput::BadInput;
};

struct GemmShapeResult {
  GemmShape shape;
  double flops = 0.0;                 // per call: matmul_flops(shape)
  std::vector<double> seconds;        // one per timed call, in order (raw samples)
  std::string error;                  // why the shape could not be measured; "" when it was
  std::optional<double> check_error;  // relative error of the checked output (below)
  // The largest check_error accepted for this shape (gemm_check_tolerance of the dtype and k).
  std::optional<double> check_tolerance;
  // From `seconds` (summarize_shape): mean, median and min of the call times, and the
  // throughput at each: flops / seconds / 1e12. max_tflops comes from the fastest call.
  double mean_seconds = 0.0;
  double median_seconds = 0.0;
  double min_seconds = 0.0;
  double mean_tflops = 0.0;
  double median_tflops = 0.0;
  double max_tflops = 0.0;
};

struct GemmDtypeResult {
  std::string dtype;  // bf16, fp8, fp16, tf32, fp32
  bool supported = false;
  std::string unsupported_reason;  // "" when supported
  std::string setting;             // how LibTorch was asked, e.g. "at::mm_out, bf16 in and out"
  std::string check_rule;          // the shapes' tolerance in words: gemm_check_rule(dtype)
  std::vector<GemmShapeResult> shapes;  // measured (or failed) shapes, in sweep order
  int64_t shapes_skipped = 0;           // left out when the time budget ran out
  // From the shapes (summarize_dtype): the highest per-shape median TFLOP/s and its shape, and
  // the median over shapes of the per-shape medians. Only shapes without an error count.
  std::optional<double> max_tflops;
  std::optional<GemmShape> best_shape;
  std::optional<double> median_tflops;
};

struct GemmSettings {
  std::string shapes;             // the sweep spec measured
  int64_t shape_count = 0;        // shapes it names
  int64_t warmup_iterations = 0;  // untimed calls per shape
  int64_t iterations = 0;         // timed calls per shape
  int64_t cache_flush_bytes = 0;  // buffer written before every call; 0: no flush
  double max_seconds = 0.0;       // the sweep's time budget
  std::string timer;              // "device events", "steady_clock"
  int64_t check_rows = 0;         // output rows checked against the fp64 reference
  int64_t check_columns = 0;      // output columns checked
};

struct GemmResult {
  std::string schema = kGemmSchema;
  std::string started_at_utc;
  std::string finished_at_utc;
  double total_seconds = 0.0;  // the whole sweep, setup and checks included
  report::Environment environment;
  GemmSettings settings;
  std::vector<GemmDtypeResult> dtypes;  // in the order measured
};

// The figures of one shape from its call times. Throws std::invalid_argument on a non-finite or
// non-positive sample. No samples: every figure 0.
GemmShapeResult summarize_shape(const GemmShape& shape, std::vector<double> seconds);

// Fills max_tflops, best_shape and median_tflops from the shapes measured without error (ties
// for the best go to the earlier shape); leaves them unset when there is none.
void summarize_dtype(GemmDtypeResult& dtype);

// The dtype's result when it was measured (supported, at least one shape without error), else
// nullptr.
const GemmDtypeResult* find_measured(const GemmResult& result, std::string_view dtype);

// Whether every measured shape (no error) was checked and its check_error is within its
// tolerance; the first that is not, as "bf16 4096x4096x4096: relative error 0.31 > tolerance
// 0.25 (2^-8 + 2^-9 x sqrt(k))" or "... measured but was not checked", in `failure`.
bool checks_passed(const GemmResult& result, std::string* failure);

nlohmann::ordered_json to_json(const GemmResult& result);
// Throws GemmFileError naming `source` and the JSON path of the first problem.
GemmResult gemm_from_json(const nlohmann::json& json, const std::string& source);
GemmResult read_gemm_result(const std::string& path);
// The same from the file's text; `source` stands for the file name in messages.
GemmResult parse_gemm_result(std::string_view text, const std::string& source);

// Per dtype a table of shapes (mean, median and max TFLOP/s, check error), then one summary line
// per dtype (max, best shape, median over shapes; or why it was not measured) and the total
// time. Numbers with 4 significant digits, "C" locale.
std::string render_gemm_text(const GemmResult& result);

// What a run report carries of a gemm result (report::MeasuredGemm): the per-dtype figures of
// the measured dtypes, where and when they were measured, and `source` (the file).
report::MeasuredGemm carried_gemm(const GemmResult& result, const std::string& source);

}  // namespace ftbench::bench
