// The JSON files of Hugging Face interop, torch-free: a PEFT LoRA adapter's adapter_config.json
// (read and written) and the config.json of a LlamaForCausalLM (written; spec/checkpoint_config.h
// reads it).
// model/hf/torch/peft_adapter.h reads and writes the tensors next to them.
#pragma once

#include <string>
#include <string_view>

#include "spec/checkpoint_config.h"
#include "spec/run_spec.h"

namespace ftbench::hf {

struct PeftAdapterConfig {
  spec::LoraSpec lora;                  // rank, alpha, dropout, targets; dtype left at its default
  std::string base_model_name_or_path;  // "" when null or absent
};

// adapter_config.json -> LoraSpec: rank = r, alpha = lora_alpha, dropout = lora_dropout (0 when
// absent), targets mapped from HF module names (q_proj -> q, ..., lm_head -> output) in
// ftbench's order q, k, v, o, gate, up, down, output. Refuses, with spec::HfCheckpointError
// "<source>: <key>: expected ..., found ...", what PEFT would apply differently from
// W + (lora_alpha / r) B A on those modules: peft_type other than "LORA", r not an integer
// >= 1, lora_alpha not a number > 0, lora_dropout not in [0, 1), target_modules not a non-empty
// list of the module names above (a regular expression or "all-linear" included), use_dora,
// use_rslora, fan_in_fan_out or lora_bias true, bias other than "none", layers_to_transform,
// modules_to_save or exclude_modules given, rank_pattern or alpha_pattern non-empty. Unknown
// keys are ignored (PEFT adds some in every release).
PeftAdapterConfig parse_peft_adapter_config(std::string_view text, const std::string& source);

// adapter_config.json as PEFT writes it for `lora` (keys sorted, two-space indent, as PEFT's
// save_pretrained): peft_type LORA, task_type CAUSAL_LM, r, lora_alpha (an integer when it is
// one), lora_dropout, target_modules as HF names in ftbench's order, base_model_name_or_path
// (null when empty), and the defaults of a plain LoRA adapter (bias "none", no DoRA or rsLoRA,
// no patterns, inference_mode true). Only fields that PEFT >= 0.9 knows. Ends with a newline.
std::string peft_adapter_config_json(const spec::LoraSpec& lora, const std::string& base_model);

// config.json of a LlamaForCausalLM of `shape` (keys sorted, two-space indent, as transformers'
// save_pretrained): the inverse of spec::parse_hf_config for the shape keys, so that
// spec::parse_hf_config(hf_config_json(s, d)).shape has s's shape (doubles written to round-trip
// exactly) and torch_dtype d ("float32", "bfloat16", "float16"). No bos/eos token ids: the
// shape does not carry them. Ends with a newline.
std::string hf_config_json(const spec::ModelSpec& shape, const std::string& torch_dtype);

// The HF module name of one of ftbench's linear slices: "q" -> "q_proj", ..., "down" ->
// "down_proj", "output" -> "lm_head"; nullptr for any other name.
const char* hf_module_name(const std::string& slice);

}  // namespace ftbench::hf
