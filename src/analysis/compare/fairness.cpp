#include "analysis/compare/fairness.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "report/summary_text.h"
#include "spec/canonical.h"

namespace ftbench::compare {
namespace {

using OJson = nlohmann::ordered_json;

constexpr const char* kAbsent = "(absent)";

// Leaf values of the spec by dotted path; arrays are leaves (their JSON text).
// `order` collects each path once, in first-seen order across reports.
void flatten(const OJson& j, const std::string& path, std::vector<std::string>& order,
             std::set<std::string>& seen, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      flatten(it.value(), path + "." + it.key(), order, seen, out);
    }
    return;
  }
  if (seen.insert(path).second) order.push_back(path);
  out[path] = j.is_string() ? j.get<std::string>() : j.dump();
  // A report from before the checkpointing policies says true or false: full or none.
  if (path == "spec.model.activation_checkpointing" && j.is_boolean()) {
    out[path] = j.get<bool>() ? "full" : "none";
  }
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Spec keys that change how the job runs, not what it computes.
Severity classify_spec_key(const std::string& path) {
  static const std::set<std::string> kExecution = {"spec.train.micro_batch_size",
                                                   "spec.train.grad_accum_steps",
                                                   "spec.model.activation_checkpointing",
                                                   "spec.train.timing_warmup_steps",
                                                   "spec.train.loss_window",
                                                   "spec.model.checkpoint",
                                                   "spec.model.checkpoint_path",
                                                   "spec.data.path",
                                                   "spec.data.tokenizer",
                                                   "spec.data.validation_path",
                                                   "spec.train.oom_fallback",
                                                   "spec.train.oom_max_fallbacks"};
  if (starts_with(path, "spec.backend.")) return Severity::kPlatform;
  if (kExecution.count(path) || starts_with(path, "spec.train.checkpoint.")) {
    return Severity::kExecution;
  }
  // The job is what the spec fingerprint covers: the model, lora, data and train sections.
  for (const char* section : {"spec.model.", "spec.lora.", "spec.data.", "spec.train."}) {
    if (starts_with(path, section)) return Severity::kJob;
  }
  return Severity::kExecution;
}

std::string spec_note(const std::string& path) {
  if (path == "spec.train.micro_batch_size" || path == "spec.train.grad_accum_steps") {
    return "same effective batch split differently: same optimizer steps, different memory "
           "and speed";
  }
  if (path == "spec.model.activation_checkpointing") {
    return "what the backward recomputes (full: each layer's forward; selective: the "
           "elementwise work; none: nothing): memory and speed differ, not the result";
  }
  if (path == "spec.train.oom_fallback" || path == "spec.train.oom_max_fallbacks") {
    return "what a run does when it runs out of memory; a fallback that happened is listed "
           "as its own difference";
  }
  if (starts_with(path, "spec.train.checkpoint.")) {
    return "where and how often checkpoints are saved: saves are outside the step times but "
           "in the run time (the report's checkpoints list them)";
  }
  if (path == "spec.train.timing_warmup_steps") return "steps left out of the timing summary";
  if (path == "spec.train.loss_window") return "window of the final-loss mean";
  if (path == "spec.train.eval_every_steps" || path == "spec.train.eval_max_batches") {
    return "validation passes take time but do not change training";
  }
  if (path == "spec.data.path" || path == "spec.data.tokenizer" ||
      path == "spec.data.validation_path") {
    return "where the file is differs between machines; what it holds is compared by the data "
           "fingerprint";
  }
  if (path == "spec.model.checkpoint") {
    return "the same checkpoint may live at different paths on each machine; what it holds is "
           "compared by the weights fingerprint";
  }
  if (path == "spec.model.dtype" || path == "spec.lora.dtype") {
    return "different arithmetic precision: speed and numerics both change";
  }
  return "";
}

class Differ {
 public:
  explicit Differ(const std::vector<report::Report>& reports) : reports_(reports) {}

  // Adds a difference when any report's value differs from the first's.
  void check(const std::string& what, Severity severity,
             const std::function<std::string(const report::Report&)>& value,
             const std::string& note = "") {
    std::vector<std::string> values;
    for (const report::Report& r : reports_) values.push_back(value(r));
    add(what, severity, std::move(values), note);
  }

  void add(const std::string& what, Severity severity, std::vector<std::string> values,
           const std::string& note) {
    const bool differs = std::any_of(values.begin(), values.end(),
                                     [&](const std::string& v) { return v != values.front(); });
    if (differs) found_.push_back(Difference{what, std::move(values), severity, note});
  }

  // Adds a difference whatever the values: something every reader must see.
  void flag(const std::string& what, Severity severity, std::vector<std::string> values,
            const std::string& note) {
    found_.push_back(Difference{what, std::move(values), severity, note});
  }

  std::vector<Difference> take() {
    std::stable_sort(found_.begin(), found_.end(), [](const Difference& a, const Difference& b) {
      return static_cast<int>(a.severity) < static_cast<int>(b.severity);
    });
    return std::move(found_);
  }

 private:
  const std::vector<report::Report>& reports_;
  std::vector<Difference> found_;
};

}  // namespace

std::string describe_fallbacks(const report::Report& r) {
  if (!r.batching) return "not recorded";
  const std::vector<report::Fallback>& fallbacks = r.batching->fallbacks;
  if (fallbacks.empty()) return "none";
  std::string out;
  double lost = 0.0;
  for (const report::Fallback& f : fallbacks) {
    if (!out.empty()) out += ", ";
    out +=
        fmt::format("{}x{} -> {}x{} at step {}", f.from_micro_batch_size, f.from_grad_accum_steps,
                    f.to_micro_batch_size, f.to_grad_accum_steps, f.step);
    lost += f.seconds_lost;
  }
  return out + fmt::format(" ({:.3g} s lost)", lost);
}

const char* to_string(Severity severity) {
  return text::spelling_of(kSeveritySpellings, severity).data();
}

namespace {

// The work each run did: status, steps, batch, data and base weights.
void check_work(Differ& differ, const std::vector<report::Report>& reports, Fairness& f) {
  differ.check(
      "run status", Severity::kJob, [](const report::Report& r) { return r.status; },
      "a run that did not complete did not do the same work");
  differ.check("steps finished", Severity::kJob,
               [](const report::Report& r) { return std::to_string(r.steps.size()); });
  differ.check("effective batch", Severity::kJob,
               [](const report::Report& r) { return std::to_string(r.derived.effective_batch); });

  // The data: by fingerprint where every report has one.
  const bool all_have_data = std::all_of(
      reports.begin(), reports.end(), [](const report::Report& r) { return r.data.has_value(); });
  if (all_have_data) {
    differ.check("data fingerprint", Severity::kJob,
                 [](const report::Report& r) { return r.data->fingerprint; });
    f.same_data_fingerprint =
        std::all_of(reports.begin(), reports.end(), [&](const report::Report& r) {
          return r.data->fingerprint == reports.front().data->fingerprint;
        });
  }

  // The base weights: random or loaded (reports before 1.4 had random weights), then by
  // fingerprint where every report loaded a checkpoint (random weights of the same spec and
  // seed are the same; the spec keys cover them).
  differ.check(
      "weights", Severity::kJob,
      [](const report::Report& r) { return r.weights ? r.weights->source : std::string("random"); },
      "random weights against a loaded checkpoint: the losses are not comparable");
  const bool all_loaded = std::all_of(reports.begin(), reports.end(), [](const report::Report& r) {
    return r.weights && r.weights->source == "checkpoint";
  });
  if (all_loaded) {
    differ.check(
        "weights fingerprint", Severity::kJob,
        [](const report::Report& r) { return r.weights->fingerprint; },
        "the checkpoints hold different weights: the losses are not comparable");
  }
}

// The spec, key by key (a key missing from an older report counts at its default), and the
// spec fingerprint.
void check_spec(Differ& differ, const std::vector<report::Report>& reports, Fairness& f) {
  // The spec, key by key.
  std::vector<std::string> order;
  std::set<std::string> seen;
  std::vector<std::map<std::string, std::string>> flat(reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    flatten(reports[i].spec, "spec", order, seen, flat[i]);
  }
  // A key added to the spec after a report was written is absent from it; the job it ran had
  // that key's default (new keys keep the old behaviour as their default).
  std::vector<std::string> default_order;
  std::set<std::string> default_seen;
  std::map<std::string, std::string> defaults;
  flatten(nlohmann::ordered_json(spec::to_json(spec::RunSpec{})), "spec", default_order,
          default_seen, defaults);
  // Keys reports before model.checkpoint had, at the values that meant what a report without
  // them means (random weights).
  defaults["spec.model.init"] = "random";
  defaults["spec.model.checkpoint_path"] = "";
  defaults["spec.model.checkpoint"] = "";
  for (const std::string& path : order) {
    // Output settings (names, paths, progress) and where the spec file was never matter.
    if (starts_with(path, "spec.output.") || path == "spec.source_path") continue;
    std::vector<std::string> values;
    for (const auto& m : flat) {
      const auto it = m.find(path);
      if (it != m.end()) {
        values.push_back(it->second);
      } else if (const auto d = defaults.find(path); d != defaults.end()) {
        values.push_back(d->second);
      } else {
        values.push_back(kAbsent);
      }
    }
    differ.add(path, classify_spec_key(path), std::move(values), spec_note(path));
  }

  f.same_spec_fingerprint =
      std::all_of(reports.begin(), reports.end(), [&](const report::Report& r) {
        return r.spec_fingerprint == reports.front().spec_fingerprint;
      });
  if (!f.same_spec_fingerprint) {
    differ.check(
        "spec fingerprint", Severity::kExecution,
        [](const report::Report& r) { return r.spec_fingerprint.substr(0, 12); },
        "the job keys listed as job differences decide; execution keys also change it");
  }
}

// How the runs executed: energy, fallbacks, segments, world size, timing origin and warm-up.
void check_execution(Differ& differ, const std::vector<report::Report>& reports, Fairness& f) {
  // Energy (since 1.6): compared only where every report measured it the same way.
  differ.check(
      "energy figures", Severity::kExecution,
      [](const report::Report& r) {
        if (!r.energy) return std::string("none: not recorded (report schema 1.5 or older)");
        if (!r.energy->joules) return "none: " + r.energy->reason;
        return r.energy->method + " (" + r.energy->source + ")";
      },
      "GPU board energy is compared only between reports that measured it; a hardware counter "
      "and integrated power readings agree only to the power reading's accuracy");
  // A resumed run's energy is its last process's: its total is not the run's.
  if (std::any_of(reports.begin(), reports.end(),
                  [](const report::Report& r) { return !report::energy_scope(r).empty(); })) {
    differ.check(
        "energy coverage", Severity::kExecution,
        [](const report::Report& r) {
          if (!r.energy || !r.energy->joules) return std::string("none measured");
          const std::string scope = report::energy_scope(r);
          return scope.empty() ? std::string("the whole run") : scope;
        },
        "a resumed run measures the energy of its last process only: compare energy per step or "
        "per 1M tokens, not the totals");
  }

  // An out-of-memory fallback is always listed, even when every report fell back the same way:
  // the steps after it ran at another micro-batch than the spec says.
  f.fell_back = std::any_of(reports.begin(), reports.end(), [](const report::Report& r) {
    return r.batching && !r.batching->fallbacks.empty();
  });
  if (f.fell_back) {
    std::vector<std::string> values;
    for (const report::Report& r : reports) values.push_back(describe_fallbacks(r));
    differ.flag("out-of-memory fallback", Severity::kExecution, std::move(values),
                "ran out of memory and redid the step at a smaller micro-batch (micro-batch x "
                "accumulation), same effective batch and examples; later steps ran at that "
                "split, so they are slower and use less memory than the spec's; the lost time "
                "is in the run time, not in the step times");
  }

  // A resumed run is always listed: each restart paid its set-up again, which its run time
  // and cost include.
  const bool resumed = std::any_of(reports.begin(), reports.end(),
                                   [](const report::Report& r) { return r.segments.size() > 1; });
  if (resumed) {
    std::vector<std::string> values;
    for (const report::Report& r : reports) {
      const size_t n = std::max<size_t>(1, r.segments.size());
      values.push_back(n == 1 ? "1 (never interrupted)"
                              : fmt::format("{} (resumed {} time{})", n, n - 1, n == 2 ? "" : "s"));
    }
    differ.flag("segments", Severity::kExecution, std::move(values),
                "processes the run took: a run interrupted and resumed paid its set-up once per "
                "segment, billed as separate rentals; its step times are unaffected");
  }

  // What ran where the spec leaves it open (report `execution`, since 1.12): the checkpointing
  // policy (auto's choice; a report without the record ran its spec's), the fused blocks and
  // ftbench's GPU kernels (compared where every report recorded them).
  differ.check(
      "activation checkpointing that ran", Severity::kExecution,
      [](const report::Report& r) {
        std::string spec = "none";
        if (const auto m = r.spec.find("model"); m != r.spec.end() && m->is_object()) {
          if (const auto k = m->find("activation_checkpointing"); k != m->end()) {
            spec = k->is_boolean()  ? (k->get<bool>() ? "full" : "none")
                   : k->is_string() ? k->get<std::string>()
                                    : k->dump();
          }
        }
        if (!r.execution) return spec;
        const std::string& ran = r.execution->activation_checkpointing;
        return spec == ran ? ran : fmt::format("{} ({})", ran, spec);
      },
      "what each layer's backward recomputed, as run (auto resolved); the policies differ in "
      "memory and speed, not in what is computed");
  const bool all_executions = std::all_of(reports.begin(), reports.end(),
                                          [](const report::Report& r) { return r.execution; });
  if (all_executions) {
    differ.check(
        "fused blocks", Severity::kExecution,
        [](const report::Report& r) { return r.execution->fused_blocks ? "on" : "off"; },
        "off: the step as before the fused blocks (FTBENCH_FUSED_BLOCKS=0), more ops and bytes");
    differ.check(
        "GPU kernels of ftbench's own", Severity::kExecution,
        [](const report::Report& r) { return r.execution->gpu_kernels ? "on" : "off"; },
        "FTBENCH_GPU_KERNELS=1: ftbench's rotary-embedding kernel instead of ATen's operators");
  }
  differ.check(
      "world size", Severity::kExecution,
      [](const report::Report& r) { return std::to_string(r.world_size); },
      "devices used; costs scale with it");
  differ.check(
      "t0 source", Severity::kExecution, [](const report::Report& r) { return r.t0_source; },
      "time to first step is measured from different starting points");
  differ.check("timing warm-up steps excluded", Severity::kExecution, [](const report::Report& r) {
    return std::to_string(r.summary.warmup_steps_excluded);
  });
  differ.check("build type", Severity::kExecution,
               [](const report::Report& r) { return r.environment.software.build_type; });
}

// Where they ran: device, drivers, software, host.
void check_platform(Differ& differ) {
  const auto& env = [](const report::Report& r) -> const report::Environment& {
    return r.environment;
  };
  differ.check("device", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).device.name; });
  differ.check("backend", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).device.backend; });
  differ.check("driver", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).device.driver_version; });
  differ.check("runtime", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).device.runtime_version; });
  differ.check("LibTorch", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).software.libtorch_version; });
  differ.check("container image", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).software.container_image; });
  differ.check("ftbench", Severity::kPlatform, [&](const report::Report& r) {
    return env(r).software.ftbench_version + " (" + env(r).software.git_commit + ")";
  });
  differ.check("compiler", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).software.compiler; });
  differ.check("intra-op threads", Severity::kPlatform, [&](const report::Report& r) {
    return std::to_string(env(r).software.intra_op_threads);
  });
  differ.check("BLAS", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).software.blas; });
  differ.check("host CPU", Severity::kPlatform,
               [&](const report::Report& r) { return env(r).host.cpu_model; });
}

}  // namespace

Fairness check_fairness(const std::vector<report::Report>& reports) {
  Fairness f;
  if (reports.size() < 2) return f;
  Differ differ(reports);
  check_work(differ, reports, f);
  check_spec(differ, reports, f);
  check_execution(differ, reports, f);
  check_platform(differ);
  f.differences = differ.take();
  f.same_job = std::none_of(f.differences.begin(), f.differences.end(),
                            [](const Difference& d) { return d.severity == Severity::kJob; });
  return f;
}

nlohmann::ordered_json fairness_json(const Fairness& fairness) {
  nlohmann::ordered_json fair;
  fair["same_job"] = fairness.same_job;
  fair["same_spec_fingerprint"] = fairness.same_spec_fingerprint;
  fair["same_data_fingerprint"] = fairness.same_data_fingerprint
                                      ? nlohmann::ordered_json(*fairness.same_data_fingerprint)
                                      : nlohmann::ordered_json(nullptr);
  fair["fell_back"] = fairness.fell_back;
  nlohmann::ordered_json diffs = nlohmann::ordered_json::array();
  for (const Difference& d : fairness.differences) {
    diffs.push_back({{"what", d.what},
                     {"severity", to_string(d.severity)},
                     {"values", d.values},
                     {"note", d.note}});
  }
  fair["differences"] = std::move(diffs);
  return fair;
}

}  // namespace ftbench::compare
