// Fuzz target: the JSON files of a Hugging Face folder that ftbench reads before any tensor:
// config.json (spec::parse_hf_config, read by the spec loader for model.checkpoint),
// model.safetensors.index.json (hf::parse_shard_index) and a PEFT adapter's
// adapter_config.json (hf::parse_peft_adapter_config, `ftbench logits --adapter`). Each input
// goes through all three. What is accepted must be usable: a config's shape is one the model
// can build (and hf_llama_tensors lists), and what ftbench writes for it reads back the same.
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "model/hf/checkpoint_layout.h"
#include "model/hf/peft_config.h"
#include "spec/checkpoint_config.h"

namespace {

namespace hf = ftbench::hf;
namespace spec = ftbench::spec;

bool check_config(std::string_view text) {
  spec::HfConfig config;
  try {
    config = spec::parse_hf_config(text, "fuzz-config.json");
  } catch (const spec::HfCheckpointError&) {
    return false;
  }
  const spec::ModelSpec& m = config.shape;
  if (m.dim < 1 || m.n_heads < 1 || m.n_kv_heads < 1 || m.dim % m.n_heads != 0 ||
      m.n_heads % m.n_kv_heads != 0 || m.n_layers < 1 || m.ffn_dim < 1 || m.vocab_size < 1) {
    throw std::logic_error("an accepted config.json has a shape the model cannot build");
  }
  // Listing the tensors of a huge accepted shape is cheap (names and shapes only) unless the
  // layer count is absurd; the parser bounds it.
  if (m.n_layers <= 4096) hf::hf_llama_tensors(m);
  const std::string written = hf::hf_config_json(m, "bfloat16");
  spec::HfConfig back;
  try {
    back = spec::parse_hf_config(written, "fuzz-written.json");
  } catch (const spec::HfCheckpointError& e) {
    throw std::logic_error(std::string("a config.json written by hf_config_json is refused: ") +
                           e.what());
  }
  const ftbench::spec::ModelSpec& b = back.shape;
  if (b.dim != m.dim || b.n_layers != m.n_layers || b.n_heads != m.n_heads ||
      b.n_kv_heads != m.n_kv_heads || b.ffn_dim != m.ffn_dim || b.vocab_size != m.vocab_size ||
      b.max_seq_len != m.max_seq_len || b.norm_eps != m.norm_eps || b.rope_theta != m.rope_theta ||
      b.tie_embeddings != m.tie_embeddings ||
      b.rope_scaling.has_value() != m.rope_scaling.has_value()) {
    throw std::logic_error("hf_config_json does not read back as the shape it was given");
  }
  return true;
}

bool check_index(std::string_view text) {
  try {
    for (const auto& [name, file] : hf::parse_shard_index(text, "fuzz-index.json")) {
      if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
        throw std::logic_error("an accepted shard index names a file outside the folder: " + file);
      }
    }
  } catch (const spec::HfCheckpointError&) {
    return false;
  }
  return true;
}

bool check_adapter_config(std::string_view text) {
  hf::PeftAdapterConfig config;
  try {
    config = hf::parse_peft_adapter_config(text, "fuzz-adapter_config.json");
  } catch (const spec::HfCheckpointError&) {
    return false;
  }
  if (config.lora.rank < 1 || !(config.lora.alpha > 0.0) || config.lora.targets.empty()) {
    throw std::logic_error("an accepted adapter_config.json has no usable LoRA settings");
  }
  const std::string written =
      hf::peft_adapter_config_json(config.lora, config.base_model_name_or_path);
  hf::PeftAdapterConfig back;
  try {
    back = hf::parse_peft_adapter_config(written, "fuzz-written.json");
  } catch (const spec::HfCheckpointError& e) {
    throw std::logic_error(std::string("an adapter_config.json written by ftbench is refused: ") +
                           e.what());
  }
  if (back.lora.rank != config.lora.rank || back.lora.alpha != config.lora.alpha ||
      back.lora.targets != config.lora.targets ||
      back.base_model_name_or_path != config.base_model_name_or_path) {
    throw std::logic_error("peft_adapter_config_json does not read back as what it was given");
  }
  return true;
}

}  // namespace

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Accepted when any of the three reads it: each seed is one kind of file.
  const bool config = check_config(text);
  const bool index = check_index(text);
  const bool adapter = check_adapter_config(text);
  return config || index || adapter ? FuzzVerdict::kAccepted : FuzzVerdict::kRejected;
}
