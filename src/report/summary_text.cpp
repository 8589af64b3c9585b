#include "report/summary_text.h"
#include <algorithm>
#include <cmath>

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "report/phase_names.h"
#include "report/records.h"
#include "report/report.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::report {

std::string group_thousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

std::string energy_text(const Energy& e) {
  if (!e.joules) return "n/a: " + e.reason;
  std::string out = fmt::format("{:.1f} J", *e.joules);
  if (e.joules_per_step) out += fmt::format(", {:.2f} J/step", *e.joules_per_step);
  if (e.joules_per_million_tokens) {
    out += fmt::format(", {:.1f} kJ per 1M tokens", *e.joules_per_million_tokens / 1e3);
  }
  if (e.mean_watts)
    out += fmt::format("; mean {:.1f} W, peak {:.1f} W", *e.mean_watts, *e.peak_watts);
  out += fmt::format(" ({}: {}; {} samples every {:.0f} ms, {:.1f}% of {:.2f} s)",
                     e.method == "energy_counter"      ? "energy counter"
                     : e.method == "power_integration" ? "power integrated"
                                                       : "mixed",
                     e.source, e.sample_count, e.interval_seconds * 1e3,
                     100.0 * e.coverage.value_or(0.0), e.window_seconds);
  return out;
}

std::string energy_scope(const Report& r) {
  if (!r.energy || !r.energy->joules) return "";
  const Energy& e = *r.energy;
  const auto all = static_cast<int64_t>(r.steps.size());
  if (e.steps == all) return "";
  const int64_t processes = std::max<int64_t>(static_cast<int64_t>(r.segments.size()), e.segment);
  return fmt::format("process {} of {} only: {} of {} steps", e.segment, processes, e.steps, all);
}

namespace {

// The lines of a job of several processes: its ranks, and how they did together.
std::vector<std::pair<std::string, std::string>> rank_lines(int64_t world_size,
                                                            const Distributed& g) {
  std::vector<std::pair<std::string, std::string>> lines = {
      {"ranks", fmt::format("{} ({}, {}), {:.0f} tokens/s per device", world_size, g.launch,
                            g.backend, g.tokens_per_second_per_device)},
      {"between ranks",
       fmt::format("step skew {:.4f} s (median), {:.1f}% of the step in collectives{}",
                   g.step_skew_seconds, 100.0 * g.collective_share,
                   g.straggler_rank ? fmt::format(", slowest rank {}", *g.straggler_rank)
                                    : std::string())}};
  int64_t smallest = 0;
  int64_t largest = 0;
  for (const RankRecord& rank : g.ranks) {
    smallest = smallest == 0 ? rank.shard_group_size : std::min(smallest, rank.shard_group_size);
    largest = std::max(largest, rank.shard_group_size);
  }
  if (largest > 1) {
    const RankRecord& first = g.ranks.front();
    lines.emplace_back(
        "base split",
        fmt::format("{} ({}){}: rank {} holds {}, {} gathers, {:.3f} s waited for them",
                    smallest == largest ? fmt::format("over {} ranks", largest)
                                        : fmt::format("over {} to {} ranks", smallest, largest),
                    g.shard_base, smallest == 1 ? ", some ranks whole" : "", first.rank,
                    first.base_bytes ? text::format_bytes(*first.base_bytes) + " of it"
                                     : std::string("an unrecorded share of it"),
                    first.gathers, first.gather_wait_seconds));
  }
  return lines;
}

}  // namespace

std::string warmup_caveat(const Report& r) {
  if (r.steps.empty() || r.summary.warmup_steps_excluded > 0) return "";
  const auto train = r.spec.find("train");
  if (train == r.spec.end() || !train->is_object()) return "";
  const auto warmup = train->find("timing_warmup_steps");
  if (warmup == train->end() || !warmup->is_number_integer() || warmup->get<int64_t>() <= 0) {
    return "";
  }
  return fmt::format(
      "no step is after the {} warm-up step{}, so the timed steps include the cold ones",
      warmup->get<int64_t>(), warmup->get<int64_t>() == 1 ? "" : "s");
}

namespace {

// "3 (started again 1 time, resumed 1 time), 4.50 s rented in all": a later segment either
// resumed from a checkpoint or started again at step 1 (after a process that ended before any
// checkpoint).
std::string segments_text(const Report& r) {
  double total = 0.0;
  for (const Segment& g : r.segments) total += g.run_seconds;
  std::size_t resumed = 0;
  for (std::size_t i = 1; i < r.segments.size(); ++i)
    resumed += !r.segments[i].resumed_from.empty();
  const std::size_t again = r.segments.size() - 1 - resumed;
  const auto times = [](std::size_t n) { return fmt::format("{} time{}", n, n == 1 ? "" : "s"); };
  std::string how;
  if (again > 0) how = "started again " + times(again);
  if (resumed > 0) how += (how.empty() ? "" : ", ") + std::string("resumed ") + times(resumed);
  return fmt::format("{} ({}), {:.2f} s rented in all", r.segments.size(), how, total);
}

// "attention kernel flash_attention, activation checkpointing none (auto: none 1.2 GiB, ...)".
std::string execution_text(const Execution& e) {
  std::string chosen;
  if (const std::optional<CheckpointingChoice>& c = e.checkpointing_choice) {
    std::vector<std::string> needs;
    for (const PolicyNeed& n : c->needed_bytes) {
      needs.push_back(fmt::format("{} {}", n.policy, text::format_bytes(n.bytes)));
    }
    chosen = fmt::format(" (auto: {} of {} usable{})", fmt::join(needs, ", "),
                         text::format_bytes(c->usable_bytes), c->fits ? "" : "; nothing fits");
  }
  return fmt::format("attention kernel {}, activation checkpointing {}{}", e.attention_kernel,
                     e.activation_checkpointing, chosen);
}

// "steps 2 to 3: ops 0.123 s of self time, device kernels 0.100 s; trace r.profile-trace.json".
std::string profile_text(const Profile& p) {
  return fmt::format(
      "step{} {}: ops {:.3f} s of self time{}; trace {}", p.first_step == p.last_step ? "" : "s",
      p.first_step == p.last_step ? fmt::format("{}", p.first_step)
                                  : fmt::format("{} to {}", p.first_step, p.last_step),
      p.op_self_seconds,
      p.device_activity ? fmt::format(", device kernels {:.3f} s", p.kernel_seconds) : "", p.trace);
}

// The memory lines: the allocator's peak (on a CPU run, what LibTorch's CPU tensors held at
// most: device/cpu_tensor_bytes.h) beside the plan's prediction, the device's and the host's
// peaks.
std::vector<std::pair<std::string, std::string>> memory_lines(const Report& r) {
  std::vector<std::pair<std::string, std::string>> lines;
  const Memory& m = r.memory;
  if (m.peak_allocated_bytes) {
    std::string value = text::format_bytes(*m.peak_allocated_bytes);
    if (m.predicted_peak_bytes && *m.peak_allocated_bytes > 0) {
      value += fmt::format(" (plan: {}, {:+.1f} %)", text::format_bytes(*m.predicted_peak_bytes),
                           100.0 * (static_cast<double>(*m.predicted_peak_bytes) /
                                        static_cast<double>(*m.peak_allocated_bytes) -
                                    1.0));
    }
    lines.emplace_back(
        r.environment.device.backend == "cpu" ? "peak tensor bytes" : "peak allocated", value);
  }
  if (m.device_used_peak_bytes) {
    lines.emplace_back("peak device used", text::format_bytes(*m.device_used_peak_bytes));
  }
  if (m.peak_rss_bytes) lines.emplace_back("peak host RSS", text::format_bytes(*m.peak_rss_bytes));
  return lines;
}

}  // namespace

std::string render_summary(const Report& r, const std::string& report_path) {
  const Summary& s = r.summary;
  const DeviceInfo& d = r.environment.device;
  std::string out;
  // Names and paths come from the spec and the device: printed escaped (text::printable).
  auto line = [&out](const std::string& label, const std::string& value) {
    out += fmt::format("  {:<26}{}\n", label, text::printable(value));
  };
  out += text::printable(fmt::format("ftbench {} - {}", r.run_name, r.status)) + "\n";
  line("device", fmt::format("{} ({}, LibTorch {})", d.name, d.backend,
                             r.environment.software.libtorch_version));
  // "total" as in the report's parameters.total: base + trainable.
  line("parameters",
       fmt::format("{} total: {} base + {} trainable", group_thousands(r.parameters.total),
                   group_thousands(r.parameters.base), group_thousands(r.parameters.trainable)));
  const std::string cold = warmup_caveat(r);
  line("steps", fmt::format("{} ({} timed, {} warm-up excluded{}{})", r.steps.size(),
                            s.measured_steps, s.warmup_steps_excluded,
                            s.profiled_steps_excluded > 0
                                ? fmt::format(", {} profiled excluded", s.profiled_steps_excluded)
                                : "",
                            cold.empty() ? "" : ": " + cold));
  if (r.execution) line("execution", execution_text(*r.execution));
  if (r.profile) line("profile", profile_text(*r.profile));
  if (r.distributed) {
    for (const auto& [label, value] : rank_lines(r.world_size, *r.distributed)) line(label, value);
  }
  // What ran differs from the spec after an out-of-memory fallback: said before any figure.
  if (r.batching) {
    for (const Fallback& f : r.batching->fallbacks) {
      line("out-of-memory fallback",
           fmt::format("step {}: micro-batch {} x {} -> {} x {} ({:.2f} s lost)", f.step,
                       f.from_micro_batch_size, f.from_grad_accum_steps, f.to_micro_batch_size,
                       f.to_grad_accum_steps, f.seconds_lost));
    }
  }
  if (r.weights && r.weights->source == "checkpoint") {
    const WeightsInfo& w = *r.weights;
    line("weights",
         fmt::format("{}: {} in {:.2f} s ({}/s)", w.path, text::format_bytes(w.bytes), w.seconds,
                     text::format_bytes(static_cast<int64_t>(std::llround(w.bytes_per_second)))));
  }
  line("time to first step",
       fmt::format("{:.2f} s (from {})", r.time_to_first_step_seconds, r.t0_source));
  if (r.segments.size() > 1) line("segments", segments_text(r));
  if (!r.checkpoints.empty()) {
    const CheckpointSave& c = r.checkpoints.back();
    line("checkpoints",
         fmt::format("{} saved; last after step {}: {} ({}, {:.3f} s)", r.checkpoints.size(),
                     c.step, c.path, text::format_bytes(c.bytes), c.seconds));
  }
  // Validation passes split the training phase; the time of the parts is summed.
  double training_seconds = 0.0;
  bool trained = false;
  for (const Phase& p : r.phases) {
    if (p.name == phase::kTraining) {
      training_seconds += p.seconds;
      trained = true;
    }
  }
  if (trained) line("training", fmt::format("{:.2f} s", training_seconds));
  line("step time", fmt::format("median {:.4f} s, mean {:.4f} s, p90 {:.4f} s, cv {:.1f}%",
                                s.step_seconds.median, s.step_seconds.mean, s.step_seconds.p90,
                                100.0 * s.step_seconds.cv));
  line("throughput", fmt::format("{:.0f} tokens/s real, {:.0f} padded ({:.1f}% padding)",
                                 s.tokens_per_second_real, s.tokens_per_second_padded,
                                 100.0 * s.padding_fraction));
  for (const MfuEntry& e : s.mfu) {
    // Model FLOPs; with recompute, hardware FLOPs; executed: what the hardware ran, causal
    // attention's half and the recompute included (docs/methodology.md).
    const std::string count = e.formula == "six_n"      ? "6N count"
                              : e.formula == "executed" ? "executed"
                                                        : "LoRA count";
    const std::string label = e.formula == "executed"
                                  ? "TFLOP/s, executed"
                                  : (e.recompute ? "hw TFLOP/s, " : "TFLOP/s, ") + count;
    std::string value = fmt::format("{:.3f}", e.achieved_tflops);
    if (e.mfu) value += fmt::format(" (MFU {:.1f}% of {:.1f})", 100.0 * *e.mfu, *s.peak_tflops);
    if (e.mfu_gemm) {
      value += fmt::format(" ({:.1f}% of the measured GEMM peak {:.4g})", 100.0 * *e.mfu_gemm,
                           *s.gemm_peak_tflops);
    }
    line(label, value);
  }
  for (const auto& [label, value] : memory_lines(r)) line(label, value);
  if (r.energy) {
    const std::string scope = energy_scope(r);
    line("GPU board energy", energy_text(*r.energy) + (scope.empty() ? "" : " [" + scope + "]"));
  }
  line("loss", fmt::format("final {:.4f}, mean of last {} {:.4f}", s.final_loss, s.loss_window,
                           s.mean_last_losses));
  if (!r.evaluations.empty()) {
    const Evaluation& last = r.evaluations.back();
    // Every pass of the run, earlier processes' too (the phases are this process's alone).
    double evaluation_seconds = 0.0;
    for (const Evaluation& e : r.evaluations) evaluation_seconds += e.seconds;
    line("validation loss",
         fmt::format("{:.4f} after step {} ({} tokens; {} pass{}, {:.2f} s evaluating)", last.loss,
                     last.after_step, group_thousands(last.loss_tokens), r.evaluations.size(),
                     r.evaluations.size() == 1 ? "" : "es", evaluation_seconds));
  }
  for (const ExportRecord& x : r.exports) {
    line(x.kind == "peft_adapter" ? "adapter (PEFT)" : "merged weights",
         fmt::format("{} ({}, {:.2f} s)", x.path, text::format_bytes(x.bytes), x.seconds));
  }
  line("report", report_path);
  return out;
}

std::vector<std::string> profile_summary_lines(const ProfileWritten& written) {
  const Profile p = profile_record(written);
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "profile of step{} {}: ops {:.3f} s of self time, {:.4g} GFLOP counted{}",
      p.first_step == p.last_step ? "" : "s",
      p.first_step == p.last_step ? fmt::format("{}", p.first_step)
                                  : fmt::format("{} to {}", p.first_step, p.last_step),
      p.op_self_seconds, p.flops / 1e9,
      p.device_activity ? fmt::format(", device kernels {:.3f} s", p.kernel_seconds) : ""));
  std::vector<std::string> scopes;
  for (const report::ProfileScope& s : p.scopes) {
    scopes.push_back(fmt::format("{} {:.3f} s", s.name, s.self_seconds));
  }
  if (!scopes.empty()) lines.push_back("  scopes (own time): " + text::join(scopes));
  const std::size_t shown = std::min<std::size_t>(p.top_ops.size(), 6);
  for (std::size_t i = 0; i < shown; ++i) {
    const report::ProfileOp& o = p.top_ops[i];
    lines.push_back(
        fmt::format("  {:>6.1f}%  {:>9.3f} ms  {:>6} calls  {}",
                    p.op_self_seconds > 0.0 ? 100.0 * o.self_seconds / p.op_self_seconds : 0.0,
                    o.self_seconds * 1e3, o.calls, text::printable(o.name)));
  }
  std::vector<std::string> attention;
  for (const report::ProfileOp& o : p.attention_ops) attention.push_back(o.name);
  if (!attention.empty()) lines.push_back("  attention ops: " + text::join(attention));
  lines.push_back(
      fmt::format("  trace {}, tables {} and {}", p.trace, p.ops_table, p.kernels_table));
  return lines;
}

}  // namespace ftbench::report
