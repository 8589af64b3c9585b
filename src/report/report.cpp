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
#include "report_fields.h"

namespace ftbench::report {
namespace {

using OJson = nlohmann::ordered_json;

// Bounds of a plausible report (docs/report-schema.md, Consistency), as the writer can produce
// them: `ftbench run` refuses an external t0 more than 30 days before its process started, and
// no process runs for longer than a year.
constexpr double kMaxDurationSeconds = 366.0 * 86400.0;   // 31,622,400
constexpr int64_t kMaxWorldSize = 65536;                  // cost::kMaxGpus
constexpr int64_t kMaxCount = 1'000'000'000'000'000;      // 10^15, any one count
constexpr int64_t kMaxTotal = 1'000'000'000'000'000'000;  // 10^18, sums over a report
// Board power of one device: the largest accelerator boards draw about 1.2 kW; 100 kW is a
// reading no device gives.
constexpr double kMaxWattsPerDevice = 100'000.0;
// backend.energy_sample_ms' bounds (spec), in seconds.
constexpr double kMinEnergyIntervalSeconds = 0.01;
constexpr double kMaxEnergyIntervalSeconds = 10.0;
constexpr int64_t kMaxDeviceIndex = 65535;  // backend.device_index's bound

// Two figures measured on the same clock may differ by rounding: a part may exceed its whole
// by a millionth and a millisecond.
double with_slack(double whole_seconds) { return whole_seconds * (1.0 + 1e-6) + 1e-3; }

std::string number_text(double v) { return fmt::format("{}", v); }

using text::number_or_null;
using text::optional_integer;
using text::optional_number;

// Writes a record's fields (report_fields.h) into a JSON object, in their order.
struct FieldWriter {
  OJson& j;
  void string(const char* key, const std::string& v) { j[key] = v; }
  void count(const char* key, int64_t v) { j[key] = v; }
  void count_since(const char* key, int64_t v) { j[key] = v; }
  void non_negative(const char* key, double v) { j[key] = number_or_null(v); }
  void number(const char* key, double v) { j[key] = number_or_null(v); }
  void number_or_nan(const char* key, double v) { j[key] = number_or_null(v); }
  void optional_integer(const char* key, const std::optional<int64_t>& v) {
    j[key] = text::optional_integer(v);
  }
  void optional_integer_since(const char* key, const std::optional<int64_t>& v) {
    j[key] = text::optional_integer(v);
  }
  void string_or_null(const char* key, const std::string& v) {
    j[key] = v.empty() ? OJson(nullptr) : OJson(v);
  }
};

template <class R>
OJson record_json(const R& record) {
  OJson j = OJson::object();
  FieldWriter writer{j};
  detail::visit_fields(writer, record);
  return j;
}

template <class R>
OJson records_json(const std::vector<R>& records) {
  OJson out = OJson::array();
  for (const R& r : records) out.push_back(record_json(r));
  return out;
}

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
  void string_or_null(const char* key, std::string& out) {
    if (!reader.field(obj, path, key).is_null()) out = reader.string(obj, path, key);
  }
};

OJson to_json(const SampleSummary& s) {
  OJson j;
  j["count"] = s.count;
  j["mean"] = number_or_null(s.mean);
  j["median"] = number_or_null(s.median);
  j["p90"] = number_or_null(s.p90);
  j["p99"] = number_or_null(s.p99);
  j["min"] = number_or_null(s.min);
  j["max"] = number_or_null(s.max);
  j["stddev"] = number_or_null(s.stddev);
  j["cv"] = number_or_null(s.cv);
  return j;
}

OJson environment_json(const Environment& e) {
  OJson host;
  host["hostname"] = e.host.hostname;
  host["os"] = e.host.os;
  host["kernel"] = e.host.kernel;
  host["cpu_model"] = e.host.cpu_model;
  host["cpu_logical_cores"] = e.host.cpu_logical_cores;
  host["memory_bytes"] = e.host.memory_bytes;

  OJson device;
  device["backend"] = e.device.backend;
  device["name"] = e.device.name;
  device["arch"] = e.device.arch;
  device["count"] = e.device.count;
  device["index"] = e.device.index;
  device["memory_bytes"] = optional_integer(e.device.memory_bytes);
  device["multiprocessor_count"] = optional_integer(e.device.multiprocessor_count);
  device["driver_version"] = e.device.driver_version;
  device["runtime_version"] = e.device.runtime_version;
  device["l2_cache_bytes"] = optional_integer(e.device.l2_cache_bytes);
  device["clock_khz"] = optional_integer(e.device.clock_khz);
  device["memory_clock_khz"] = optional_integer(e.device.memory_clock_khz);
  device["memory_bus_width_bits"] = optional_integer(e.device.memory_bus_width_bits);
  device["pci_bus_id"] = e.device.pci_bus_id;
  device["kernel_driver_version"] = e.device.kernel_driver_version;
  device["query_error"] = e.device.query_error;

  OJson software;
  software["ftbench_version"] = e.software.ftbench_version;
  software["git_commit"] = e.software.git_commit;
  software["libtorch_version"] = e.software.libtorch_version;
  software["compiler"] = e.software.compiler;
  software["build_type"] = e.software.build_type;
  software["intra_op_threads"] = e.software.intra_op_threads;
  software["inter_op_threads"] = e.software.inter_op_threads;
  software["blas"] = e.software.blas;
  software["omp_wait_policy"] = e.software.omp_wait_policy;
  software["host_allocator"] = e.software.host_allocator;
  software["libtorch_build"] = e.software.libtorch_build;
  software["container_image"] = e.software.container_image;

  OJson j;
  j["host"] = std::move(host);
  j["device"] = std::move(device);
  j["software"] = std::move(software);
  if (e.variables) {
    OJson variables = OJson::object();
    for (const EnvironmentVariable& v : *e.variables) variables[v.name] = v.value;
    j["variables"] = std::move(variables);
  } else {
    j["variables"] = nullptr;
  }
  return j;
}

OJson to_json(const StepRecord& s) {
  OJson j;
  j["step"] = s.step;
  j["epoch"] = s.epoch;
  j["wall_seconds"] = number_or_null(s.wall_seconds);
  j["data_wait_seconds"] = number_or_null(s.data_wait_seconds);
  j["real_tokens"] = s.real_tokens;
  j["padded_tokens"] = s.padded_tokens;
  j["loss_tokens"] = s.loss_tokens;
  j["loss"] = number_or_null(s.loss);
  j["lr"] = number_or_null(s.lr);
  j["grad_norm"] = number_or_null(s.grad_norm);
  j["model_flops"] = number_or_null(s.model_flops);
  j["segment"] = s.segment;
  return j;
}

OJson to_json(const DataStatistics& s) { return record_json(s); }

OJson to_json(const Summary& s) {
  OJson entries = OJson::array();
  for (const MfuEntry& e : s.mfu) {
    OJson entry;
    entry["formula"] = e.formula;
    entry["recompute"] = e.recompute;
    entry["flops_per_step"] = number_or_null(e.flops_per_step);
    entry["achieved_tflops"] = number_or_null(e.achieved_tflops);
    entry["mfu"] = optional_number(e.mfu);
    entry["mfu_gemm"] = optional_number(e.mfu_gemm);
    entries.push_back(std::move(entry));
  }
  OJson mfu;
  mfu["peak_tflops"] = optional_number(s.peak_tflops);
  mfu["peak_source"] = s.peak_source;
  mfu["gemm_peak_tflops"] = optional_number(s.gemm_peak_tflops);
  mfu["gemm_peak_source"] = s.gemm_peak_source;
  mfu["entries"] = std::move(entries);

  OJson j;
  j["warmup_steps_excluded"] = s.warmup_steps_excluded;
  j["measured_steps"] = s.measured_steps;
  j["step_seconds"] = to_json(s.step_seconds);
  j["tokens_per_second"] = {{"real", number_or_null(s.tokens_per_second_real)},
                            {"padded", number_or_null(s.tokens_per_second_padded)}};
  j["padding_fraction"] = number_or_null(s.padding_fraction);
  j["data_wait_fraction"] = number_or_null(s.data_wait_fraction);
  j["mfu"] = std::move(mfu);
  j["loss"] = {{"final", number_or_null(s.final_loss)},
               {"window", s.loss_window},
               {"mean_last", number_or_null(s.mean_last_losses)}};
  return j;
}

OJson to_json(const MeasuredGemm& g) {
  OJson dtypes = OJson::array();
  for (const MeasuredGemmDtype& d : g.dtypes) {
    dtypes.push_back({{"dtype", d.dtype},
                      {"max_tflops", number_or_null(d.max_tflops)},
                      {"median_tflops", number_or_null(d.median_tflops)},
                      {"best_m", d.best_m},
                      {"best_n", d.best_n},
                      {"best_k", d.best_k}});
  }
  OJson j;
  j["source"] = g.source;
  j["device_name"] = g.device_name;
  j["backend"] = g.backend;
  j["libtorch_version"] = g.libtorch_version;
  j["measured_at_utc"] = g.measured_at_utc;
  j["dtypes"] = std::move(dtypes);
  return j;
}

OJson to_json(const Memory& m) { return record_json(m); }

OJson to_json(const PhaseMemory& m) { return record_json(m); }

OJson to_json(const DeviceEnergy& d) {
  OJson j;
  j["index"] = d.index;
  j["pci_bus_id"] = d.pci_bus_id;
  j["method"] = d.method;
  j["source"] = d.source;
  j["library"] = d.library;
  j["joules"] = number_or_null(d.joules);
  j["sampled_seconds"] = number_or_null(d.sampled_seconds);
  j["mean_watts"] = optional_number(d.mean_watts);
  j["peak_watts"] = optional_number(d.peak_watts);
  j["samples"] = d.samples;
  j["failed_reads"] = d.failed_reads;
  j["counter_resets"] = d.counter_resets;
  return j;
}

OJson to_json(const Energy& e) {
  OJson j;
  j["reason"] = e.reason;
  j["method"] = e.method;
  j["source"] = e.source;
  j["segment"] = e.segment;
  j["interval_seconds"] = number_or_null(e.interval_seconds);
  j["window_start_seconds"] = number_or_null(e.window_start_seconds);
  j["window_seconds"] = number_or_null(e.window_seconds);
  j["steps"] = e.steps;
  j["tokens"] = e.tokens;
  j["joules"] = optional_number(e.joules);
  j["joules_per_step"] = optional_number(e.joules_per_step);
  j["joules_per_million_tokens"] = optional_number(e.joules_per_million_tokens);
  j["mean_watts"] = optional_number(e.mean_watts);
  j["peak_watts"] = optional_number(e.peak_watts);
  j["sampled_seconds"] = optional_number(e.sampled_seconds);
  j["coverage"] = optional_number(e.coverage);
  j["sample_count"] = e.sample_count;
  OJson devices = OJson::array();
  for (const DeviceEnergy& d : e.devices) devices.push_back(to_json(d));
  j["devices"] = std::move(devices);
  return j;
}

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
    check_consistency(r);
    return r;
  }

 private:
  // ---- Consistency (docs/report-schema.md): figures that cannot all be true are refused,
  // naming the field, so that no command prints a figure from such a report. Single fields
  // first, then what ties them together.

  void at_most_seconds(double seconds, const std::string& path, double max_seconds) const {
    if (seconds > max_seconds) {
      fail(path + ": expected at most " + number_text(max_seconds) + " s (" +
           number_text(max_seconds / 86400.0) + " days), found " + number_text(seconds));
    }
  }

  void duration(double seconds, const std::string& path) const {
    at_most_seconds(seconds, path, kMaxDurationSeconds);
  }

  void non_negative_count(const std::optional<int64_t>& v, const std::string& path) const {
    if (v && (*v < 0 || *v > kMaxCount)) {
      fail(path + ": expected an integer between 0 and 10^15, found " + std::to_string(*v));
    }
  }

  void at_most(int64_t part, int64_t whole, const std::string& path,
               const std::string& whole_name) const {
    if (part > whole) {
      fail(path + ": expected at most " + whole_name + " " + std::to_string(whole) + ", found " +
           std::to_string(part));
    }
  }

  void check_durations(const Report& r) const {
    at_most_seconds(r.t0_before_process_seconds, "timing.t0_before_process_seconds",
                    kMaxExternalStartSeconds);
    duration(r.time_to_first_step_seconds, "timing.time_to_first_step_seconds");
    for (std::size_t i = 0; i < r.phases.size(); ++i) {
      const Phase& p = r.phases[i];
      const std::string path = index("timing.phases", i);
      duration(p.start_seconds, join(path, "start_seconds"));
      duration(p.seconds, join(path, "seconds"));
      if (p.start_seconds + p.seconds > kMaxDurationSeconds) {
        fail(path + ": start_seconds + seconds = " + number_text(p.start_seconds + p.seconds) +
             " s, more than 366 days (" + number_text(kMaxDurationSeconds) + " s)");
      }
    }
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      duration(r.steps[i].wall_seconds, join(index("steps", i), "wall_seconds"));
      duration(r.steps[i].data_wait_seconds, join(index("steps", i), "data_wait_seconds"));
    }
    for (std::size_t i = 0; i < r.evaluations.size(); ++i) {
      duration(r.evaluations[i].seconds, join(index("evaluations", i), "seconds"));
    }
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
      duration(r.segments[i].run_seconds, join(index("segments", i), "run_seconds"));
      duration(r.segments[i].time_to_first_step_seconds,
               join(index("segments", i), "time_to_first_step_seconds"));
    }
    for (std::size_t i = 0; i < r.checkpoints.size(); ++i) {
      duration(r.checkpoints[i].seconds, join(index("checkpoints", i), "seconds"));
    }
    if (r.weights) duration(r.weights->seconds, "weights.seconds");
    for (std::size_t i = 0; i < r.exports.size(); ++i) {
      duration(r.exports[i].seconds, join(index("exports", i), "seconds"));
    }
    if (r.batching) {
      for (std::size_t i = 0; i < r.batching->fallbacks.size(); ++i) {
        duration(r.batching->fallbacks[i].seconds_lost,
                 join(index("batching.fallbacks", i), "seconds_lost"));
      }
    }
    const SampleSummary& t = r.summary.step_seconds;
    const std::string tp = "summary.step_seconds";
    for (const auto& [value, key] :
         {std::pair{t.mean, "mean"}, std::pair{t.median, "median"}, std::pair{t.p90, "p90"},
          std::pair{t.p99, "p99"}, std::pair{t.min, "min"}, std::pair{t.max, "max"},
          std::pair{t.stddev, "stddev"}}) {
      duration(value, join(tp, key));
    }
  }

  // Bytes and counts of memory are never negative (null when not measured).
  void check_memory(const Report& r) const {
    const Memory& m = r.memory;
    for (const auto& [value, key] : {std::pair{&m.peak_allocated_bytes, "peak_allocated_bytes"},
                                     std::pair{&m.peak_reserved_bytes, "peak_reserved_bytes"},
                                     std::pair{&m.device_used_peak_bytes, "device_used_peak_bytes"},
                                     std::pair{&m.device_total_bytes, "device_total_bytes"},
                                     std::pair{&m.peak_rss_bytes, "peak_rss_bytes"},
                                     std::pair{&m.peak_active_bytes, "peak_active_bytes"},
                                     std::pair{&m.allocation_retries, "allocation_retries"},
                                     std::pair{&m.oom_count, "oom_count"}}) {
      non_negative_count(*value, join("memory", key));
    }
    non_negative_count(r.environment.device.memory_bytes, "environment.device.memory_bytes");
    for (std::size_t i = 0; i < r.phases.size(); ++i) {
      if (!r.phases[i].memory) continue;
      const PhaseMemory& p = *r.phases[i].memory;
      const std::string path = join(index("timing.phases", i), "memory");
      for (const auto& [value, key] :
           {std::pair{&p.peak_allocated_bytes, "peak_allocated_bytes"},
            std::pair{&p.peak_reserved_bytes, "peak_reserved_bytes"},
            std::pair{&p.peak_active_bytes, "peak_active_bytes"},
            std::pair{&p.device_used_peak_bytes, "device_used_peak_bytes"},
            std::pair{&p.peak_rss_bytes, "peak_rss_bytes"},
            std::pair{&p.rss_at_end_bytes, "rss_at_end_bytes"}}) {
        non_negative_count(*value, join(path, key));
      }
    }
  }

  void check_parts(const Report& r) const {
    const ParameterInfo& p = r.parameters;
    if (p.total != p.base + p.trainable) {
      fail("parameters.total: expected base + trainable = " + std::to_string(p.base + p.trainable) +
           ", found " + std::to_string(p.total));
    }
    if (r.data) {
      at_most(r.data->loss_tokens, r.data->tokens, "data.loss_tokens", "data.tokens");
      if (const auto& v = r.data->validation) {
        at_most(v->loss_tokens, v->tokens, "data.validation.loss_tokens", "data.validation.tokens");
      }
    }
  }

  // Segments numbered 1..n in order, each with no steps (0, 0) or 1 <= first_step <= last_step,
  // its first step within its run.
  void check_segments(const Report& r) const {
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
      const Segment& g = r.segments[i];
      const std::string path = index("segments", i);
      const auto expected = static_cast<int64_t>(i) + 1;
      if (g.index != expected) {
        fail(join(path, "index") + ": expected " + std::to_string(expected) +
             " (segments are numbered 1, 2, ... in order), found " + std::to_string(g.index));
      }
      const bool none = g.first_step == 0 && g.last_step == 0;
      if (!none && !(g.first_step >= 1 && g.first_step <= g.last_step)) {
        fail(path + ": first_step " + std::to_string(g.first_step) + " and last_step " +
             std::to_string(g.last_step) +
             ": expected both 0 (no steps) or 1 <= first_step <= last_step");
      }
      if (g.time_to_first_step_seconds > with_slack(g.run_seconds)) {
        fail(join(path, "time_to_first_step_seconds") + ": expected at most its run_seconds " +
             number_text(g.run_seconds) + ", found " + number_text(g.time_to_first_step_seconds));
      }
    }
  }

  // Segment `segment` of a record at `path` exists: 1..n, or 1 in a report without segments.
  void check_segment_exists(int64_t segment, const Report& r, const std::string& path) const {
    const auto n = static_cast<int64_t>(r.segments.size());
    if (n == 0 && segment != 1) {
      fail(path + ": segment " + std::to_string(segment) +
           " does not exist (the report has no segments: every step is segment 1)");
    }
    if (n > 0 && (segment < 1 || segment > n)) {
      fail(path + ": segment " + std::to_string(segment) + " does not exist (the report has " +
           std::to_string(n) + " segment" + (n == 1 ? "" : "s") + ")");
    }
  }

  void check_steps(const Report& r) const {
    int64_t previous = 0;
    int64_t padded_total = 0;
    std::vector<double> segment_seconds(std::max<std::size_t>(1, r.segments.size()), 0.0);
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const StepRecord& s = r.steps[i];
      const std::string path = index("steps", i);
      if (s.step < 1)
        fail(join(path, "step") + ": expected an integer >= 1, found " + std::to_string(s.step));
      // ftbench records every step once, in order (a redone step once, a resumed run's from
      // the checkpoint's on); compare pairs steps by position, so a gap would pair wrong ones.
      if (s.step != previous + 1) {
        fail(join(path, "step") + ": expected step " + std::to_string(previous + 1) +
             " (steps are numbered 1, 2, ... in order, one record each), found " +
             std::to_string(s.step));
      }
      previous = s.step;
      if (s.data_wait_seconds > with_slack(s.wall_seconds)) {
        fail(join(path, "data_wait_seconds") + ": expected at most the step's wall_seconds " +
             number_text(s.wall_seconds) + ", found " + number_text(s.data_wait_seconds));
      }
      at_most(s.real_tokens, s.padded_tokens, join(path, "real_tokens"), "padded_tokens");
      at_most(s.loss_tokens, s.real_tokens, join(path, "loss_tokens"), "real_tokens");
      check_segment_exists(s.segment, r, join(path, "segment"));
      if (!r.segments.empty()) {
        const Segment& g = r.segments[static_cast<std::size_t>(s.segment - 1)];
        if (g.first_step > 0 && (s.step < g.first_step || s.step > g.last_step)) {
          fail(join(path, "segment") + ": step " + std::to_string(s.step) +
               " is not among segment " + std::to_string(g.index) + "'s steps " +
               std::to_string(g.first_step) + " to " + std::to_string(g.last_step) + " (" +
               index("segments", static_cast<std::size_t>(s.segment - 1)) +
               ".first_step, last_step)");
        }
      }
      segment_seconds[static_cast<std::size_t>(s.segment - 1)] += s.wall_seconds;
      // Each term is at most 10^15, so the sum cannot overflow before it is caught.
      padded_total += s.padded_tokens;
      if (padded_total > kMaxTotal) {
        fail("steps[].padded_tokens: the steps add up to more than 10^18 tokens");
      }
    }
    const auto steps = static_cast<int64_t>(r.steps.size());
    if (steps > 0 && r.derived.effective_batch > kMaxTotal / steps) {
      fail("derived.effective_batch: " + std::to_string(r.derived.effective_batch) +
           " examples per step over " + std::to_string(steps) +
           " steps make more than 10^18 examples");
    }
    for (std::size_t k = 0; k < r.segments.size(); ++k) {
      const Segment& g = r.segments[k];
      if (segment_seconds[k] > with_slack(g.run_seconds)) {
        fail("steps[].wall_seconds: the steps of segment " + std::to_string(g.index) +
             " add up to " + number_text(segment_seconds[k]) + " s, more than its " +
             number_text(g.run_seconds) + " s (" + join(index("segments", k), "run_seconds") + ")");
      }
    }
    // This process's span, as cost takes it for a report of one segment or none.
    if (r.phases.empty()) return;
    double end = 0.0;
    for (const Phase& p : r.phases) end = std::max(end, p.start_seconds + p.seconds);
    const double run_seconds = r.t0_before_process_seconds + end;
    const char* run_text =
        " s (timing.t0_before_process_seconds + the end of the last of timing.phases)";
    if (r.segments.size() <= 1 && segment_seconds[0] > with_slack(run_seconds)) {
      fail("steps[].wall_seconds: the steps add up to " + number_text(segment_seconds[0]) +
           " s, more than the run's " + number_text(run_seconds) + run_text);
    }
    if (r.time_to_first_step_seconds > with_slack(run_seconds)) {
      fail("timing.time_to_first_step_seconds: expected at most the run's " +
           number_text(run_seconds) + run_text + ", found " +
           number_text(r.time_to_first_step_seconds));
    }
  }

  // What the run says of itself: a known status, a completed run with all its steps, steps
  // within the job's shape (tokens, epochs, learning rate, FLOPs), an end after its start.
  void check_run(const Report& r) const {
    static const std::vector<std::string> kStatuses = {"completed", "interrupted", "diverged",
                                                       "failed"};
    const auto known = [](const std::vector<std::string>& set, const std::string& v) {
      return std::find(set.begin(), set.end(), v) != set.end();
    };
    if (!known(kStatuses, r.status)) {
      fail("run.status: expected one of completed, interrupted, diverged, failed, found " +
           text::quoted(r.status));
    }
    std::vector<std::string> segment_statuses = kStatuses;
    segment_statuses.push_back("unfinished");
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
      if (!known(segment_statuses, r.segments[i].status)) {
        fail(join(index("segments", i), "status") +
             ": expected one of completed, interrupted, diverged, failed, unfinished, found " +
             text::quoted(r.segments[i].status));
      }
    }
    if (!r.started_at_utc.empty() && !r.finished_at_utc.empty() &&
        r.finished_at_utc < r.started_at_utc) {
      fail("run.finished_at_utc: " + text::quoted(r.finished_at_utc) + " is before " +
           "run.started_at_utc " + text::quoted(r.started_at_utc));
    }
    const auto steps = static_cast<int64_t>(r.steps.size());
    if (r.status == "completed" && r.derived.total_steps > 0 && steps != r.derived.total_steps) {
      fail("steps: a completed run has its derived.total_steps " +
           std::to_string(r.derived.total_steps) + " steps, found " + std::to_string(steps));
    }
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const StepRecord& s = r.steps[i];
      const std::string path = index("steps", i);
      if (r.derived.max_tokens_per_step > 0 && s.padded_tokens > r.derived.max_tokens_per_step) {
        fail(join(path, "padded_tokens") + ": expected at most derived.max_tokens_per_step " +
             std::to_string(r.derived.max_tokens_per_step) + ", found " +
             std::to_string(s.padded_tokens));
      }
      if (r.derived.steps_per_epoch > 0 &&
          s.epoch != (s.step - 1) / r.derived.steps_per_epoch + 1) {
        fail(join(path, "epoch") + ": step " + std::to_string(s.step) + " is in epoch " +
             std::to_string((s.step - 1) / r.derived.steps_per_epoch + 1) +
             " (derived.steps_per_epoch " + std::to_string(r.derived.steps_per_epoch) +
             "), found " + std::to_string(s.epoch));
      }
      if (!(s.lr >= 0.0) || !(s.model_flops >= 0.0)) {
        fail(path + ": lr " + number_text(s.lr) + " and model_flops " + number_text(s.model_flops) +
             ": expected numbers >= 0");
      }
    }
  }

  // The summary is over the measured steps: its step times lie within theirs, and its
  // throughput (tokens over time, summed) cannot beat the fastest step's.
  void check_summary(const Report& r) const {
    if (r.steps.empty() || r.summary.measured_steps == 0) return;
    double fastest = std::numeric_limits<double>::infinity();
    double slowest = 0.0;
    double real_rate = 0.0;
    double padded_rate = 0.0;
    for (const StepRecord& s : r.steps) {
      fastest = std::min(fastest, s.wall_seconds);
      slowest = std::max(slowest, s.wall_seconds);
      if (s.wall_seconds > 0.0) {
        real_rate = std::max(real_rate, double(s.real_tokens) / s.wall_seconds);
        padded_rate = std::max(padded_rate, double(s.padded_tokens) / s.wall_seconds);
      }
    }
    const SampleSummary& t = r.summary.step_seconds;
    for (const auto& [value, key] :
         {std::pair{t.mean, "mean"}, std::pair{t.median, "median"}, std::pair{t.p90, "p90"},
          std::pair{t.p99, "p99"}, std::pair{t.min, "min"}, std::pair{t.max, "max"}}) {
      if (std::isnan(value)) continue;
      if (value < fastest * (1.0 - 1e-6) || value > slowest * (1.0 + 1e-6)) {
        fail("summary.step_seconds." + std::string(key) + ": " + number_text(value) +
             " s, outside the steps' " + number_text(fastest) + " to " + number_text(slowest) +
             " s");
      }
    }
    for (const auto& [value, most, key] :
         {std::tuple{r.summary.tokens_per_second_real, real_rate, "real"},
          std::tuple{r.summary.tokens_per_second_padded, padded_rate, "padded"}}) {
      if (value > most * (1.0 + 1e-6)) {
        fail("summary.tokens_per_second." + std::string(key) + ": " + number_text(value) +
             ", more than the fastest step's " + number_text(most));
      }
    }
  }

  // Two figures one is computed from: equal up to rounding.
  void derived_from(double found, double expected, const std::string& path,
                    const std::string& formula) const {
    if (std::fabs(found - expected) > 1e-6 * std::fabs(expected) + 1e-9) {
      fail(path + ": expected " + formula + " = " + number_text(expected) + ", found " +
           number_text(found));
    }
  }

  void optional_derived_from(const std::optional<double>& found,
                             const std::optional<double>& expected, const std::string& path,
                             const std::string& formula) const {
    if (found.has_value() != expected.has_value()) {
      fail(path + ": expected " + (expected ? formula + " = " + number_text(*expected) : "null") +
           ", found " + (found ? number_text(*found) : "null"));
    }
    if (found) derived_from(*found, *expected, path, formula);
  }

  void watts(const std::optional<double>& mean, const std::optional<double>& peak, double max_watts,
             const std::string& path) const {
    if (mean.has_value() != peak.has_value()) {
      fail(path + ": mean_watts and peak_watts are both null or both numbers");
    }
    if (!peak) return;
    if (*peak > max_watts) {
      fail(join(path, "peak_watts") + ": expected at most " + number_text(max_watts) +
           " W (100 kW a device), found " + number_text(*peak));
    }
    if (*mean > with_slack(*peak)) {
      fail(join(path, "mean_watts") + ": expected at most peak_watts " + number_text(*peak) +
           ", found " + number_text(*mean));
    }
  }

  static bool known_energy_method(const std::string& m) {
    return m == "energy_counter" || m == "power_integration";
  }

  // The window of the step loop the energy covers, within the run, and its steps and tokens.
  void check_energy_window(const Report& r, const Energy& e) const {
    const std::string p = "energy";
    check_segment_exists(e.segment, r, join(p, "segment"));
    duration(e.window_start_seconds, join(p, "window_start_seconds"));
    duration(e.window_seconds, join(p, "window_seconds"));
    if (e.interval_seconds > kMaxEnergyIntervalSeconds) {
      fail(join(p, "interval_seconds") + ": expected at most " +
           number_text(kMaxEnergyIntervalSeconds) + " s (backend.energy_sample_ms 10000), found " +
           number_text(e.interval_seconds));
    }
    if (!r.phases.empty()) {
      double end = 0.0;
      for (const Phase& ph : r.phases) end = std::max(end, ph.start_seconds + ph.seconds);
      if (e.window_start_seconds + e.window_seconds > with_slack(end)) {
        fail(p + ": window_start_seconds + window_seconds = " +
             number_text(e.window_start_seconds + e.window_seconds) +
             " s, after the end of the last of timing.phases at " + number_text(end) + " s");
      }
    }
    int64_t steps = 0;
    int64_t tokens = 0;
    for (const StepRecord& s : r.steps) {
      if (s.segment != e.segment) continue;
      ++steps;
      tokens += s.real_tokens;
    }
    if (e.steps != steps || e.tokens != tokens) {
      fail(p + ": steps " + std::to_string(e.steps) + " and tokens " + std::to_string(e.tokens) +
           ": expected segment " + std::to_string(e.segment) + "'s " + std::to_string(steps) +
           " steps and their " + std::to_string(tokens) + " real tokens");
    }
  }

  // Measured or not, said once: unmeasured energy has a reason and no figures.
  bool check_energy_measured(const Energy& e) const {
    const std::string p = "energy";
    const bool measured = e.joules.has_value();
    if (measured == !e.reason.empty()) {
      fail(join(p, "reason") +
           (measured ? ": expected \"\" with energy.joules a number, found "
                     : ": expected why energy.joules is null, found ") +
           text::quoted(e.reason));
    }
    if (!measured) {
      if (!e.method.empty() || e.joules_per_step || e.joules_per_million_tokens || e.mean_watts ||
          e.peak_watts || e.sampled_seconds || e.coverage || !e.devices.empty()) {
        fail(p +
             ": energy.joules is null, so are method (\"\"), the other figures and devices "
             "([])");
      }
      return false;
    }
    return true;
  }

  // One device's figures, within the window and within themselves.
  void check_energy_device(const Energy& e, std::size_t i, double max_readings,
                           std::map<int64_t, std::size_t>& first_entry) const {
    const DeviceEnergy& d = e.devices[i];
    const std::string path = index("energy.devices", i);
    if (d.index > kMaxDeviceIndex) {
      fail(join(path, "index") + ": expected at most 65535, found " + std::to_string(d.index));
    }
    if (const auto [seen, added] = first_entry.emplace(d.index, i); !added) {
      fail(join(path, "index") + ": device " + std::to_string(d.index) + " again (energy.devices[" +
           std::to_string(seen->second) + "] is the same device)");
    }
    if (static_cast<double>(d.samples) + static_cast<double>(d.failed_reads) > max_readings) {
      fail(path + ": " + std::to_string(d.samples + d.failed_reads) +
           " readings (samples + failed_reads), more than the " + number_text(max_readings) +
           " that one every interval_seconds " + number_text(e.interval_seconds) +
           " over window_seconds " + number_text(e.window_seconds) + ", plus 3, allow");
    }
    if (!known_energy_method(d.method)) {
      fail(join(path, "method") + ": expected one of energy_counter, power_integration, found " +
           text::quoted(d.method));
    }
    if (d.sampled_seconds > with_slack(e.window_seconds)) {
      fail(join(path, "sampled_seconds") + ": expected at most energy.window_seconds " +
           number_text(e.window_seconds) + ", found " + number_text(d.sampled_seconds));
    }
    watts(d.mean_watts, d.peak_watts, kMaxWattsPerDevice, path);
    optional_derived_from(d.mean_watts,
                          d.sampled_seconds > 0.0
                              ? std::optional<double>(d.joules / d.sampled_seconds)
                              : std::nullopt,
                          join(path, "mean_watts"), "joules / sampled_seconds");
    if (d.peak_watts && d.joules > with_slack(*d.peak_watts * d.sampled_seconds)) {
      fail(join(path, "joules") + ": " + number_text(d.joules) + " J, more than peak_watts x " +
           "sampled_seconds " + number_text(*d.peak_watts * d.sampled_seconds) + " J");
    }
    if (!d.peak_watts && d.joules > 0.0) {
      fail(join(path, "joules") + ": " + number_text(d.joules) +
           " J with no time sampled (mean_watts null)");
    }
  }

  // The totals their devices' and the per-unit figures their quotients.
  void check_energy_totals(const Energy& e, int64_t samples) const {
    const std::string p = "energy";
    const DeviceEnergyTotals totals = sum_device_energy(e.devices);
    const double least_sampled = totals.least_sampled_seconds;
    derived_from(*e.joules, totals.joules, join(p, "joules"), "the sum of energy.devices[].joules");
    if (e.sample_count != samples) {
      fail(join(p, "sample_count") + ": expected the sum of energy.devices[].samples " +
           std::to_string(samples) + ", found " + std::to_string(e.sample_count));
    }
    optional_derived_from(e.mean_watts, totals.mean_watts, join(p, "mean_watts"),
                          "the sum of energy.devices[].mean_watts");
    optional_derived_from(e.peak_watts, totals.peak_watts, join(p, "peak_watts"),
                          "the sum of energy.devices[].peak_watts");
    optional_derived_from(e.sampled_seconds, least_sampled, join(p, "sampled_seconds"),
                          "the least of energy.devices[].sampled_seconds");
    optional_derived_from(e.coverage,
                          e.window_seconds > 0.0
                              ? std::optional<double>(least_sampled / e.window_seconds)
                              : std::nullopt,
                          join(p, "coverage"), "sampled_seconds / window_seconds");
    optional_derived_from(
        e.joules_per_step,
        e.steps > 0 ? std::optional<double>(*e.joules / double(e.steps)) : std::nullopt,
        join(p, "joules_per_step"), "joules / steps");
    optional_derived_from(
        e.joules_per_million_tokens,
        e.tokens > 0 ? std::optional<double>(*e.joules / double(e.tokens) * 1e6) : std::nullopt,
        join(p, "joules_per_million_tokens"), "joules / tokens x 10^6");
  }

  // Energy (since 1.6): measured or not, said once; each device's figures within the window
  // and within themselves; the totals their devices' and the per-unit figures their quotients.
  void check_energy(const Report& r) const {
    if (!r.energy) return;
    const Energy& e = *r.energy;
    const std::string p = "energy";
    check_energy_window(r, e);
    if (!check_energy_measured(e)) return;
    if (!known_energy_method(e.method) && e.method != "mixed") {
      fail(join(p, "method") +
           ": expected one of energy_counter, power_integration, mixed, found " +
           text::quoted(e.method));
    }
    if (e.interval_seconds < kMinEnergyIntervalSeconds) {
      fail(join(p, "interval_seconds") + ": expected at least " +
           number_text(kMinEnergyIntervalSeconds) + " s (backend.energy_sample_ms 10), found " +
           number_text(e.interval_seconds));
    }
    if (e.devices.empty()) fail(join(p, "devices") + ": energy.joules is measured on no device");
    if (r.environment.device.backend != "cuda" && r.environment.device.backend != "rocm") {
      fail(join(p, "joules") + ": measured, but environment.device.backend is " +
           text::quoted(r.environment.device.backend) +
           " (ftbench reads the board energy of cuda and rocm devices only; expected null with "
           "a reason)");
    }
    // The sampler reads every device once at the start, then on a fixed schedule of one reading
    // an interval (a stall skips readings, never adds any), then once at the end; a reading is
    // stamped when it returns, so a slow one can bring the next stamp up to an interval closer.
    const double max_readings = std::floor(with_slack(e.window_seconds) / e.interval_seconds) + 3.0;
    std::map<int64_t, std::size_t> first_entry;  // device index -> its first energy.devices entry
    int64_t samples = 0;
    for (std::size_t i = 0; i < e.devices.size(); ++i) {
      check_energy_device(e, i, max_readings, first_entry);
      const int64_t n = e.devices[i].samples;
      if (n > kMaxTotal - samples) fail("energy.devices[].samples: more than 10^18");
      samples += n;
    }
    check_energy_totals(e, samples);
  }

  void check_consistency(const Report& r) const {
    check_durations(r);
    check_memory(r);
    check_parts(r);
    check_segments(r);
    for (std::size_t i = 0; i < r.checkpoints.size(); ++i) {
      check_segment_exists(r.checkpoints[i].segment, r, join(index("checkpoints", i), "segment"));
    }
    check_steps(r);
    check_run(r);
    check_summary(r);
    check_energy(r);
  }

  Energy read_energy(const Json& e) const {
    const std::string p = "energy";
    Energy out;
    out.reason = string(e, p, "reason");
    out.method = string(e, p, "method");
    out.source = string(e, p, "source");
    out.segment = count(e, p, "segment");
    out.interval_seconds = non_negative_number(e, p, "interval_seconds");
    out.window_start_seconds = non_negative_number(e, p, "window_start_seconds");
    out.window_seconds = non_negative_number(e, p, "window_seconds");
    out.steps = count(e, p, "steps");
    out.tokens = count(e, p, "tokens");
    out.joules = optional_non_negative(e, p, "joules");
    out.joules_per_step = optional_non_negative(e, p, "joules_per_step");
    out.joules_per_million_tokens = optional_non_negative(e, p, "joules_per_million_tokens");
    out.mean_watts = optional_non_negative(e, p, "mean_watts");
    out.peak_watts = optional_non_negative(e, p, "peak_watts");
    out.sampled_seconds = optional_non_negative(e, p, "sampled_seconds");
    out.coverage = optional_non_negative(e, p, "coverage");
    out.sample_count = count(e, p, "sample_count");
    const Json& devices = array(e, p, "devices");
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const std::string path = index("energy.devices", i);
      const Json& d = devices[i];
      if (!d.is_object()) wrong_type(path, "an object", d);
      DeviceEnergy x;
      x.index = count(d, path, "index");
      x.pci_bus_id = string(d, path, "pci_bus_id");
      x.method = string(d, path, "method");
      x.source = string(d, path, "source");
      x.library = string(d, path, "library");
      x.joules = non_negative_number(d, path, "joules");
      x.sampled_seconds = non_negative_number(d, path, "sampled_seconds");
      x.mean_watts = optional_non_negative(d, path, "mean_watts");
      x.peak_watts = optional_non_negative(d, path, "peak_watts");
      x.samples = count(d, path, "samples");
      x.failed_reads = count(d, path, "failed_reads");
      x.counter_resets = count(d, path, "counter_resets");
      out.devices.push_back(std::move(x));
    }
    return out;
  }

  std::optional<double> optional_non_negative(const Json& obj, const std::string& parent,
                                              const char* key) const {
    const std::optional<double> v = optional_number(obj, parent, key);
    if (v && !(*v >= 0.0)) {
      fail(join(parent, key) + ": expected a number >= 0 or null, found " + obj.at(key).dump());
    }
    return v;
  }

  Batching read_batching(const Json& b) const {
    Batching out;
    out.micro_batch_size = count(b, "batching", "micro_batch_size");
    out.grad_accum_steps = count(b, "batching", "grad_accum_steps");
    const Json& fallbacks = array(b, "batching", "fallbacks");
    for (std::size_t i = 0; i < fallbacks.size(); ++i) {
      const std::string path = index("batching.fallbacks", i);
      const Json& f = fallbacks[i];
      if (!f.is_object()) wrong_type(path, "an object", f);
      Fallback fb;
      fb.step = count(f, path, "step");
      fb.from_micro_batch_size = count(f, path, "from_micro_batch_size");
      fb.from_grad_accum_steps = count(f, path, "from_grad_accum_steps");
      fb.to_micro_batch_size = count(f, path, "to_micro_batch_size");
      fb.to_grad_accum_steps = count(f, path, "to_grad_accum_steps");
      fb.seconds_lost = non_negative_number(f, path, "seconds_lost");
      fb.error = string(f, path, "error");
      out.fallbacks.push_back(std::move(fb));
    }
    return out;
  }

 public:
  void read_environment(const Json& env, Environment& e) const {
    const std::string hp = "environment.host";
    const Json& host = object(env, "environment", "host");
    e.host.hostname = string(host, hp, "hostname");
    e.host.os = string(host, hp, "os");
    e.host.kernel = string(host, hp, "kernel");
    e.host.cpu_model = string(host, hp, "cpu_model");
    e.host.cpu_logical_cores = count(host, hp, "cpu_logical_cores");
    e.host.memory_bytes = count(host, hp, "memory_bytes");

    const std::string dp = "environment.device";
    const Json& device = object(env, "environment", "device");
    e.device.backend = string(device, dp, "backend");
    e.device.name = string(device, dp, "name");
    e.device.arch = string(device, dp, "arch");
    e.device.count = count(device, dp, "count");
    e.device.index = count(device, dp, "index");
    e.device.memory_bytes = optional_integer(device, dp, "memory_bytes");
    e.device.multiprocessor_count = optional_integer(device, dp, "multiprocessor_count");
    e.device.driver_version = string(device, dp, "driver_version");
    e.device.runtime_version = string(device, dp, "runtime_version");
    e.device.l2_cache_bytes = optional_integer_since(device, dp, "l2_cache_bytes");
    e.device.clock_khz = optional_integer_since(device, dp, "clock_khz");
    e.device.memory_clock_khz = optional_integer_since(device, dp, "memory_clock_khz");
    e.device.memory_bus_width_bits = optional_integer_since(device, dp, "memory_bus_width_bits");
    e.device.pci_bus_id = string_since(device, dp, "pci_bus_id");
    e.device.kernel_driver_version = string_since(device, dp, "kernel_driver_version");
    e.device.query_error = string_since(device, dp, "query_error");

    const std::string sp = "environment.software";
    const Json& software = object(env, "environment", "software");
    e.software.ftbench_version = string(software, sp, "ftbench_version");
    e.software.git_commit = string(software, sp, "git_commit");
    e.software.libtorch_version = string(software, sp, "libtorch_version");
    e.software.compiler = string(software, sp, "compiler");
    e.software.build_type = string(software, sp, "build_type");
    e.software.intra_op_threads = count(software, sp, "intra_op_threads");
    e.software.inter_op_threads = count(software, sp, "inter_op_threads");
    e.software.blas = string(software, sp, "blas");
    e.software.omp_wait_policy = string(software, sp, "omp_wait_policy");
    e.software.host_allocator = string(software, sp, "host_allocator");
    e.software.libtorch_build = string_since(software, sp, "libtorch_build");
    e.software.container_image = string_since(software, sp, "container_image");
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
      const std::string path = index("gemm.dtypes", i);
      const Json& d = dtypes[i];
      if (!d.is_object()) wrong_type(path, "an object", d);
      MeasuredGemmDtype m;
      m.dtype = string(d, path, "dtype");
      m.max_tflops = non_negative_number(d, path, "max_tflops");
      m.median_tflops = non_negative_number(d, path, "median_tflops");
      m.best_m = count(d, path, "best_m");
      m.best_n = count(d, path, "best_n");
      m.best_k = count(d, path, "best_k");
      out.dtypes.push_back(std::move(m));
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

nlohmann::ordered_json to_json(const Segment& g) { return record_json(g); }

Segment segment_from_json(const nlohmann::json& json, const std::string& source,
                          const std::string& path) {
  return Reader<nlohmann::json>(source).read_segment(json, path);
}

nlohmann::ordered_json to_json(const Report& report) {
  OJson j;
  // Always the version this code writes: a report read from a newer minor version has lost the
  // fields this reader does not know, so it must not claim that version when written back.
  j["schema"] = kSchema;
  j["run"] = {{"name", report.run_name},
              {"status", report.status},
              {"error", report.error},
              {"started_at_utc", report.started_at_utc},
              {"finished_at_utc", report.finished_at_utc},
              {"spec_path", report.spec_path},
              {"world_size", report.world_size}};
  j["spec"] = report.spec;
  j["spec_fingerprint"] = report.spec_fingerprint;
  j["environment"] = environment_json(report.environment);
  if (report.data) {
    j["data"] = {{"source", report.data->source},
                 {"examples", report.data->examples},
                 {"tokens", report.data->tokens},
                 {"loss_tokens", report.data->loss_tokens},
                 {"fingerprint", report.data->fingerprint}};
    j["data"]["statistics"] =
        report.data->statistics ? to_json(*report.data->statistics) : OJson(nullptr);
    j["data"]["validation"] =
        report.data->validation ? record_json(*report.data->validation) : OJson(nullptr);
  } else {
    j["data"] = nullptr;
  }
  j["parameters"] = record_json(report.parameters);
  j["derived"] = record_json(report.derived);

  if (report.batching) {
    OJson fallbacks = OJson::array();
    for (const Fallback& f : report.batching->fallbacks) {
      fallbacks.push_back({{"step", f.step},
                           {"from_micro_batch_size", f.from_micro_batch_size},
                           {"from_grad_accum_steps", f.from_grad_accum_steps},
                           {"to_micro_batch_size", f.to_micro_batch_size},
                           {"to_grad_accum_steps", f.to_grad_accum_steps},
                           {"seconds_lost", number_or_null(f.seconds_lost)},
                           {"error", f.error}});
    }
    j["batching"] = {{"micro_batch_size", report.batching->micro_batch_size},
                     {"grad_accum_steps", report.batching->grad_accum_steps},
                     {"fallbacks", std::move(fallbacks)}};
  } else {
    j["batching"] = nullptr;
  }

  OJson phases = OJson::array();
  for (const Phase& p : report.phases) {
    phases.push_back({{"name", p.name},
                      {"start_seconds", number_or_null(p.start_seconds)},
                      {"seconds", number_or_null(p.seconds)},
                      {"memory", p.memory ? to_json(*p.memory) : OJson(nullptr)}});
  }
  j["timing"] = {{"t0_source", report.t0_source},
                 {"t0_before_process_seconds", number_or_null(report.t0_before_process_seconds)},
                 {"time_to_first_step_seconds", number_or_null(report.time_to_first_step_seconds)},
                 {"phases", std::move(phases)}};
  // Derived, for a reader that wants the whole run's rented time without summing: every
  // segment's run_seconds together (null in a report without segments).
  if (report.segments.empty()) {
    j["timing"]["total_run_seconds"] = nullptr;
  } else {
    double total = 0.0;
    for (const Segment& g : report.segments) total += g.run_seconds;
    j["timing"]["total_run_seconds"] = number_or_null(total);
  }

  OJson steps = OJson::array();
  for (const StepRecord& s : report.steps) steps.push_back(to_json(s));
  j["steps"] = std::move(steps);
  j["evaluations"] = records_json(report.evaluations);
  j["gemm"] = report.gemm ? to_json(*report.gemm) : OJson(nullptr);
  j["segments"] = records_json(report.segments);
  j["checkpoints"] = records_json(report.checkpoints);
  j["weights"] = report.weights ? record_json(*report.weights) : OJson(nullptr);
  j["exports"] = records_json(report.exports);
  j["summary"] = to_json(report.summary);
  j["memory"] = to_json(report.memory);
  j["energy"] = report.energy ? to_json(*report.energy) : OJson(nullptr);
  return j;
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

nlohmann::ordered_json to_json(const Environment& environment) {
  return environment_json(environment);
}

Environment environment_from_json(const nlohmann::json& json, const std::string& source) {
  const Reader<nlohmann::json> reader(source);
  if (!json.is_object()) reader.wrong_type("environment", "an object", json);
  Environment e;
  reader.read_environment(json, e);
  return e;
}

}  // namespace ftbench::report
