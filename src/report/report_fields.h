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

}  // namespace ftbench::report::detail
