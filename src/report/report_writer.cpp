// The report as JSON: every record in its schema order (docs/report-schema.md).
#include <string>

#include <nlohmann/json.hpp>

#include "ftbench/report/report.h"
#include "ftbench/text/json_values.h"
#include "report_fields.h"

namespace ftbench::report {
namespace {

using OJson = nlohmann::ordered_json;
using text::number_or_null;
using text::optional_integer;
using text::optional_number;

template <class R>
OJson records_json(const std::vector<R>& records);

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
  void string_since(const char* key, const std::string& v) { j[key] = v; }
  void optional_non_negative(const char* key, const std::optional<double>& v) {
    j[key] = optional_number(v);
  }
  void string_or_null(const char* key, const std::string& v) {
    j[key] = v.empty() ? OJson(nullptr) : OJson(v);
  }
  template <class R>
  void records(const char* key, const std::vector<R>& v) {
    j[key] = records_json(v);
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
  OJson j;
  j["host"] = record_json(e.host);
  j["device"] = record_json(e.device);
  j["software"] = record_json(e.software);
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
  OJson j;
  j["source"] = g.source;
  j["device_name"] = g.device_name;
  j["backend"] = g.backend;
  j["libtorch_version"] = g.libtorch_version;
  j["measured_at_utc"] = g.measured_at_utc;
  j["dtypes"] = records_json(g.dtypes);
  return j;
}

OJson to_json(const Memory& m) { return record_json(m); }

OJson to_json(const PhaseMemory& m) { return record_json(m); }

OJson to_json(const Energy& e) { return record_json(e); }

}  // namespace

nlohmann::ordered_json to_json(const Segment& g) { return record_json(g); }

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
    j["batching"] = {{"micro_batch_size", report.batching->micro_batch_size},
                     {"grad_accum_steps", report.batching->grad_accum_steps},
                     {"fallbacks", records_json(report.batching->fallbacks)}};
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

nlohmann::ordered_json to_json(const Environment& environment) {
  return environment_json(environment);
}

}  // namespace ftbench::report
