// A Hugging Face Llama checkpoint folder, the torch-free part besides config.json (whose reader,
// spec/checkpoint_config.h, is the spec loader's, for model.checkpoint):
// model.safetensors.index.json to the shard of each tensor, and the names of the tensors HF
// writes for a shape. The LibTorch side (model/hf/torch/hf_load.h) copies the tensors in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spec/run_spec.h"

namespace ftbench::hf {

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
