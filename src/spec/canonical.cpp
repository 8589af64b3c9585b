#include "ftbench/spec/canonical.h"

#include <memory>
#include <stdexcept>

#include <openssl/evp.h>

namespace ftbench::spec {

namespace {

// One builder for both JSON flavours so that the report's ordered view and the hashed sorted
// view can never disagree on a value. Key order here is the documented order (run_spec.h,
// docs/spec.md); nlohmann::json re-sorts it for the canonical form.
template <class Json>
Json build_json(const RunSpec& spec) {
  Json j = Json::object();

  const ModelSpec& m = spec.model;
  Json model = Json::object();
  model["preset"] = m.preset;
  model["dim"] = m.dim;
  model["n_layers"] = m.n_layers;
  model["n_heads"] = m.n_heads;
  model["n_kv_heads"] = m.n_kv_heads;
  model["ffn_dim"] = m.ffn_dim;
  model["vocab_size"] = m.vocab_size;
  model["max_seq_len"] = m.max_seq_len;
  model["norm_eps"] = m.norm_eps;
  model["rope_theta"] = m.rope_theta;
  if (m.rope_scaling) {
    Json scaling = Json::object();
    scaling["factor"] = m.rope_scaling->factor;
    scaling["low_freq_factor"] = m.rope_scaling->low_freq_factor;
    scaling["high_freq_factor"] = m.rope_scaling->high_freq_factor;
    scaling["original_max_position_embeddings"] = m.rope_scaling->original_max_position_embeddings;
    model["rope_scaling"] = scaling;
  } else {
    model["rope_scaling"] = nullptr;
  }
  model["tie_embeddings"] = m.tie_embeddings;
  model["dtype"] = m.dtype;
  model["activation_checkpointing"] = m.activation_checkpointing;
  model["checkpoint"] = m.checkpoint;
  j["model"] = model;

  const LoraSpec& l = spec.lora;
  Json lora = Json::object();
  lora["rank"] = l.rank;
  lora["alpha"] = l.alpha;
  lora["dropout"] = l.dropout;
  lora["targets"] = l.targets;
  lora["dtype"] = l.dtype;
  j["lora"] = lora;

  const DataSpec& d = spec.data;
  Json data = Json::object();
  data["source"] = d.source;
  data["tokenizer"] = d.tokenizer;
  data["path"] = d.path;
  data["format"] = d.format;
  data["max_examples"] = d.max_examples;
  data["subset"] = d.subset;
  data["too_long"] = d.too_long;
  data["on_error"] = d.on_error;
  data["validation_fraction"] = d.validation_fraction;
  data["validation_path"] = d.validation_path;
  data["num_examples"] = d.num_examples;
  data["seq_len"] = d.seq_len;
  data["length_distribution"] = d.length_distribution;
  data["min_tokens"] = d.min_tokens;
  data["max_tokens"] = d.max_tokens;
  data["lognormal_median_tokens"] = d.lognormal_median_tokens;
  data["lognormal_sigma"] = d.lognormal_sigma;
  data["prompt_fraction"] = d.prompt_fraction;
  data["train_on_input"] = d.train_on_input;
  data["padding"] = d.padding;
  data["shuffle"] = d.shuffle;
  data["seed"] = d.seed;
  j["data"] = data;

  const TrainSpec& t = spec.train;
  Json train = Json::object();
  train["epochs"] = t.epochs;
  train["max_steps"] = t.max_steps;
  train["micro_batch_size"] = t.micro_batch_size;
  train["grad_accum_steps"] = t.grad_accum_steps;
  train["optimizer"] = t.optimizer;
  train["lr"] = t.lr;
  train["weight_decay"] = t.weight_decay;
  train["beta1"] = t.beta1;
  train["beta2"] = t.beta2;
  train["eps"] = t.eps;
  train["lr_schedule"] = t.lr_schedule;
  train["lr_warmup_steps"] = t.lr_warmup_steps;
  train["min_lr_ratio"] = t.min_lr_ratio;
  train["max_grad_norm"] = t.max_grad_norm;
  train["seed"] = t.seed;
  train["timing_warmup_steps"] = t.timing_warmup_steps;
  train["loss_window"] = t.loss_window;
  train["eval_every_steps"] = t.eval_every_steps;
  train["eval_max_batches"] = t.eval_max_batches;
  train["oom_fallback"] = t.oom_fallback;
  train["oom_max_fallbacks"] = t.oom_max_fallbacks;
  Json checkpoint = Json::object();
  checkpoint["dir"] = t.checkpoint.dir;
  checkpoint["every_steps"] = t.checkpoint.every_steps;
  checkpoint["every_minutes"] = t.checkpoint.every_minutes;
  checkpoint["keep_last"] = t.checkpoint.keep_last;
  train["checkpoint"] = checkpoint;
  j["train"] = train;

  const BackendSpec& b = spec.backend;
  Json backend = Json::object();
  backend["device"] = b.device;
  backend["device_index"] = b.device_index;
  backend["threads"] = b.threads;
  if (b.peak_tflops) {
    backend["peak_tflops"] = *b.peak_tflops;
  } else {
    backend["peak_tflops"] = nullptr;
  }
  backend["energy_sample_ms"] = b.energy_sample_ms;
  j["backend"] = backend;

  const OutputSpec& o = spec.output;
  Json output = Json::object();
  output["report"] = o.report;
  output["adapter"] = o.adapter;
  output["merged"] = o.merged;
  output["name"] = o.name;
  output["progress"] = o.progress;
  output["log_every_steps"] = o.log_every_steps;
  j["output"] = output;

  j["source_path"] = spec.source_path;
  return j;
}

}  // namespace

nlohmann::ordered_json to_json(const RunSpec& spec) {
  return build_json<nlohmann::ordered_json>(spec);
}

std::string canonical_job_json(const RunSpec& spec) {
  nlohmann::json j = build_json<nlohmann::json>(spec);
  // Left out: where the report goes and how progress is shown (output), which machine and how
  // many threads run it (backend), and where the spec file lives (source_path). Two runs of
  // the same job on different clouds must hash the same so that `compare` can pair them.
  j.erase("output");
  j.erase("backend");
  j.erase("source_path");
  // Where the data file and the tokenizer live differs between machines; what they hold is in the
  // report's data fingerprint (token ids and loss masks), which compare checks as well.
  j["data"].erase("path");
  // The same holds for the checkpoint folder: the shape it gives is in the model keys, and what
  // its tensors hold is the report's weights fingerprint. Whether the weights are random or
  // loaded is part of the job (the losses differ). The hashed form keeps the two keys that were
  // reserved for this before model.checkpoint existed, at the values they then had for random
  // weights, so fingerprints of earlier reports and checkpoints stay valid.
  j["model"]["init"] = spec.model.checkpoint.empty() ? "random" : "checkpoint";
  j["model"]["checkpoint_path"] = "";
  j["model"].erase("checkpoint");
  j["data"].erase("tokenizer");
  j["data"].erase("validation_path");
  // What to do on out of memory changes how the job runs, not what it computes (the effective
  // batch and each step's examples stay); a fallback that happened is in the report's
  // `batching`, which compare flags. Left out, the fingerprints of reports written before these
  // keys existed stay valid.
  j["train"].erase("oom_fallback");
  j["train"].erase("oom_max_fallbacks");
  // When and where checkpoints are saved does not change what the job computes; resuming
  // checks this fingerprint, so a run may resume under another checkpoint policy.
  j["train"].erase("checkpoint");
  // Compact (no whitespace); invalid UTF-8 in a user string is replaced rather than thrown so
  // that any spec that loaded can be hashed.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string fingerprint(const RunSpec& spec) { return sha256_hex(canonical_job_json(spec)); }

std::string sha256_hex(const std::string& bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &digest_len) != 1) {
    throw std::runtime_error("SHA-256 failed (OpenSSL EVP)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest_len);
  for (unsigned int i = 0; i < digest_len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0x0f];
  }
  return hex;
}

}  // namespace ftbench::spec
