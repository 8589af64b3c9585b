#include "spec/presets.h"

namespace ftbench::spec {

namespace {

// Shapes as published in each checkpoint's config.json (Meta / Hugging Face). Every Llama uses
// RMSNorm eps 1e-5. max_seq_len is the context the model was released with, which is what the
// rotary table has to cover.
ModelSpec shape(const std::string& name, int64_t dim, int64_t n_layers, int64_t n_heads,
                int64_t n_kv_heads, int64_t ffn_dim, int64_t vocab_size, int64_t max_seq_len,
                double rope_theta, std::optional<RopeScaling> rope_scaling, bool tie_embeddings) {
  ModelSpec m;
  m.preset = name;
  m.dim = dim;
  m.n_layers = n_layers;
  m.n_heads = n_heads;
  m.n_kv_heads = n_kv_heads;
  m.ffn_dim = ffn_dim;
  m.vocab_size = vocab_size;
  m.max_seq_len = max_seq_len;
  m.norm_eps = 1e-5;
  m.rope_theta = rope_theta;
  m.rope_scaling = rope_scaling;
  m.tie_embeddings = tie_embeddings;
  return m;
}

RopeScaling llama3_scaling(double factor) {
  RopeScaling s;
  s.factor = factor;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192;
  return s;
}

}  // namespace

std::optional<ModelSpec> find_preset(const std::string& name) {
  // "tiny" is not a published model: a Llama-shaped toy (GQA 4:2, SwiGLU width ~ 8/3 * dim
  // rounded to a multiple of 16) whose vocabulary holds the byte tokenizer's 259 ids, for CI
  // and unit tests on CPU.
  if (name == "tiny") {
    return shape(name, 64, 2, 4, 2, 176, 320, 512, 10000.0, std::nullopt, false);
  }
  if (name == "llama3.2-1b") {
    return shape(name, 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0, llama3_scaling(32.0), true);
  }
  if (name == "llama3.1-8b") {
    return shape(name, 4096, 32, 32, 8, 14336, 128256, 131072, 500000.0, llama3_scaling(8.0),
                 false);
  }
  if (name == "llama3.1-70b") {
    return shape(name, 8192, 80, 64, 8, 28672, 128256, 131072, 500000.0, llama3_scaling(8.0),
                 false);
  }
  if (name == "llama2-7b") {
    return shape(name, 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0, std::nullopt, false);
  }
  if (name == "llama2-70b") {
    return shape(name, 8192, 80, 64, 8, 28672, 32000, 4096, 10000.0, std::nullopt, false);
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() {
  return {"tiny", "llama3.2-1b", "llama3.1-8b", "llama3.1-70b", "llama2-7b", "llama2-70b"};
}

}  // namespace ftbench::spec
