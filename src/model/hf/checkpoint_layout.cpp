#include "model/hf/checkpoint_layout.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "spec/checkpoint_config.h"

namespace ftbench::hf {

using Json = nlohmann::json;

std::map<std::string, std::string> parse_shard_index(std::string_view text,
                                                     const std::string& source) {
  const Json j = spec::parse_hf_json_object(text, source);
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
    throw spec::HfCheckpointError(source +
                                  ": weight_map: expected an object of tensor name -> file");
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) {
      throw spec::HfCheckpointError(fmt::format(
          "{}: weight_map.\"{}\": expected a file name, found {}", source, name, file.dump()));
    }
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..") {
      throw spec::HfCheckpointError(
          fmt::format("{}: weight_map.\"{}\": \"{}\" is not a file name in the checkpoint's "
                      "folder",
                      source, name, f));
    }
    out[name] = f;
  }
  return out;
}

std::vector<HfTensor> hf_llama_tensors(const spec::ModelSpec& m) {
  const int64_t head_dim = m.dim / m.n_heads;
  const int64_t kv_dim = m.n_kv_heads * head_dim;
  std::vector<HfTensor> out;
  out.push_back({"model.embed_tokens.weight", {m.vocab_size, m.dim}});
  for (int64_t i = 0; i < m.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    out.push_back({p + "self_attn.q_proj.weight", {m.dim, m.dim}});
    out.push_back({p + "self_attn.k_proj.weight", {kv_dim, m.dim}});
    out.push_back({p + "self_attn.v_proj.weight", {kv_dim, m.dim}});
    out.push_back({p + "self_attn.o_proj.weight", {m.dim, m.dim}});
    out.push_back({p + "mlp.gate_proj.weight", {m.ffn_dim, m.dim}});
    out.push_back({p + "mlp.up_proj.weight", {m.ffn_dim, m.dim}});
    out.push_back({p + "mlp.down_proj.weight", {m.dim, m.ffn_dim}});
    out.push_back({p + "input_layernorm.weight", {m.dim}});
    out.push_back({p + "post_attention_layernorm.weight", {m.dim}});
  }
  out.push_back({"model.norm.weight", {m.dim}});
  if (!m.tie_embeddings) out.push_back({"lm_head.weight", {m.vocab_size, m.dim}});
  return out;
}

}  // namespace ftbench::hf
