#include "ftbench/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "ftbench/report/json_fields.h"
#include "ftbench/report/report_io.h"
#include "ftbench/text/json_values.h"
#include "ftbench/text/messages.h"
#include "report_bounds.h"
#include "report_consistency.h"
#include "report_fields.h"

namespace ftbench::report {
namespace {

using OJson = nlohmann::ordered_json;

using detail::kMaxCount;
using detail::kMaxWorldSize;

// Reads a record's fields (report_fields.h) from the JSON object at `path`, through the reader's
// checks for each kind.
template <class Reader, class Json>
struct FieldReader {
  const Reader& reader;
  const Json& obj;
  const std::string& path;

  void string(const char* key, std::string& out) { out = reader.string(obj, path, key); }
  void count(const char* key, int64_t& out) { out = reader.count(obj, path, key); }
  void count_since(const char* key, int64_t& out) {
    if (obj.find(key) != obj.end()) out = reader.count(obj, path, key);
  }
  void non_negative(const char* key, double& out) {
    out = reader.non_negative_number(obj, path, key);
  }
  void number(const char* key, double& out) { out = reader.number(obj, path, key); }
  void number_or_nan(const char* key, double& out) { out = reader.number_or_nan(obj, path, key); }
  void optional_integer(const char* key, std::optional<int64_t>& out) {
    out = reader.optional_integer(obj, path, key);
  }
  void optional_integer_since(const char* key, std::optional<int64_t>& out) {
    out = reader.optional_integer_since(obj, path, key);
  }
  void string_since(const char* key, std::string& out) {
    out = reader.string_since(obj, path, key);
  }
  void optional_non_negative(const char* key, std::optional<double>& out) {
    out = reader.optional_non_negative(obj, path, key);
  }
  void string_or_null(const char* key, std::string& out) {
    if (!reader.field(obj, path, key).is_null()) out = reader.string(obj, path, key);
  }
  template <class R>
  void records(const char* key, std::vector<R>& out) {
    const Json& items = reader.array(obj, path, key);
    const std::string items_path = reader.join(path, key);
    for (std::size_t i = 0; i < items.size(); ++i) {
      out.push_back(reader.template read_record<R>(items[i], reader.index(items_path, i)));
    }
  }
};

// Checks "ftbench.report/<major>[.<minor>]" and returns the major version, or -1 when the
// string does not have that shape at all.
int schema_major(const std::string& schema) {
  const std::string prefix = "ftbench.report/";
  if (schema.compare(0, prefix.size(), prefix) != 0) return -1;
  std::size_t pos = prefix.size();
  auto digits = [&](std::size_t from) {
    std::size_t end = from;
    while (end < schema.size() && schema[end] >= '0' && schema[end] <= '9') ++end;
    return end;
  };
  const std::size_t major_end = digits(pos);
  // Bounded length so the conversion below cannot overflow.
  if (major_end == pos || major_end - pos > 6) return -1;
  const int major = std::stoi(schema.substr(pos, major_end - pos));
  pos = major_end;
  if (pos == schema.size()) return major;
  if (schema[pos] != '.') return -1;
  const std::size_t minor_end = digits(pos + 1);
  if (minor_end == pos + 1 || minor_end != schema.size()) return -1;
  return major;
}

// Reads one report, collecting nothing: the first problem throws, naming the source file and
// the JSON path ("summary.step_seconds.p90", "steps[3].loss"). Templated on the JSON type so a
// report parsed as ordered_json keeps its spec's key order.
template <class Json>
class Reader : public JsonFields<Json, ReportError> {
  using Fields = JsonFields<Json, ReportError>;

 public:
  using Fields::array;
  using Fields::boolean;
  using Fields::fail;
  using Fields::field;
  using Fields::Fields;
  using Fields::index;
  using Fields::join;
  using Fields::object;
  using Fields::string;
  using Fields::wrong_type;

  int64_t integer_value(const Json& v, const std::string& path) const {
    if (!v.is_number_integer()) wrong_type(path, "an integer", v);
    if (v.is_number_unsigned() &&
        v.template get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(path + ": integer " + v.dump() + " is out of range");
    }
    return v.template get<int64_t>();
  }

  int64_t integer(const Json& obj, const std::string& parent, const char* key) const {
    return integer_value(field(obj, parent, key), join(parent, key));
  }

  std::optional<int64_t> optional_integer(const Json& obj, const std::string& parent,
                                          const char* key) const {
    const Json& v = field(obj, parent, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number_integer()) wrong_type(join(parent, key), "an integer or null", v);
    return integer_value(v, join(parent, key));
  }

  // A field added in a minor version: absent reads as unset.
  std::optional<int64_t> optional_integer_since(const Json& obj, const std::string& parent,
                                                const char* key) const {
    return obj.find(key) == obj.end() ? std::nullopt : optional_integer(obj, parent, key);
  }

  std::string string_since(const Json& obj, const std::string& parent, const char* key) const {
    return obj.find(key) == obj.end() ? std::string() : string(obj, parent, key);
  }

  // Durations, counts and rates cannot be negative; counts are bounded so that sums over a
  // report cannot overflow.
  double non_negative_number(const Json& obj, const std::string& parent, const char* key) const {
    const double v = number(obj, parent, key);
    if (v < 0.0) fail(join(parent, key) + ": expected a number >= 0, found " + obj.at(key).dump());
    return v;
  }

  int64_t count(const Json& obj, const std::string& parent, const char* key) const {
    const int64_t v = integer(obj, parent, key);
    if (v < 0 || v > kMaxCount) {
      fail(join(parent, key) + ": expected an integer between 0 and 10^15, found " +
           std::to_string(v));
    }
    return v;
  }

  // Any JSON number, integers included: a hand-edited `0` is as good as `0.0`.
  double number(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_number()) wrong_type(join(parent, key), "a number", v);
    return v.template get<double>();
  }

  double number_or_nan(const Json& obj, const std::string& parent, const char* key) const {
    return optional_number(obj, parent, key).value_or(std::numeric_limits<double>::quiet_NaN());
  }

  std::optional<double> optional_number(const Json& obj, const std::string& parent,
                                        const char* key) const {
    const Json& v = field(obj, parent, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) wrong_type(join(parent, key), "a number or null", v);
    return v.template get<double>();
  }

  std::optional<double> optional_non_negative(const Json& obj, const std::string& parent,
                                              const char* key) const {
    const std::optional<double> v = optional_number(obj, parent, key);
    if (v && !(*v >= 0.0)) {
      fail(join(parent, key) + ": expected a number >= 0 or null, found " + obj.at(key).dump());
    }
    return v;
  }

  // A record of report_fields.h from the object at `path`.
  template <class R>
  R read_record(const Json& obj, const std::string& path) const {
    if (!obj.is_object()) wrong_type(path, "an object", obj);
    R out;
    FieldReader<Reader, Json> fields{*this, obj, path};
    detail::visit_fields(fields, out);
    return out;
  }

  // The records of the array `key` of the report; absent: none (a later minor version).
  template <class R>
  std::vector<R> read_records_since(const Json& j, const char* key) const {
    std::vector<R> out;
    if (j.find(key) == j.end()) return out;
    const Json& items = array(j, "", key);
    for (std::size_t i = 0; i < items.size(); ++i) {
      out.push_back(read_record<R>(items[i], index(key, i)));
    }
    return out;
  }

  void check_schema(const Json& j) const {
    if (!j.is_object()) {
      fail(std::string("not an ftbench report (expected a JSON object, found ") + j.type_name() +
           ")");
    }
    const auto it = j.find("schema");
    if (it == j.end()) fail("not an ftbench report (no \"schema\" field)");
    if (!it->is_string()) wrong_type("schema", "a string like \"ftbench.report/1\"", *it);
    const std::string schema = it->template get<std::string>();
    if (schema_major(schema) != kSchemaMajor) {
      fail("unsupported report schema " + text::quoted(schema) + " (this ftbench reads " +
           kSchemaFamily + ")");
    }
  }

  Report read(const Json& j) const {
    check_schema(j);
    Report r;
    r.schema = j.at("schema").template get<std::string>();

    const Json& run = object(j, "", "run");
    r.run_name = string(run, "run", "name");
    r.status = string(run, "run", "status");
    r.error = string(run, "run", "error");
    r.started_at_utc = string(run, "run", "started_at_utc");
    r.finished_at_utc = string(run, "run", "finished_at_utc");
    r.spec_path = string(run, "run", "spec_path");
    if (run.find("world_size") != run.end()) {
      r.world_size = integer(run, "run", "world_size");
      // What billing takes (cost::kMaxGpus): a larger count is this file's fault, said here.
      if (r.world_size < 1 || r.world_size > kMaxWorldSize) {
        fail("run.world_size: expected an integer between 1 and " + std::to_string(kMaxWorldSize) +
             ", found " + std::to_string(r.world_size));
      }
    }

    r.spec = object(j, "", "spec");
    r.spec_fingerprint = string(j, "", "spec_fingerprint");

    read_environment(object(j, "", "environment"), r.environment);

    if (const auto it = j.find("data"); it != j.end() && !it->is_null()) {
      const Json& d = object(j, "", "data");
      DataInfo info;
      info.source = string(d, "data", "source");
      info.examples = count(d, "data", "examples");
      info.tokens = count(d, "data", "tokens");
      info.loss_tokens = count(d, "data", "loss_tokens");
      info.fingerprint = string(d, "data", "fingerprint");
      if (const auto st = d.find("statistics"); st != d.end() && !st->is_null()) {
        info.statistics =
            read_record<DataStatistics>(object(d, "data", "statistics"), "data.statistics");
      }
      if (const auto v = d.find("validation"); v != d.end() && !v->is_null()) {
        info.validation =
            read_record<ValidationDataInfo>(object(d, "data", "validation"), "data.validation");
      }
      r.data = std::move(info);
    }

    r.parameters = read_record<ParameterInfo>(object(j, "", "parameters"), "parameters");
    r.derived = read_record<Derived>(object(j, "", "derived"), "derived");

    if (const auto it = j.find("batching"); it != j.end() && !it->is_null()) {
      r.batching = read_batching(object(j, "", "batching"));
    }

    const Json& timing = object(j, "", "timing");
    r.t0_source = string(timing, "timing", "t0_source");
    r.t0_before_process_seconds =
        non_negative_number(timing, "timing", "t0_before_process_seconds");
    r.time_to_first_step_seconds =
        non_negative_number(timing, "timing", "time_to_first_step_seconds");
    const Json& phases = array(timing, "timing", "phases");
    for (std::size_t i = 0; i < phases.size(); ++i) {
      const std::string path = index("timing.phases", i);
      const Json& p = phases[i];
      if (!p.is_object()) wrong_type(path, "an object", p);
      Phase phase;
      phase.name = string(p, path, "name");
      phase.start_seconds = non_negative_number(p, path, "start_seconds");
      phase.seconds = non_negative_number(p, path, "seconds");
      if (const auto m = p.find("memory"); m != p.end() && !m->is_null()) {
        phase.memory = read_record<PhaseMemory>(object(p, path, "memory"), join(path, "memory"));
      }
      r.phases.push_back(std::move(phase));
    }

    const Json& steps = array(j, "", "steps");
    r.steps.reserve(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      r.steps.push_back(read_step(steps[i], index("steps", i)));
    }

    r.evaluations = read_records_since<Evaluation>(j, "evaluations");

    if (const auto it = j.find("gemm"); it != j.end() && !it->is_null()) {
      r.gemm = read_gemm(object(j, "", "gemm"));
    }
    r.segments = read_records_since<Segment>(j, "segments");
    r.checkpoints = read_records_since<CheckpointSave>(j, "checkpoints");
    if (const auto it = j.find("weights"); it != j.end() && !it->is_null()) {
      r.weights = read_record<WeightsInfo>(object(j, "", "weights"), "weights");
    }
    r.exports = read_records_since<ExportRecord>(j, "exports");

    read_summary(object(j, "", "summary"), r.summary);

    r.memory = read_record<Memory>(object(j, "", "memory"), "memory");
    if (const auto it = j.find("energy"); it != j.end() && !it->is_null()) {
      r.energy = read_energy(object(j, "", "energy"));
    }
    detail::check_consistency(r, this->source());
    return r;
  }

 private:
  Energy read_energy(const Json& e) const { return read_record<Energy>(e, "energy"); }

  Batching read_batching(const Json& b) const {
    Batching out;
    out.micro_batch_size = count(b, "batching", "micro_batch_size");
    out.grad_accum_steps = count(b, "batching", "grad_accum_steps");
    const Json& fallbacks = array(b, "batching", "fallbacks");
    for (std::size_t i = 0; i < fallbacks.size(); ++i) {
      out.fallbacks.push_back(read_record<Fallback>(fallbacks[i], index("batching.fallbacks", i)));
    }
    return out;
  }

 public:
  void read_environment(const Json& env, Environment& e) const {
    const std::string sp = "environment.software";
    e.host = read_record<HostInfo>(object(env, "environment", "host"), "environment.host");
    e.device = read_record<DeviceInfo>(object(env, "environment", "device"), "environment.device");
    e.software = read_record<SoftwareInfo>(object(env, "environment", "software"), sp);
    if (const std::string why = container_image_problem(e.software.container_image); !why.empty()) {
      fail(sp +
           ".container_image: expected a container image reference such as "
           "rocm/pytorch-training:v25.6, found " +
           text::quoted(e.software.container_image) + " (" + why + ")");
    }

    if (const auto v = env.find("variables"); v != env.end() && !v->is_null()) {
      const Json& variables = object(env, "environment", "variables");
      std::vector<EnvironmentVariable> out;
      for (auto it = variables.begin(); it != variables.end(); ++it) {
        if (!it.value().is_string()) {
          // The name is the file's: escaped, as every message quoting a file does.
          wrong_type("environment.variables." + text::printable(it.key()), "a string", it.value());
        }
        out.push_back({it.key(), it.value().template get<std::string>()});
      }
      e.variables = std::move(out);
    }
  }

 private:
  MeasuredGemm read_gemm(const Json& g) const {
    MeasuredGemm out;
    out.source = string(g, "gemm", "source");
    out.device_name = string(g, "gemm", "device_name");
    out.backend = string(g, "gemm", "backend");
    out.libtorch_version = string(g, "gemm", "libtorch_version");
    out.measured_at_utc = string(g, "gemm", "measured_at_utc");
    const Json& dtypes = array(g, "gemm", "dtypes");
    for (std::size_t i = 0; i < dtypes.size(); ++i) {
      out.dtypes.push_back(read_record<MeasuredGemmDtype>(dtypes[i], index("gemm.dtypes", i)));
    }
    return out;
  }

 public:
  Segment read_segment(const Json& e, const std::string& path) const {
    return read_record<Segment>(e, path);
  }

 private:
  StepRecord read_step(const Json& s, const std::string& path) const {
    if (!s.is_object()) wrong_type(path, "an object", s);
    StepRecord step;
    step.step = count(s, path, "step");
    step.epoch = count(s, path, "epoch");
    step.wall_seconds = non_negative_number(s, path, "wall_seconds");
    step.data_wait_seconds = non_negative_number(s, path, "data_wait_seconds");
    step.real_tokens = count(s, path, "real_tokens");
    step.padded_tokens = count(s, path, "padded_tokens");
    step.loss_tokens = count(s, path, "loss_tokens");
    // A diverged run writes its non-finite losses and norms as null; they read back as NaN.
    step.loss = number_or_nan(s, path, "loss");
    step.lr = number(s, path, "lr");
    step.grad_norm = number_or_nan(s, path, "grad_norm");
    step.model_flops = number(s, path, "model_flops");
    if (s.find("segment") != s.end()) {
      step.segment = integer(s, path, "segment");
      if (step.segment < 1) {
        fail(join(path, "segment") + ": expected an integer >= 1, found " +
             std::to_string(step.segment));
      }
    }
    return step;
  }

  void read_summary(const Json& s, Summary& out) const {
    out.warmup_steps_excluded = count(s, "summary", "warmup_steps_excluded");
    out.measured_steps = count(s, "summary", "measured_steps");

    const std::string tp = "summary.step_seconds";
    const Json& t = object(s, "summary", "step_seconds");
    out.step_seconds.count = count(t, tp, "count");
    out.step_seconds.mean = non_negative_number(t, tp, "mean");
    out.step_seconds.median = non_negative_number(t, tp, "median");
    out.step_seconds.p90 = non_negative_number(t, tp, "p90");
    out.step_seconds.p99 = non_negative_number(t, tp, "p99");
    out.step_seconds.min = non_negative_number(t, tp, "min");
    out.step_seconds.max = non_negative_number(t, tp, "max");
    out.step_seconds.stddev = non_negative_number(t, tp, "stddev");
    out.step_seconds.cv = non_negative_number(t, tp, "cv");

    const Json& tps = object(s, "summary", "tokens_per_second");
    out.tokens_per_second_real = non_negative_number(tps, "summary.tokens_per_second", "real");
    out.tokens_per_second_padded = non_negative_number(tps, "summary.tokens_per_second", "padded");
    out.padding_fraction = number(s, "summary", "padding_fraction");
    out.data_wait_fraction = number(s, "summary", "data_wait_fraction");

    const Json& mfu = object(s, "summary", "mfu");
    out.peak_tflops = optional_number(mfu, "summary.mfu", "peak_tflops");
    out.peak_source = string(mfu, "summary.mfu", "peak_source");
    if (mfu.find("gemm_peak_tflops") != mfu.end()) {
      out.gemm_peak_tflops = optional_number(mfu, "summary.mfu", "gemm_peak_tflops");
    }
    if (mfu.find("gemm_peak_source") != mfu.end()) {
      out.gemm_peak_source = string(mfu, "summary.mfu", "gemm_peak_source");
    }
    const Json& entries = array(mfu, "summary.mfu", "entries");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string path = index("summary.mfu.entries", i);
      const Json& e = entries[i];
      if (!e.is_object()) wrong_type(path, "an object", e);
      MfuEntry entry;
      entry.formula = string(e, path, "formula");
      entry.recompute = boolean(e, path, "recompute");
      entry.flops_per_step = number(e, path, "flops_per_step");
      entry.achieved_tflops = number(e, path, "achieved_tflops");
      entry.mfu = optional_number(e, path, "mfu");
      if (e.find("mfu_gemm") != e.end()) entry.mfu_gemm = optional_number(e, path, "mfu_gemm");
      out.mfu.push_back(std::move(entry));
    }

    const Json& loss = object(s, "summary", "loss");
    out.final_loss = number_or_nan(loss, "summary.loss", "final");
    out.loss_window = count(loss, "summary.loss", "window");
    out.mean_last_losses = number_or_nan(loss, "summary.loss", "mean_last");
  }
};

}  // namespace

Segment segment_from_json(const nlohmann::json& json, const std::string& source,
                          const std::string& path) {
  return Reader<nlohmann::json>(source).read_segment(json, path);
}

DeviceEnergyTotals sum_device_energy(const std::vector<DeviceEnergy>& devices) {
  DeviceEnergyTotals t;
  double mean = 0.0;
  double peak = 0.0;
  bool all_watts = true;
  double least = std::numeric_limits<double>::infinity();
  for (const DeviceEnergy& d : devices) {
    t.joules += d.joules;
    if (d.mean_watts && d.peak_watts) {
      mean += *d.mean_watts;
      peak += *d.peak_watts;
    } else {
      all_watts = false;
    }
    least = std::min(least, d.sampled_seconds);
  }
  if (all_watts) {
    t.mean_watts = mean;
    t.peak_watts = peak;
  }
  t.least_sampled_seconds = devices.empty() ? 0.0 : least;
  return t;
}

std::string container_image_problem(std::string_view v) {
  if (v.empty()) return "";
  if (v.size() > 255) return fmt::format("longer than 255 characters ({})", v.size());
  for (char c : v) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/' ||
                         c == ':' || c == '@';
    if (!allowed) {
      return "a character no image reference has: " + text::quoted(std::string_view(&c, 1));
    }
  }
  if (v.find("://") != std::string_view::npos) return "a URL, not an image reference";
  const std::size_t at = v.find('@');
  if (at != std::string_view::npos) {
    // name@algorithm:hex, the digest form: nothing but the digest after the one "@".
    const std::string_view digest = v.substr(at + 1);
    const std::size_t colon = digest.find(':');
    bool is_digest =
        at > 0 && colon != std::string_view::npos && colon > 0 && digest.size() - colon - 1 >= 32;
    for (std::size_t i = 0; is_digest && i < digest.size(); ++i) {
      const char c = digest[i];
      if (i < colon) {
        is_digest = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      } else if (i > colon) {
        is_digest = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }
    }
    if (!is_digest) return "\"@\" not followed by a digest such as sha256:<64 hex digits>";
  }
  return "";
}

Report from_json(const nlohmann::json& json, const std::string& source) {
  return Reader<nlohmann::json>(source).read(json);
}

Report from_json(const nlohmann::ordered_json& json, const std::string& source) {
  return Reader<nlohmann::ordered_json>(source).read(json);
}

Environment environment_from_json(const nlohmann::json& json, const std::string& source) {
  const Reader<nlohmann::json> reader(source);
  if (!json.is_object()) reader.wrong_type("environment", "an object", json);
  Environment e;
  reader.read_environment(json, e);
  return e;
}

}  // namespace ftbench::report
