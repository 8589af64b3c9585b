#include "bench/gemm_result.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "bench/gemm_check.h"
#include "report/report_io.h"
#include "util/io/whole_file.h"
#include "util/stats/summary.h"
#include "util/text/json_fields.h"
#include "util/text/json_parse.h"
#include "util/text/json_values.h"
#include "util/text/messages.h"
#include "util/text/table.h"

namespace ftbench::bench {
namespace {

using OJson = nlohmann::ordered_json;
using Json = nlohmann::json;

using text::number_or_null;
using text::optional_number;

// "ftbench.gemm/1" or "ftbench.gemm/1.<minor>".
bool supported_schema(const std::string& schema) {
  const std::string family = "ftbench.gemm/1";
  if (schema == family) return true;
  if (schema.size() <= family.size() + 1 || schema.compare(0, family.size(), family) != 0 ||
      schema[family.size()] != '.') {
    return false;
  }
  return std::all_of(schema.begin() + static_cast<std::ptrdiff_t>(family.size()) + 1, schema.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// Reads a gemm result; the first problem throws, naming the file and the JSON path.
class Reader : public text::JsonFields<Json, GemmFileError> {
 public:
  using JsonFields::JsonFields;

  double number(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_number()) wrong_type(join(parent, key), "a number", v);
    const double d = v.get<double>();
    if (d < 0.0) fail(join(parent, key) + ": expected a number >= 0, found " + v.dump());
    return d;
  }

  std::optional<double> optional_number(const Json& obj, const std::string& parent,
                                        const char* key) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    return number(obj, parent, key);
  }

  // An integer in [lo, hi].
  int64_t integer(const Json& obj, const std::string& parent, const char* key, int64_t lo,
                  int64_t hi) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_number_integer()) wrong_type(join(parent, key), "an integer", v);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
      fail(fmt::format("{}: expected an integer between {} and {}, found {}", join(parent, key), lo,
                       hi, v.dump()));
    }
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) {
      fail(fmt::format("{}: expected an integer between {} and {}, found {}", join(parent, key), lo,
                       hi, i));
    }
    return i;
  }

  GemmResult read(const Json& j) const {
    if (!j.is_object()) {
      fail(std::string("not an ftbench gemm result (expected a JSON object, found ") +
           j.type_name() + ")");
    }
    const auto schema = j.find("schema");
    if (schema == j.end() || !schema->is_string()) {
      fail("not an ftbench gemm result (no \"schema\" string; write one with ftbench gemm --json)");
    }
    GemmResult r;
    r.schema = schema->get<std::string>();
    if (!supported_schema(r.schema)) {
      fail("unsupported gemm result schema " + text::quoted(r.schema) + " (this ftbench reads " +
           kGemmSchema + ")");
    }
    r.started_at_utc = string(j, "", "started_at_utc");
    r.finished_at_utc = string(j, "", "finished_at_utc");
    r.total_seconds = number(j, "", "total_seconds");
    try {
      r.environment = report::environment_from_json(object(j, "", "environment"), source());
    } catch (const report::ReportError& e) {
      throw GemmFileError(e.what());
    }

    const std::string sp = "settings";
    const Json& s = object(j, "", "settings");
    constexpr int64_t kBig = int64_t{1} << 50;
    r.settings.shapes = string(s, sp, "shapes");
    r.settings.shape_count = integer(s, sp, "shape_count", 0, kMaxGemmShapes);
    r.settings.warmup_iterations = integer(s, sp, "warmup_iterations", 0, kBig);
    r.settings.iterations = integer(s, sp, "iterations", 0, kBig);
    r.settings.cache_flush_bytes = integer(s, sp, "cache_flush_bytes", 0, kBig);
    r.settings.max_seconds = number(s, sp, "max_seconds");
    r.settings.timer = string(s, sp, "timer");
    r.settings.check_rows = integer(s, sp, "check_rows", 0, kMaxGemmDimension);
    r.settings.check_columns = integer(s, sp, "check_columns", 0, kMaxGemmDimension);

    const Json& dtypes = array(j, "", "dtypes");
    for (std::size_t i = 0; i < dtypes.size(); ++i) {
      r.dtypes.push_back(read_dtype(dtypes[i], fmt::format("dtypes[{}]", i)));
      for (std::size_t earlier = 0; earlier < i; ++earlier) {
        if (r.dtypes[earlier].dtype == r.dtypes[i].dtype) {
          fail(fmt::format("dtypes[{}].dtype: {} is measured twice (also dtypes[{}])", i,
                           text::quoted(r.dtypes[i].dtype), earlier));
        }
      }
    }
    return r;
  }

 private:
  GemmDtypeResult read_dtype(const Json& d, const std::string& path) const {
    if (!d.is_object()) wrong_type(path, "an object", d);
    GemmDtypeResult out;
    out.dtype = string(d, path, "dtype");
    out.supported = boolean(d, path, "supported");
    out.unsupported_reason = string(d, path, "unsupported_reason");
    out.setting = string(d, path, "setting");
    // The tolerance comes from the rule for dtypes this ftbench knows, not from the file; a
    // dtype it does not know keeps the file's (per shape since 1.1, per dtype in 1.0).
    out.check_rule = gemm_check_rule(out.dtype);
    std::optional<double> file_tolerance;
    if (d.find("check_tolerance") != d.end()) {
      file_tolerance = optional_number(d, path, "check_tolerance");
      if (file_tolerance && !(*file_tolerance > 0.0 && *file_tolerance <= 1.0)) {
        fail(fmt::format("{}.check_tolerance: expected a relative error in (0, 1], found {}", path,
                         *file_tolerance));
      }
    }
    out.shapes_skipped = integer(d, path, "shapes_skipped", 0, kMaxGemmShapes);
    const Json& shapes = array(d, path, "shapes");
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::string shape_path = fmt::format("{}.shapes[{}]", path, i);
      GemmShapeResult shape = read_shape(shapes[i], shape_path);
      if (!shape.check_error) {
        shape.check_tolerance.reset();  // nothing was checked
      } else if (const std::optional<GemmRounding> rounding = gemm_rounding(out.dtype)) {
        shape.check_tolerance = gemm_check_tolerance(*rounding, shape.shape.k);
      } else if (!shape.check_tolerance) {
        shape.check_tolerance = file_tolerance;
      }
      if (shape.check_error && !shape.check_tolerance) {
        fail(fmt::format("{}: a check_error of dtype {} without a check_tolerance", shape_path,
                         text::quoted(out.dtype)));
      }
      out.shapes.push_back(std::move(shape));
    }
    // The summary figures are derived again from the samples, never trusted from the file.
    summarize_dtype(out);
    return out;
  }

  GemmShapeResult read_shape(const Json& s, const std::string& path) const {
    if (!s.is_object()) wrong_type(path, "an object", s);
    GemmShape shape;
    shape.m = integer(s, path, "m", 1, kMaxGemmDimension);
    shape.n = integer(s, path, "n", 1, kMaxGemmDimension);
    shape.k = integer(s, path, "k", 1, kMaxGemmDimension);
    const Json& samples = array(s, path, "samples_seconds");
    std::vector<double> seconds;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const Json& v = samples[i];
      const std::string sample_path = fmt::format("{}.samples_seconds[{}]", path, i);
      if (!v.is_number()) wrong_type(sample_path, "a number", v);
      const double x = v.get<double>();
      if (!(x > 0.0) || !std::isfinite(x)) {
        fail(fmt::format("{}: expected a time > 0, found {}", sample_path, v.dump()));
      }
      if (x > kMaxGemmCallSeconds) {
        fail(fmt::format("{}: expected at most {:.0f} s (a day) for one call, found {}",
                         sample_path, kMaxGemmCallSeconds, v.dump()));
      }
      seconds.push_back(x);
    }
    GemmShapeResult out = summarize_shape(shape, std::move(seconds));
    // A time too short for the shape's work is no measurement (and an infinite rate would
    // break every figure after it).
    if (!out.seconds.empty() && !(out.max_tflops <= kMaxPlausibleTflops)) {
      fail(fmt::format(
          "{}.samples_seconds: the fastest call, {:.3g} s for {}, is {:.3g} TFLOP/s, "
          "beyond any device (at most {:.0e}): not a measured time",
          path, out.min_seconds, shape_text(shape), out.max_tflops, kMaxPlausibleTflops));
    }
    out.error = string(s, path, "error");
    out.check_error = optional_number(s, path, "check_error");
    if (s.find("check_tolerance") != s.end()) {
      out.check_tolerance = optional_number(s, path, "check_tolerance");
      if (out.check_tolerance && !(*out.check_tolerance > 0.0 && *out.check_tolerance <= 1.0)) {
        fail(fmt::format("{}.check_tolerance: expected a relative error in (0, 1], found {}", path,
                         *out.check_tolerance));
      }
    }
    return out;
  }
};

std::string tflops_text(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

GemmShapeResult summarize_shape(const GemmShape& shape, std::vector<double> seconds) {
  GemmShapeResult r;
  r.shape = shape;
  r.flops = matmul_flops(shape);
  for (double s : seconds) {
    if (!(s > 0.0) || !std::isfinite(s)) {
      throw std::invalid_argument("gemm: call time " + std::to_string(s) + " s of " +
                                  shape_text(shape) + " is not a positive finite number");
    }
  }
  r.seconds = std::move(seconds);
  if (r.seconds.empty()) return r;
  const stats::SampleSummary s = stats::summarize(r.seconds);
  r.mean_seconds = s.mean;
  r.median_seconds = s.median;
  r.min_seconds = s.min;
  r.mean_tflops = r.flops / s.mean / 1e12;
  r.median_tflops = r.flops / s.median / 1e12;
  r.max_tflops = r.flops / s.min / 1e12;
  return r;
}

void summarize_dtype(GemmDtypeResult& d) {
  d.max_tflops.reset();
  d.best_shape.reset();
  d.median_tflops.reset();
  std::vector<double> medians;
  for (const GemmShapeResult& s : d.shapes) {
    if (!s.error.empty() || s.seconds.empty()) continue;
    medians.push_back(s.median_tflops);
    if (!d.max_tflops || s.median_tflops > *d.max_tflops) {
      d.max_tflops = s.median_tflops;
      d.best_shape = s.shape;
    }
  }
  if (!medians.empty()) d.median_tflops = stats::percentile(medians, 0.5);
}

const GemmDtypeResult* find_measured(const GemmResult& result, std::string_view dtype) {
  for (const GemmDtypeResult& d : result.dtypes) {
    if (d.dtype == dtype && d.supported && d.max_tflops) return &d;
  }
  return nullptr;
}

bool checks_passed(const GemmResult& result, std::string* failure) {
  for (const GemmDtypeResult& d : result.dtypes) {
    for (const GemmShapeResult& s : d.shapes) {
      if (!s.error.empty()) continue;  // not measured: no figure comes from it
      if (!s.check_error) {
        // The sweep checks every shape it measures: a figure without one cannot be trusted.
        if (failure != nullptr) {
          *failure = fmt::format("{} {}: measured but was not checked (no check_error)", d.dtype,
                                 shape_text(s.shape));
        }
        return false;
      }
      // NaN compares false both ways: a NaN in the output fails the check.
      const double tolerance = s.check_tolerance.value_or(0.0);
      if (!(*s.check_error <= tolerance)) {
        if (failure != nullptr) {
          *failure = fmt::format("{} {}: relative error {:.3g} > tolerance {:.3g}{}", d.dtype,
                                 shape_text(s.shape), *s.check_error, tolerance,
                                 d.check_rule.empty() ? "" : " (" + d.check_rule + ")");
        }
        return false;
      }
    }
  }
  return true;
}

// The JSON forms of a result's parts, as docs/report-schema.md ("ftbench gemm") lists them (static:
// nlohmann finds them by their types' namespace).
static void to_json(OJson& j, const GemmShape& s) { j = {{"m", s.m}, {"n", s.n}, {"k", s.k}}; }

static void to_json(OJson& j, const GemmShapeResult& s) {
  j = s.shape;
  FTBENCH_JSON_MEMBERS(j, s, flops, error, mean_seconds, median_seconds, min_seconds, mean_tflops,
                       median_tflops, max_tflops, check_error, check_tolerance);
  j["samples_seconds"] = s.seconds;
}

static void to_json(OJson& j, const GemmDtypeResult& d) {
  j = OJson::object();
  FTBENCH_JSON_MEMBERS(j, d, dtype, supported, unsupported_reason, setting, check_rule, max_tflops,
                       best_shape, median_tflops, shapes_skipped, shapes);
}

static void to_json(OJson& j, const GemmSettings& s) {
  j = OJson::object();
  FTBENCH_JSON_MEMBERS(j, s, shapes, shape_count, warmup_iterations, iterations, cache_flush_bytes,
                       max_seconds, timer, check_rows, check_columns);
}

nlohmann::ordered_json to_json(const GemmResult& r) {
  OJson j;
  j["schema"] = kGemmSchema;
  j["started_at_utc"] = r.started_at_utc;
  j["finished_at_utc"] = r.finished_at_utc;
  j["total_seconds"] = number_or_null(r.total_seconds);
  j["environment"] = report::to_json(r.environment);
  j["settings"] = r.settings;
  j["dtypes"] = r.dtypes;
  return j;
}

GemmResult gemm_from_json(const nlohmann::json& json, const std::string& source) {
  return Reader(source).read(json);
}

GemmResult read_gemm_result(const std::string& path) {
  std::string text;
  try {
    text = io::read_whole_file(path, io::kGemmResultFile);
  } catch (const io::FileReadError& e) {
    throw GemmFileError(path + ": cannot read: " + e.reason());
  }
  return parse_gemm_result(text, path);
}

GemmResult parse_gemm_result(std::string_view text, const std::string& source) {
  const Json json =
      ftbench::text::parse_json_text<Json>(text, [&](const ftbench::text::JsonTextError& e) {
        throw GemmFileError(ftbench::text::own_file_message(e, source, "gemm result"));
      });
  return gemm_from_json(json, source);
}

std::string render_gemm_text(const GemmResult& r) {
  const report::DeviceInfo& device = r.environment.device;
  std::string out = fmt::format(
      "ftbench gemm on {} ({}, LibTorch {}): {} shape{}, {} warm-up + {} timed calls each;\n"
      "{} before every call; timed by {}\n",
      device.name, device.backend, r.environment.software.libtorch_version, r.settings.shape_count,
      r.settings.shape_count == 1 ? "" : "s", r.settings.warmup_iterations, r.settings.iterations,
      r.settings.cache_flush_bytes > 0
          ? fmt::format("cache flush of {:.0f} MiB",
                        static_cast<double>(r.settings.cache_flush_bytes) / (1 << 20))
          : std::string("no cache flush"),
      r.settings.timer);

  for (const GemmDtypeResult& d : r.dtypes) {
    if (!d.supported || d.shapes.empty()) continue;
    out += fmt::format("\n{}: {}\n", d.dtype, d.setting);
    if (!d.check_rule.empty()) {
      out += fmt::format(
          "check: relative error against fp64 within {} (the roundings of {}: "
          "docs/methodology.md)\n",
          d.check_rule, d.dtype);
    }
    text::Table t;
    t.header = {"m x n x k",   "mean TFLOP/s", "median TFLOP/s",
                "max TFLOP/s", "check error",  "tolerance"};
    t.align = {text::Align::kLeft,  text::Align::kRight, text::Align::kRight,
               text::Align::kRight, text::Align::kRight, text::Align::kRight};
    std::vector<std::string> failures;
    for (const GemmShapeResult& s : d.shapes) {
      if (!s.error.empty()) {
        t.rows.push_back({shape_text(s.shape), "failed", "-", "-", "-", "-"});
        failures.push_back(fmt::format("{} failed: {}\n", shape_text(s.shape), s.error));
        continue;
      }
      t.rows.push_back({shape_text(s.shape), tflops_text(s.mean_tflops),
                        tflops_text(s.median_tflops), tflops_text(s.max_tflops),
                        s.check_error ? fmt::format("{:.2g}", *s.check_error) : "-",
                        s.check_tolerance ? fmt::format("{:.2g}", *s.check_tolerance) : "-"});
    }
    out += text::render_text(t, /*color=*/false);
    for (const std::string& f : failures) out += f;
  }

  out += "\n";
  text::Table summary;
  // The best shape's median, not a fastest call (the tables' "max"): the measured peak MFU uses.
  summary.header = {"dtype", "best median TFLOP/s", "best shape", "median over shapes", "shapes"};
  summary.align = {text::Align::kLeft, text::Align::kRight, text::Align::kLeft, text::Align::kRight,
                   text::Align::kLeft};
  std::vector<std::string> notes;
  for (const GemmDtypeResult& d : r.dtypes) {
    if (!d.supported) {
      notes.push_back(fmt::format("{}: not supported on this device/LibTorch: {}", d.dtype,
                                  d.unsupported_reason));
      continue;
    }
    int64_t measured = 0;
    for (const GemmShapeResult& s : d.shapes) measured += s.error.empty() ? 1 : 0;
    std::string shapes = fmt::format("{} measured", measured);
    if (measured < static_cast<int64_t>(d.shapes.size())) {
      shapes += fmt::format(", {} failed", static_cast<int64_t>(d.shapes.size()) - measured);
    }
    if (d.shapes_skipped > 0) {
      shapes += fmt::format(", {} skipped (time budget)", d.shapes_skipped);
    }
    summary.rows.push_back({d.dtype, d.max_tflops ? tflops_text(*d.max_tflops) : "n/a",
                            d.best_shape ? shape_text(*d.best_shape) : "",
                            d.median_tflops ? tflops_text(*d.median_tflops) : "n/a", shapes});
  }
  if (!summary.rows.empty()) out += text::render_text(summary, /*color=*/false);
  for (const std::string& n : notes) out += n + "\n";
  out += fmt::format("total time {:.1f} s\n", r.total_seconds);
  return out;
}

report::MeasuredGemm carried_gemm(const GemmResult& result, const std::string& source) {
  report::MeasuredGemm g;
  g.source = source;
  g.device_name = result.environment.device.name;
  g.backend = result.environment.device.backend;
  g.libtorch_version = result.environment.software.libtorch_version;
  g.measured_at_utc = result.started_at_utc;
  for (const GemmDtypeResult& d : result.dtypes) {
    if (find_measured(result, d.dtype) != &d) continue;
    g.dtypes.push_back({d.dtype, *d.max_tflops, d.median_tflops.value_or(0.0), d.best_shape->m,
                        d.best_shape->n, d.best_shape->k});
  }
  return g;
}

}  // namespace ftbench::bench
