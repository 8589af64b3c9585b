// A Hugging Face Llama checkpoint folder, the torch-free part: config.json to a model shape,
// model.safetensors.index.json to the shard of each tensor, and the names of the tensors HF
// writes for a shape. The spec loader reads config.json for model.checkpoint; the LibTorch side
// (hf/hf_load.h) copies the tensors in.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ftbench/error.h"
#include "ftbench/spec/run_spec.h"

namespace ftbench::hf {

// A checkpoint folder that cannot be used: what() names the file, the key and what was
// expected and found.
class HfCheckpointError : public BadInput {
 public:
  using BadInput::BadInput;
};

struct HfConfig {
  // The shape keys of spec::ModelSpec (dim, n_layers, n_heads, n_kv_heads, ffn_dim, vocab_size,
  // max_seq_len, norm_eps, rope_theta, rope_scaling, tie_embeddings); preset "custom".
  spec::ModelSpec shape;
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

// model.safetensors.index.json: tensor name -> shard file name. File names must be plain names
// in the same folder (no '/' and no ".."), and every shard named must be listed once per tensor.
std::map<std::string, std::string> parse_shard_index(std::string_view text,
                                                     const std::string& source);

// The tensors a Hugging Face LlamaForCausalLM of `shape` holds, in the order save_pretrained
// writes them per layer, with their shapes ([out, in] for linears): model.embed_tokens.weight,
// model.layers.{i}.self_attn.{q,k,v,o}_proj.weight, model.layers.{i}.mlp.{gate,up,down}_proj
// .weight, model.layers.{i}.{input,post_attention}_layernorm.weight, model.norm.weight, and
// lm_head.weight unless the embeddings are tied.
struct HfTensor {
  std::string name;
  std::vector<int64_t> shape;
};
std::vector<HfTensor> hf_llama_tensors(const spec::ModelSpec& shape);

}  // namespace ftbench::hf
