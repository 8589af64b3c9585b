// The fields of the report's flat records, each named once in its schema order, with the kind
// that says how it is read and written: the reader (report.cpp, Reader) and the writer
// (to_json) visit these functions, so a field added here is read and written alike.
//
// Kinds, for the reader / the writer:
//   string          a string / as is
//   count           an integer 0..10^15 / as is
//   count_since     a count when present (a later minor version), else the default / as is
//   non_negative    a number >= 0 / null when not finite
//   number          any number / null when not finite
//   number_or_nan   a number, null read as NaN / null when not finite
//   optional_integer        an integer or null / null when unset
//   optional_integer_since  as optional_integer, absent read as unset / null when unset
//   string_or_null  a string, null read as "" / "" written as null
//   string_since    a string when present, else "" / as is
//   optional_non_negative   a number >= 0 or null / null when unset
//   records         an array of records of their own field list / the same
#pragma once

#include <type_traits>

#include "ftbench/report/report.h"

namespace ftbench::report::detail {

template <class R, class T>
using IfRecord = std::enable_if_t<std::is_same_v<std::remove_const_t<R>, T>, int>;

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
  v.string_since("container_image", s.container_image);
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

}  // namespace ftbench::report::detail
