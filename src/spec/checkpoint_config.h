// A Hugging Face Llama checkpoint's config.json, read as a model shape: the spec loader reads it
// for model.checkpoint, before anything runs, because the shape decides the job. Here rather
// than in model/hf because spec is below model (models are built from specs);
// model/hf/checkpoint_layout.h has the rest of the checkpoint folder's format (shard index,
// tensor names).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/run_spec.h"
#include "util/error.h"

namespace ftbench::spec {

// A checkpoint folder that cannot be used: what() names the file, the key and what was
// expected and found.
class HfCheckpointError : public BadInput {
 public:
  using BadInput::BadInput;
};

struct HfConfig {
  // The shape keys of spec::ModelSpec (dim, n_layers, n_heads, n_kv_heads, ffn_dim, vocab_size,
  // max_seq_len, norm_eps, rope_theta, rope_scaling, tie_embeddings); preset "custom".
  ModelSpec shape;
  std::string torch_dtype;  // "bfloat16", "float16", "float32", or "" when not given
  std::vector<int64_t> bos_token_ids;
  std::vector<int64_t> eos_token_ids;
};

// A file of a checkpoint or adapter folder, whole; HfCheckpointError naming it when it cannot
// be read.
std::string read_hf_file(const std::string& path);

// `text` parsed as a JSON object: HfCheckpointError "<source>: ..." when it is not JSON (or
// nests deeper than ftbench's JSON readers allow) or not an object.
nlohmann::json parse_hf_json_object(std::string_view text, const std::string& source);

// Parses config.json of a Llama model (model_type "llama", or architectures naming
// LlamaForCausalLM). Checks what ftbench's model cannot do differently: hidden_act "silu", no
// attention or MLP bias, head_dim = hidden_size / num_attention_heads, rope_scaling null or
// "llama3". num_key_value_heads defaults to num_attention_heads, rope_theta to 10000,
// rms_norm_eps to 1e-6, tie_word_embeddings to false, as transformers' LlamaConfig.
HfConfig parse_hf_config(std::string_view text, const std::string& source);

}  // namespace ftbench::spec
