// The keys of each run-spec section, named once, in the documented order (run_spec.h order =
// docs/spec.md order = the report's `spec` order). The YAML reader, the key lists behind "did
// you mean" and --set path checks, the JSON form (to_json, the canonical form and its hash) and
// through it the docs check (ctest Canonical.DocsMentionEveryKey) all visit these functions.
//
// A visitor has `field(name, member)` for every member type: std::string, int64_t, uint64_t,
// double, bool, std::optional<double>, std::vector<std::string>, std::optional<RopeScaling>,
// CheckpointSpec. `S` is the section type, const or not: readers get fields to fill, writers
// fields to read.
#pragma once

#include <type_traits>

#include "spec/run_spec.h"

namespace ftbench::spec {

template <class S, class T>
using IfSection = std::enable_if_t<std::is_same_v<std::remove_const_t<S>, T>, int>;

template <class V, class S, IfSection<S, ModelSpec> = 0>
void visit_fields(V& v, S& m) {
  v.field("preset", m.preset);
  v.field("dim", m.dim);
  v.field("n_layers", m.n_layers);
  v.field("n_heads", m.n_heads);
  v.field("n_kv_heads", m.n_kv_heads);
  v.field("ffn_dim", m.ffn_dim);
  v.field("vocab_size", m.vocab_size);
  v.field("max_seq_len", m.max_seq_len);
  v.field("norm_eps", m.norm_eps);
  v.field("rope_theta", m.rope_theta);
  v.field("rope_scaling", m.rope_scaling);
  v.field("tie_embeddings", m.tie_embeddings);
  v.field("dtype", m.dtype);
  v.field("activation_checkpointing", m.activation_checkpointing);
  v.field("checkpoint", m.checkpoint);
}

template <class V, class S, IfSection<S, RopeScaling> = 0>
void visit_fields(V& v, S& s) {
  v.field("factor", s.factor);
  v.field("low_freq_factor", s.low_freq_factor);
  v.field("high_freq_factor", s.high_freq_factor);
  v.field("original_max_position_embeddings", s.original_max_position_embeddings);
}

template <class V, class S, IfSection<S, LoraSpec> = 0>
void visit_fields(V& v, S& l) {
  v.field("rank", l.rank);
  v.field("alpha", l.alpha);
  v.field("dropout", l.dropout);
  v.field("targets", l.targets);
  v.field("dtype", l.dtype);
}

template <class V, class S, IfSection<S, DataSpec> = 0>
void visit_fields(V& v, S& d) {
  v.field("source", d.source);
  v.field("tokenizer", d.tokenizer);
  v.field("path", d.path);
  v.field("format", d.format);
  v.field("max_examples", d.max_examples);
  v.field("subset", d.subset);
  v.field("too_long", d.too_long);
  v.field("on_error", d.on_error);
  v.field("validation_fraction", d.validation_fraction);
  v.field("validation_path", d.validation_path);
  v.field("num_examples", d.num_examples);
  v.field("seq_len", d.seq_len);
  v.field("length_distribution", d.length_distribution);
  v.field("min_tokens", d.min_tokens);
  v.field("max_tokens", d.max_tokens);
  v.field("lognormal_median_tokens", d.lognormal_median_tokens);
  v.field("lognormal_sigma", d.lognormal_sigma);
  v.field("prompt_fraction", d.prompt_fraction);
  v.field("train_on_input", d.train_on_input);
  v.field("padding", d.padding);
  v.field("shuffle", d.shuffle);
  v.field("seed", d.seed);
}

template <class V, class S, IfSection<S, CheckpointSpec> = 0>
void visit_fields(V& v, S& c) {
  v.field("dir", c.dir);
  v.field("every_steps", c.every_steps);
  v.field("every_minutes", c.every_minutes);
  v.field("keep_last", c.keep_last);
}

template <class V, class S, IfSection<S, TrainSpec> = 0>
void visit_fields(V& v, S& t) {
  v.field("epochs", t.epochs);
  v.field("max_steps", t.max_steps);
  v.field("micro_batch_size", t.micro_batch_size);
  v.field("grad_accum_steps", t.grad_accum_steps);
  v.field("optimizer", t.optimizer);
  v.field("lr", t.lr);
  v.field("weight_decay", t.weight_decay);
  v.field("beta1", t.beta1);
  v.field("beta2", t.beta2);
  v.field("eps", t.eps);
  v.field("lr_schedule", t.lr_schedule);
  v.field("lr_warmup_steps", t.lr_warmup_steps);
  v.field("min_lr_ratio", t.min_lr_ratio);
  v.field("max_grad_norm", t.max_grad_norm);
  v.field("seed", t.seed);
  v.field("timing_warmup_steps", t.timing_warmup_steps);
  v.field("loss_window", t.loss_window);
  v.field("eval_every_steps", t.eval_every_steps);
  v.field("eval_max_batches", t.eval_max_batches);
  v.field("oom_fallback", t.oom_fallback);
  v.field("oom_max_fallbacks", t.oom_max_fallbacks);
  v.field("checkpoint", t.checkpoint);
}

template <class V, class S, IfSection<S, BackendSpec> = 0>
void visit_fields(V& v, S& b) {
  v.field("device", b.device);
  v.field("device_index", b.device_index);
  v.field("threads", b.threads);
  v.field("peak_tflops", b.peak_tflops);
  v.field("energy_sample_ms", b.energy_sample_ms);
}

template <class V, class S, IfSection<S, DistributedSpec> = 0>
void visit_fields(V& v, S& d) {
  v.field("backend", d.backend);
  v.field("init_timeout_seconds", d.init_timeout_seconds);
  v.field("timeout_seconds", d.timeout_seconds);
  v.field("check_every_steps", d.check_every_steps);
  v.field("shard_base", d.shard_base);
}

template <class V, class S, IfSection<S, OutputSpec> = 0>
void visit_fields(V& v, S& o) {
  v.field("report", o.report);
  v.field("adapter", o.adapter);
  v.field("merged", o.merged);
  v.field("name", o.name);
  v.field("progress", o.progress);
  v.field("log_every_steps", o.log_every_steps);
  v.field("mllog", o.mllog);
  v.field("price", o.price);
}

// The sections, in order: `v.section(name, member)` for each.
template <class V, class S, IfSection<S, RunSpec> = 0>
void visit_sections(V& v, S& spec) {
  v.section("model", spec.model);
  v.section("lora", spec.lora);
  v.section("data", spec.data);
  v.section("train", spec.train);
  v.section("backend", spec.backend);
  v.section("distributed", spec.distributed);
  v.section("output", spec.output);
}

}  // namespace ftbench::spec
