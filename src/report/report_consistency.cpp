// The report's consistency checks (docs/report-schema.md, Consistency).
#include "report/report_consistency.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/process_clock.h"
#include "report/report_bounds.h"
#include "report/report_io.h"
#include "report/run_status.h"
#include "util/text/iso8601.h"
#include "util/text/json_fields.h"
#include "util/text/messages.h"

namespace ftbench::report::detail {
namespace {

class Consistency : public text::JsonFields<nlohmann::json, ReportError> {
  using Fields = text::JsonFields<nlohmann::json, ReportError>;

 public:
  using Fields::fail;
  using Fields::index;
  using Fields::join;

  Consistency(const std::string& source, bool run_may_be_unfinished)
      : Fields(source), run_may_be_unfinished_(run_may_be_unfinished) {}

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
                    device::kMaxExternalStartSeconds);
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

  // Saves are listed in the order they were made, at most one a step, each after a step of the
  // segment that made it.
  void check_checkpoints(const Report& r) const {
    for (std::size_t i = 0; i < r.checkpoints.size(); ++i) {
      const CheckpointSave& c = r.checkpoints[i];
      const std::string path = index("checkpoints", i);
      check_segment_exists(c.segment, r, join(path, "segment"));
      if (i > 0 && c.step <= r.checkpoints[i - 1].step) {
        fail(join(path, "step") + ": expected a step after " +
             std::to_string(r.checkpoints[i - 1].step) + " (" + index("checkpoints", i - 1) +
             ".step: saves are listed in the order they were made, at most one a step), found " +
             std::to_string(c.step));
      }
      if (r.segments.empty()) continue;
      const auto g_index = static_cast<std::size_t>(c.segment - 1);
      const Segment& g = r.segments[g_index];
      if (g.first_step > 0 && (c.step < g.first_step || c.step > g.last_step)) {
        fail(join(path, "step") + ": step " + std::to_string(c.step) + " is not among segment " +
             std::to_string(g.index) + "'s steps " + std::to_string(g.first_step) + " to " +
             std::to_string(g.last_step) + " (" + index("segments", g_index) +
             ".first_step, last_step)");
      }
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
    // A checkpoint's partial report may say what its segments may say: "unfinished".
    const std::vector<std::string>& run_statuses =
        run_may_be_unfinished_ ? status::segment_statuses() : status::run_statuses();
    const std::vector<std::string>& segment_statuses = status::segment_statuses();
    const auto known = [](const std::vector<std::string>& set, const std::string& v) {
      return std::find(set.begin(), set.end(), v) != set.end();
    };
    if (!known(run_statuses, r.status)) {
      fail("run.status: expected one of " + text::join(run_statuses) + ", found " +
           text::quoted(r.status));
    }
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
      if (!known(segment_statuses, r.segments[i].status)) {
        fail(join(index("segments", i), "status") + ": expected one of " +
             text::join(segment_statuses) + ", found " + text::quoted(r.segments[i].status));
      }
    }
    const auto check_time = [&](const std::string& path, const std::string& time) {
      if (!time.empty() && !text::parse_iso8601_utc(time)) {
        fail(path + ": expected a UTC time such as 2026-11-29T22:34:05.123Z, found " +
             text::quoted(time));
      }
    };
    check_time("run.started_at_utc", r.started_at_utc);
    check_time("run.finished_at_utc", r.finished_at_utc);
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
      check_time(join(index("segments", i), "started_at_utc"), r.segments[i].started_at_utc);
      check_time(join(index("segments", i), "finished_at_utc"), r.segments[i].finished_at_utc);
    }
    if (!r.started_at_utc.empty() && !r.finished_at_utc.empty() &&
        r.finished_at_utc < r.started_at_utc) {
      fail("run.finished_at_utc: " + text::quoted(r.finished_at_utc) + " is before " +
           "run.started_at_utc " + text::quoted(r.started_at_utc));
    }
    const auto steps = static_cast<int64_t>(r.steps.size());
    if (r.status == status::kCompleted && r.derived.total_steps > 0 &&
        steps != r.derived.total_steps) {
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

  // The summary's counts hold together with the steps.
  void check_summary(const Report& r) const {
    const Summary& s = r.summary;
    const auto n = static_cast<int64_t>(r.steps.size());
    const int64_t excluded = s.warmup_steps_excluded + s.profiled_steps_excluded;
    if (excluded > n || (n > 0 && excluded == n)) {
      fail(std::string(s.profiled_steps_excluded > 0
                           ? "summary.warmup_steps_excluded + summary.profiled_steps_excluded"
                           : "summary.warmup_steps_excluded") +
           ": expected fewer than the report's " + std::to_string(n) +
           " steps (0 when it has none), found " + std::to_string(s.warmup_steps_excluded) +
           (s.profiled_steps_excluded > 0 ? " + " + std::to_string(s.profiled_steps_excluded)
                                          : std::string()));
    }
    if (s.profiled_steps_excluded > 0 && !r.profile) {
      fail("summary.profiled_steps_excluded: expected 0 in a report without a profile, found " +
           std::to_string(s.profiled_steps_excluded));
    }
    if (r.profile && r.profile->last_step < r.profile->first_step) {
      fail("profile.last_step: expected at least profile.first_step " +
           std::to_string(r.profile->first_step) + ", found " +
           std::to_string(r.profile->last_step));
    }
    if (s.measured_steps != n - excluded) {
      fail("summary.measured_steps: expected the " + std::to_string(n) +
           " steps less summary.warmup_steps_excluded " + std::to_string(s.warmup_steps_excluded) +
           (s.profiled_steps_excluded > 0 ? " and summary.profiled_steps_excluded " +
                                                std::to_string(s.profiled_steps_excluded)
                                          : std::string()) +
           " = " + std::to_string(n - excluded) + ", found " + std::to_string(s.measured_steps));
    }
    if (n > 0 && (s.loss_window < 1 || s.loss_window > n)) {
      fail("summary.loss.window: expected 1 to the report's " + std::to_string(n) +
           " steps, found " + std::to_string(s.loss_window));
    }
    // The figures the steps determine are recomputed from them by the commands that read a
    // report (metrics::check_summary_figures): this module computes nothing.
  }

  // The run's memory peaks are the largest of its phases':
  // the device ones equal to it, the host's resident peak (taken over the whole process) at
  // least as large as any resident size a phase saw. Reports before 1.2 have no phase figures.
  void check_memory_peaks(const Report& r) const {
    const bool recorded = std::any_of(r.phases.begin(), r.phases.end(),
                                      [](const Phase& p) { return p.memory.has_value(); });
    if (!recorded) return;
    Memory expected;
    const auto keep_max = [](std::optional<int64_t>& peak, const std::optional<int64_t>& value) {
      if (value) peak = std::max(peak.value_or(*value), *value);
    };
    for (const Phase& p : r.phases) {
      if (!p.memory) continue;
      keep_max(expected.peak_allocated_bytes, p.memory->peak_allocated_bytes);
      keep_max(expected.peak_reserved_bytes, p.memory->peak_reserved_bytes);
      keep_max(expected.peak_active_bytes, p.memory->peak_active_bytes);
      keep_max(expected.device_used_peak_bytes, p.memory->device_used_peak_bytes);
    }
    for (const auto& [found, peak, key] :
         {std::tuple{&r.memory.peak_allocated_bytes, &expected.peak_allocated_bytes,
                     "peak_allocated_bytes"},
          std::tuple{&r.memory.peak_reserved_bytes, &expected.peak_reserved_bytes,
                     "peak_reserved_bytes"},
          std::tuple{&r.memory.peak_active_bytes, &expected.peak_active_bytes, "peak_active_bytes"},
          std::tuple{&r.memory.device_used_peak_bytes, &expected.device_used_peak_bytes,
                     "device_used_peak_bytes"}}) {
      if (*found != *peak) {
        fail(join("memory", key) + ": expected the largest of timing.phases[].memory." + key +
             " = " + (*peak ? std::to_string(**peak) : std::string("null (none measured)")) +
             ", found " + (*found ? std::to_string(**found) : std::string("null")));
      }
    }
    if (!r.memory.peak_rss_bytes) return;
    int64_t largest = 0;
    std::string where;
    for (std::size_t i = 0; i < r.phases.size(); ++i) {
      if (!r.phases[i].memory) continue;
      const PhaseMemory& p = *r.phases[i].memory;
      for (const auto& [value, key] : {std::pair{&p.peak_rss_bytes, "peak_rss_bytes"},
                                       std::pair{&p.rss_at_end_bytes, "rss_at_end_bytes"}}) {
        if (*value && **value > largest) {
          largest = **value;
          where = join(join(index("timing.phases", i), "memory"), key);
        }
      }
    }
    if (largest > *r.memory.peak_rss_bytes) {
      fail(
          "memory.peak_rss_bytes: expected at least the largest resident size of "
          "timing.phases[].memory, " +
          std::to_string(largest) + " (" + where + "), found " +
          std::to_string(*r.memory.peak_rss_bytes));
    }
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

 public:
  void check_consistency(const Report& r) const {
    check_durations(r);
    check_memory(r);
    check_parts(r);
    check_segments(r);
    check_checkpoints(r);
    check_steps(r);
    check_run(r);
    check_summary(r);
    check_memory_peaks(r);
    check_energy(r);
  }

 private:
  bool run_may_be_unfinished_;
};

}  // namespace

void check_consistency(const Report& report, const std::string& source,
                       bool run_may_be_unfinished) {
  Consistency(source, run_may_be_unfinished).check_consistency(report);
}

}  // namespace ftbench::report::detail
