// The fields of the report and of each of its records, named once in their schema order, with
// the kind that says how each is read and written: the reader (report.cpp, FieldReader) and the
// writer (report_writer.cpp, FieldWriter) visit these functions, so a field added here is read
// and written alike. Only "schema" is outside: the reader checks it first, the writer always
// writes the version it produces.
//
// Kinds, for the reader / the writer:
//   string          a string / as is
//   count           an integer 0..10^15 / as is
//   count_since     a count when present (a later minor version), else the default / as is
//   non_negative    a number >= 0 / null when not finite
//   non_negative_since      a number >= 0 when present, else the default / null when not finite
//   number          any number / null when not finite
//   number_or_nan   a number, null read as NaN / null when not finite
//   optional_integer        an integer or null / null when unset
//   optional_integer_since  as optional_integer, absent read as unset / null when unset
//   string_or_null  a string, null read as "" / "" written as null
//   string_since    a string when present, else the default / as is
//   optional_non_negative   a number >= 0 or null / null when unset
//   boolean         true or false / as is
//   boolean_since   true or false when present, else the default / as is
//   optional_number         a number or null / null when unset
//   optional_number_since   as optional_number, absent read as unset / null when unset
//   positive_integer_since  an integer >= 1 when present, else the default / as is
//   count_in_range_since    an integer in [lo, hi] when present, else the default / as is
//   container_image a string_since that is a container image reference / as is
//   record          an object of the record's own field list / the same
//   optional_record_since   such an object, or null or absent for unset / null when unset
//   records         an array of records of their own field list / the same
//   records_since   as records, absent read as none / the same
//   group           an object whose fields are listed in place (a part of the record that the
//                   schema nests) / the same
//   json_object     any JSON object (the resolved spec) / as is
//   variables       an object of string values, or null or absent for unset / null when unset
//   computed        checked, once the whole report is read, to be the figure or absent / the
//                   figure the writer derives from other fields (with what it is, and why it
//                   can be null, for the reader's messages)
#pragma once

#include <optional>
#include <type_traits>
#include <vector>

#include "report/report.h"
#include "report/report_bounds.h"

namespace ftbench::report::detail {

template <class R, class T>
using IfRecord = std::enable_if_t<std::is_same_v<std::remove_const_t<R>, T>, int>;

// Every segment's run_seconds together, for a reader that wants the whole run's rented time
// without summing (null in a report without segments).
inline std::optional<double> total_run_seconds(const std::vector<Segment>& segments) {
  if (segments.empty()) return std::nullopt;
  double total = 0.0;
  for (const Segment& g : segments) total += g.run_seconds;
  return total;
}

template <class V, class R, IfRecord<R, ParameterInfo> = 0>
void visit_fields(V& v, R& p) {
  v.count("base", p.base);
  v.count("trainable", p.trainable);
  v.count("total", p.total);
}

template <class V, class R, IfRecord<R, Derived> = 0>
void visit_fields(V& v, R& d) {
  v.count("effective_batch", d.effective_batch);
  v.count("micro_batches_per_epoch", d.micro_batches_per_epoch);
  v.count("steps_per_epoch", d.steps_per_epoch);
  v.count("total_steps", d.total_steps);
  v.count("max_tokens_per_step", d.max_tokens_per_step);
}

template <class V, class R, IfRecord<R, DataStatistics> = 0>
void visit_fields(V& v, R& s) {
  v.string("format", s.format);
  v.count("records", s.records);
  v.count("skipped_bad", s.skipped_bad);
  v.count("dropped_too_long", s.dropped_too_long);
  v.count("truncated", s.truncated);
  v.non_negative("mean_length", s.mean_length);
  v.non_negative("p50_length", s.p50_length);
  v.non_negative("p90_length", s.p90_length);
  v.count("max_length", s.max_length);
  v.number("masked_fraction", s.masked_fraction);
}

template <class V, class R, IfRecord<R, ValidationDataInfo> = 0>
void visit_fields(V& v, R& d) {
  v.string("source", d.source);
  v.count("examples", d.examples);
  v.count("tokens", d.tokens);
  v.count("loss_tokens", d.loss_tokens);
}

template <class V, class R, IfRecord<R, Evaluation> = 0>
void visit_fields(V& v, R& e) {
  v.count("after_step", e.after_step);
  v.number_or_nan("loss", e.loss);
  v.count("loss_tokens", e.loss_tokens);
  v.count("batches", e.batches);
  v.non_negative("seconds", e.seconds);
}

template <class V, class R, IfRecord<R, Segment> = 0>
void visit_fields(V& v, R& g) {
  v.count("index", g.index);
  v.string("status", g.status);
  v.string("started_at_utc", g.started_at_utc);
  v.string("finished_at_utc", g.finished_at_utc);
  v.count("first_step", g.first_step);
  v.count("last_step", g.last_step);
  v.non_negative("run_seconds", g.run_seconds);
  v.non_negative("time_to_first_step_seconds", g.time_to_first_step_seconds);
  v.string_or_null("resumed_from", g.resumed_from);
  v.count_since("discarded_steps", g.discarded_steps);
  v.optional_integer_since("intra_op_threads", g.intra_op_threads);
}

template <class V, class R, IfRecord<R, CheckpointSave> = 0>
void visit_fields(V& v, R& c) {
  v.count("step", c.step);
  v.count("segment", c.segment);
  v.string("reason", c.reason);
  v.string("path", c.path);
  v.count("bytes", c.bytes);
  v.non_negative("seconds", c.seconds);
}

template <class V, class R, IfRecord<R, RankStep> = 0>
void visit_fields(V& v, R& s) {
  v.non_negative("wall_seconds", s.wall_seconds);
  v.non_negative("collective_seconds", s.collective_seconds);
}

template <class V, class R, IfRecord<R, RankRecord> = 0>
void visit_fields(V& v, R& r) {
  v.count("rank", r.rank);
  v.string("host", r.host);
  v.string("device", r.device);
  v.records("steps", r.steps);
  v.non_negative("collective_seconds", r.collective_seconds);
  v.count("collective_bytes", r.collective_bytes);
  v.count("collective_calls", r.collective_calls);
  v.optional_integer("peak_rss_bytes", r.peak_rss_bytes);
  v.positive_integer_since("shard_group_size", r.shard_group_size);
  v.optional_integer_since("base_bytes", r.base_bytes);
  v.count_since("gathers", r.gathers);
  v.count_since("gather_bytes", r.gather_bytes);
  v.non_negative_since("gather_wait_seconds", r.gather_wait_seconds);
  v.optional_integer_since("peak_allocated_bytes", r.peak_allocated_bytes);
}

template <class V, class R, IfRecord<R, Distributed> = 0>
void visit_fields(V& v, R& d) {
  v.string("launch", d.launch);
  v.string("backend", d.backend);
  v.string_since("shard_base", d.shard_base);
  v.records("ranks", d.ranks);
  v.non_negative("step_skew_seconds", d.step_skew_seconds);
  v.optional_integer("straggler_rank", d.straggler_rank);
  v.non_negative("collective_share", d.collective_share);
  v.non_negative("tokens_per_second", d.tokens_per_second);
  v.non_negative("tokens_per_second_per_device", d.tokens_per_second_per_device);
}

template <class V, class R, IfRecord<R, WeightsInfo> = 0>
void visit_fields(V& v, R& w) {
  v.string("source", w.source);
  v.string("path", w.path);
  v.string("format", w.format);
  v.count("files", w.files);
  v.count("tensors", w.tensors);
  v.count("bytes", w.bytes);
  v.non_negative("seconds", w.seconds);
  v.non_negative("bytes_per_second", w.bytes_per_second);
  v.string("fingerprint", w.fingerprint);
}

template <class V, class R, IfRecord<R, ExportRecord> = 0>
void visit_fields(V& v, R& x) {
  v.string("kind", x.kind);
  v.string("path", x.path);
  v.count("tensors", x.tensors);
  v.count("bytes", x.bytes);
  v.non_negative("seconds", x.seconds);
}

template <class V, class R, IfRecord<R, Memory> = 0>
void visit_fields(V& v, R& m) {
  v.optional_integer("peak_allocated_bytes", m.peak_allocated_bytes);
  v.optional_integer("peak_reserved_bytes", m.peak_reserved_bytes);
  v.optional_integer("device_used_peak_bytes", m.device_used_peak_bytes);
  v.optional_integer("device_total_bytes", m.device_total_bytes);
  v.optional_integer("peak_rss_bytes", m.peak_rss_bytes);
  v.optional_integer_since("peak_active_bytes", m.peak_active_bytes);
  v.optional_integer_since("allocation_retries", m.allocation_retries);
  v.optional_integer_since("oom_count", m.oom_count);
  v.optional_integer_since("predicted_peak_bytes", m.predicted_peak_bytes);
  v.string_since("prediction_basis", m.prediction_basis);
}

template <class V, class R, IfRecord<R, PhaseMemory> = 0>
void visit_fields(V& v, R& m) {
  v.optional_integer_since("peak_allocated_bytes", m.peak_allocated_bytes);
  v.optional_integer_since("peak_reserved_bytes", m.peak_reserved_bytes);
  v.optional_integer_since("peak_active_bytes", m.peak_active_bytes);
  v.optional_integer_since("device_used_peak_bytes", m.device_used_peak_bytes);
  v.optional_integer_since("peak_rss_bytes", m.peak_rss_bytes);
  v.optional_integer_since("rss_at_end_bytes", m.rss_at_end_bytes);
}

template <class V, class R, IfRecord<R, HostInfo> = 0>
void visit_fields(V& v, R& h) {
  v.string("hostname", h.hostname);
  v.string("os", h.os);
  v.string("kernel", h.kernel);
  v.string("cpu_model", h.cpu_model);
  v.count("cpu_logical_cores", h.cpu_logical_cores);
  v.count("memory_bytes", h.memory_bytes);
}

template <class V, class R, IfRecord<R, DeviceInfo> = 0>
void visit_fields(V& v, R& d) {
  v.string("backend", d.backend);
  v.string("name", d.name);
  v.string("arch", d.arch);
  v.count("count", d.count);
  v.count("index", d.index);
  v.optional_integer("memory_bytes", d.memory_bytes);
  v.optional_integer("multiprocessor_count", d.multiprocessor_count);
  v.string("driver_version", d.driver_version);
  v.string("runtime_version", d.runtime_version);
  v.optional_integer_since("l2_cache_bytes", d.l2_cache_bytes);
  v.optional_integer_since("clock_khz", d.clock_khz);
  v.optional_integer_since("memory_clock_khz", d.memory_clock_khz);
  v.optional_integer_since("memory_bus_width_bits", d.memory_bus_width_bits);
  v.string_since("pci_bus_id", d.pci_bus_id);
  v.string_since("kernel_driver_version", d.kernel_driver_version);
  v.string_since("query_error", d.query_error);
}

template <class V, class R, IfRecord<R, SoftwareInfo> = 0>
void visit_fields(V& v, R& s) {
  v.string("ftbench_version", s.ftbench_version);
  v.string("git_commit", s.git_commit);
  v.string("libtorch_version", s.libtorch_version);
  v.string("compiler", s.compiler);
  v.string("build_type", s.build_type);
  v.count("intra_op_threads", s.intra_op_threads);
  v.count("inter_op_threads", s.inter_op_threads);
  v.string("blas", s.blas);
  v.string("omp_wait_policy", s.omp_wait_policy);
  v.string("host_allocator", s.host_allocator);
  v.string_since("libtorch_build", s.libtorch_build);
  v.container_image("container_image", s.container_image);
}

template <class V, class R, IfRecord<R, Fallback> = 0>
void visit_fields(V& v, R& f) {
  v.count("step", f.step);
  v.count("from_micro_batch_size", f.from_micro_batch_size);
  v.count("from_grad_accum_steps", f.from_grad_accum_steps);
  v.count("to_micro_batch_size", f.to_micro_batch_size);
  v.count("to_grad_accum_steps", f.to_grad_accum_steps);
  v.non_negative("seconds_lost", f.seconds_lost);
  v.string("error", f.error);
}

template <class V, class R, IfRecord<R, MeasuredGemmDtype> = 0>
void visit_fields(V& v, R& d) {
  v.string("dtype", d.dtype);
  v.non_negative("max_tflops", d.max_tflops);
  v.non_negative("median_tflops", d.median_tflops);
  v.count("best_m", d.best_m);
  v.count("best_n", d.best_n);
  v.count("best_k", d.best_k);
}

template <class V, class R, IfRecord<R, DeviceEnergy> = 0>
void visit_fields(V& v, R& d) {
  v.count("index", d.index);
  v.string("pci_bus_id", d.pci_bus_id);
  v.string("method", d.method);
  v.string("source", d.source);
  v.string("library", d.library);
  v.non_negative("joules", d.joules);
  v.non_negative("sampled_seconds", d.sampled_seconds);
  v.optional_non_negative("mean_watts", d.mean_watts);
  v.optional_non_negative("peak_watts", d.peak_watts);
  v.count("samples", d.samples);
  v.count("failed_reads", d.failed_reads);
  v.count("counter_resets", d.counter_resets);
}

template <class V, class R, IfRecord<R, Energy> = 0>
void visit_fields(V& v, R& e) {
  v.string("reason", e.reason);
  v.string("method", e.method);
  v.string("source", e.source);
  v.count("segment", e.segment);
  v.non_negative("interval_seconds", e.interval_seconds);
  v.non_negative("window_start_seconds", e.window_start_seconds);
  v.non_negative("window_seconds", e.window_seconds);
  v.count("steps", e.steps);
  v.count("tokens", e.tokens);
  v.optional_non_negative("joules", e.joules);
  v.optional_non_negative("joules_per_step", e.joules_per_step);
  v.optional_non_negative("joules_per_million_tokens", e.joules_per_million_tokens);
  v.optional_non_negative("mean_watts", e.mean_watts);
  v.optional_non_negative("peak_watts", e.peak_watts);
  v.optional_non_negative("sampled_seconds", e.sampled_seconds);
  v.optional_non_negative("coverage", e.coverage);
  v.count("sample_count", e.sample_count);
  v.records("devices", e.devices);
}

template <class V, class R, IfRecord<R, StepRecord> = 0>
void visit_fields(V& v, R& s) {
  v.count("step", s.step);
  v.count("epoch", s.epoch);
  v.non_negative("wall_seconds", s.wall_seconds);
  v.non_negative("data_wait_seconds", s.data_wait_seconds);
  v.count("real_tokens", s.real_tokens);
  v.count("padded_tokens", s.padded_tokens);
  v.count("loss_tokens", s.loss_tokens);
  // A diverged run writes its non-finite losses and norms as null; they read back as NaN.
  v.number_or_nan("loss", s.loss);
  v.number("lr", s.lr);
  v.number_or_nan("grad_norm", s.grad_norm);
  v.number("model_flops", s.model_flops);
  v.positive_integer_since("segment", s.segment);
}

template <class V, class R, IfRecord<R, SampleSummary> = 0>
void visit_fields(V& v, R& s) {
  v.count("count", s.count);
  v.non_negative("mean", s.mean);
  v.non_negative("median", s.median);
  v.non_negative("p90", s.p90);
  v.non_negative("p99", s.p99);
  v.non_negative("min", s.min);
  v.non_negative("max", s.max);
  v.non_negative("stddev", s.stddev);
  v.non_negative("cv", s.cv);
}

template <class V, class R, IfRecord<R, MfuEntry> = 0>
void visit_fields(V& v, R& e) {
  v.string("formula", e.formula);
  v.boolean("recompute", e.recompute);
  v.number("flops_per_step", e.flops_per_step);
  v.number("achieved_tflops", e.achieved_tflops);
  v.optional_number("mfu", e.mfu);
  v.optional_number_since("mfu_gemm", e.mfu_gemm);
}

template <class V, class R, IfRecord<R, PolicyNeed> = 0>
void visit_fields(V& v, R& n) {
  v.string("policy", n.policy);
  v.count("bytes", n.bytes);
}

template <class V, class R, IfRecord<R, CheckpointingChoice> = 0>
void visit_fields(V& v, R& c) {
  v.count("usable_bytes", c.usable_bytes);
  v.boolean("fits", c.fits);
  v.records("needed_bytes", c.needed_bytes);
}

template <class V, class R, IfRecord<R, Execution> = 0>
void visit_fields(V& v, R& e) {
  v.string("attention_kernel", e.attention_kernel);
  v.string("activation_checkpointing", e.activation_checkpointing);
  v.boolean("fused_blocks", e.fused_blocks);
  v.optional_record_since("checkpointing_choice", e.checkpointing_choice);
  v.boolean_since("gpu_kernels", e.gpu_kernels);
}

template <class V, class R, IfRecord<R, ProfileOp> = 0>
void visit_fields(V& v, R& o) {
  v.string("name", o.name);
  v.count("calls", o.calls);
  v.non_negative("self_seconds", o.self_seconds);
  v.non_negative("flops", o.flops);
}

template <class V, class R, IfRecord<R, ProfileScope> = 0>
void visit_fields(V& v, R& s) {
  v.string("name", s.name);
  v.count("calls", s.calls);
  v.non_negative("seconds", s.seconds);
  v.non_negative("self_seconds", s.self_seconds);
}

template <class V, class R, IfRecord<R, Profile> = 0>
void visit_fields(V& v, R& p) {
  v.count("first_step", p.first_step);
  v.count("last_step", p.last_step);
  v.string("trace", p.trace);
  v.string("ops_table", p.ops_table);
  v.string("kernels_table", p.kernels_table);
  v.boolean("device_activity", p.device_activity);
  v.non_negative("op_self_seconds", p.op_self_seconds);
  v.non_negative("kernel_seconds", p.kernel_seconds);
  v.non_negative("flops", p.flops);
  v.count("leaf_input_bytes", p.leaf_input_bytes);
  v.count("leaf_calls_without_bytes", p.leaf_calls_without_bytes);
  v.records("scopes", p.scopes);
  v.records("top_ops", p.top_ops);
  v.records("attention_ops", p.attention_ops);
}

template <class V, class R, IfRecord<R, Summary> = 0>
void visit_fields(V& v, R& s) {
  v.count("warmup_steps_excluded", s.warmup_steps_excluded);
  v.count_since("profiled_steps_excluded", s.profiled_steps_excluded);
  v.count("measured_steps", s.measured_steps);
  v.record("step_seconds", s.step_seconds);
  v.group("tokens_per_second", [&](auto& g) {
    g.non_negative("real", s.tokens_per_second_real);
    g.non_negative("padded", s.tokens_per_second_padded);
  });
  v.number("padding_fraction", s.padding_fraction);
  v.number("data_wait_fraction", s.data_wait_fraction);
  v.group("mfu", [&](auto& g) {
    g.optional_number("peak_tflops", s.peak_tflops);
    g.string("peak_source", s.peak_source);
    g.optional_number_since("gemm_peak_tflops", s.gemm_peak_tflops);
    g.string_since("gemm_peak_source", s.gemm_peak_source);
    g.records("entries", s.mfu);
  });
  v.group("loss", [&](auto& g) {
    g.number_or_nan("final", s.final_loss);
    g.count("window", s.loss_window);
    g.number_or_nan("mean_last", s.mean_last_losses);
  });
}

template <class V, class R, IfRecord<R, MeasuredGemm> = 0>
void visit_fields(V& v, R& g) {
  v.string("source", g.source);
  v.string("device_name", g.device_name);
  v.string("backend", g.backend);
  v.string("libtorch_version", g.libtorch_version);
  v.string("measured_at_utc", g.measured_at_utc);
  v.records("dtypes", g.dtypes);
}

template <class V, class R, IfRecord<R, Batching> = 0>
void visit_fields(V& v, R& b) {
  v.count("micro_batch_size", b.micro_batch_size);
  v.count("grad_accum_steps", b.grad_accum_steps);
  v.records("fallbacks", b.fallbacks);
}

template <class V, class R, IfRecord<R, Phase> = 0>
void visit_fields(V& v, R& p) {
  v.string("name", p.name);
  v.non_negative("start_seconds", p.start_seconds);
  v.non_negative("seconds", p.seconds);
  v.optional_record_since("memory", p.memory);
}

template <class V, class R, IfRecord<R, InputFile> = 0>
void visit_fields(V& v, R& f) {
  v.string("key", f.key);
  v.string("path", f.path);
  v.count("bytes", f.bytes);
  v.string("sha256", f.sha256);
}

template <class V, class R, IfRecord<R, DataInfo> = 0>
void visit_fields(V& v, R& d) {
  v.string("source", d.source);
  v.count("examples", d.examples);
  v.count("tokens", d.tokens);
  v.count("loss_tokens", d.loss_tokens);
  v.string("fingerprint", d.fingerprint);
  v.optional_record_since("statistics", d.statistics);
  v.optional_record_since("validation", d.validation);
  v.records_since("files", d.files);
}

template <class V, class R, IfRecord<R, Environment> = 0>
void visit_fields(V& v, R& e) {
  v.record("host", e.host);
  v.record("device", e.device);
  v.record("software", e.software);
  v.variables("variables", e.variables);
}

template <class V, class R, IfRecord<R, Report> = 0>
void visit_fields(V& v, R& r) {
  v.group("run", [&](auto& g) {
    g.string("name", r.run_name);
    g.string("status", r.status);
    g.string("error", r.error);
    g.string("started_at_utc", r.started_at_utc);
    g.string("finished_at_utc", r.finished_at_utc);
    g.string("spec_path", r.spec_path);
    g.string_since("working_directory", r.working_directory);
    // What billing takes (cost::kMaxGpus).
    g.count_in_range_since("world_size", r.world_size, 1, kMaxWorldSize);
  });
  v.json_object("spec", r.spec);
  v.string("spec_fingerprint", r.spec_fingerprint);
  v.record("environment", r.environment);
  v.optional_record_since("data", r.data);
  v.record("parameters", r.parameters);
  v.record("derived", r.derived);
  v.optional_record_since("batching", r.batching);
  v.group("timing", [&](auto& g) {
    g.string("t0_source", r.t0_source);
    g.non_negative("t0_before_process_seconds", r.t0_before_process_seconds);
    g.non_negative("time_to_first_step_seconds", r.time_to_first_step_seconds);
    g.records("phases", r.phases);
    g.computed("total_run_seconds", "the segments' run_seconds together",
               "the report has no segments", [&] { return total_run_seconds(r.segments); });
  });
  v.records("steps", r.steps);
  v.records_since("evaluations", r.evaluations);
  v.optional_record_since("gemm", r.gemm);
  v.records_since("segments", r.segments);
  v.records_since("checkpoints", r.checkpoints);
  v.optional_record_since("weights", r.weights);
  v.records_since("exports", r.exports);
  v.record("summary", r.summary);
  v.record("memory", r.memory);
  v.optional_record_since("energy", r.energy);
  v.optional_record_since("distributed", r.distributed);
  v.optional_record_since("execution", r.execution);
  v.optional_record_since("profile", r.profile);
}

}  // namespace ftbench::report::detail
