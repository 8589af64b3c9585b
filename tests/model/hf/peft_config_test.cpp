#include "model/hf/peft_config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/hf/checkpoint_layout.h"
#include "spec/checkpoint_config.h"
#include "spec/presets.h"

namespace ftbench::hf {
namespace {

using Json = nlohmann::json;

// adapter_config.json as PEFT 0.11 saves it for a Llama 3.1 8B LoRA (keys sorted; the
// target_modules set in whatever order Python iterated it).
constexpr const char* kPeftAdapterConfig = R"({
  "alpha_pattern": {},
  "auto_mapping": null,
  "base_model_name_or_path": "meta-llama/Llama-3.1-8B",
  "bias": "none",
  "fan_in_fan_out": false,
  "inference_mode": true,
  "init_lora_weights": true,
  "layer_replication": null,
  "layers_pattern": null,
  "layers_to_transform": null,
  "loftq_config": {},
  "lora_alpha": 32,
  "lora_dropout": 0.05,
  "megatron_config": null,
  "megatron_core": "megatron.core",
  "modules_to_save": null,
  "peft_type": "LORA",
  "r": 16,
  "rank_pattern": {},
  "revision": null,
  "target_modules": [
    "v_proj",
    "down_proj",
    "q_proj",
    "gate_proj",
    "o_proj",
    "up_proj",
    "k_proj"
  ],
  "task_type": "CAUSAL_LM",
  "use_dora": false,
  "use_rslora": false
})";

std::string error_of(const Json& config) {
  try {
    parse_peft_adapter_config(config.dump(), "a/adapter_config.json");
  } catch (const spec::HfCheckpointError& e) {
    return e.what();
  }
  return "";
}

Json with(const char* key, const Json& value) {
  Json j = Json::parse(kPeftAdapterConfig);
  j[key] = value;
  return j;
}

Json without(const char* key) {
  Json j = Json::parse(kPeftAdapterConfig);
  j.erase(key);
  return j;
}

TEST(PeftConfig, ReadsWhatPeftWrites) {
  const PeftAdapterConfig c = parse_peft_adapter_config(kPeftAdapterConfig, "adapter_config.json");
  EXPECT_EQ(c.lora.rank, 16);
  EXPECT_EQ(c.lora.alpha, 32.0);
  EXPECT_EQ(c.lora.dropout, 0.05);
  EXPECT_EQ(c.lora.targets, (std::vector<std::string>{"q", "k", "v", "o", "gate", "up", "down"}));
  EXPECT_EQ(c.lora.dtype, "fp32");
  EXPECT_EQ(c.base_model_name_or_path, "meta-llama/Llama-3.1-8B");

  const PeftAdapterConfig head = parse_peft_adapter_config(
      with("target_modules", {"lm_head", "v_proj", "q_proj", "q_proj"}).dump(), "x");
  EXPECT_EQ(head.lora.targets, (std::vector<std::string>{"q", "v", "output"}));

  // Optional keys absent or null: dropout 0, no base model.
  Json minimal = {{"peft_type", "LORA"},
                  {"r", 4},
                  {"lora_alpha", 8.5},
                  {"target_modules", {"q_proj"}},
                  {"base_model_name_or_path", nullptr}};
  const PeftAdapterConfig m = parse_peft_adapter_config(minimal.dump(), "x");
  EXPECT_EQ(m.lora.rank, 4);
  EXPECT_EQ(m.lora.alpha, 8.5);
  EXPECT_EQ(m.lora.dropout, 0.0);
  EXPECT_EQ(m.lora.targets, (std::vector<std::string>{"q"}));
  EXPECT_EQ(m.base_model_name_or_path, "");
}

// adapter_config.json exactly as PEFT 0.21.2 saves it (tests/reference/hf_transformers.py
// make-adapter): fields PEFT added since (alora_invocation_tokens, ensure_weight_tying,
// peft_version, qalora_group_size, target_parameters, ...) are ignored; lora_alpha a float.
constexpr const char* kPeft0212AdapterConfig = R"({
  "alora_invocation_tokens": null,
  "alpha_pattern": {},
  "arrow_config": null,
  "auto_mapping": null,
  "base_model_name_or_path": "ck",
  "bias": "none",
  "corda_config": null,
  "ensure_weight_tying": false,
  "eva_config": null,
  "exclude_modules": null,
  "fan_in_fan_out": false,
  "inference_mode": true,
  "init_lora_weights": true,
  "kasa_config": null,
  "layer_replication": null,
  "layers_pattern": null,
  "layers_to_transform": null,
  "loftq_config": {},
  "lora_alpha": 12.0,
  "lora_bias": false,
  "lora_dropout": 0.0,
  "lora_ga_config": null,
  "megatron_config": null,
  "megatron_core": "megatron.core",
  "modules_to_save": null,
  "monteclora_config": null,
  "peft_type": "LORA",
  "peft_version": "0.21.2",
  "qalora_group_size": 16,
  "r": 4,
  "rank_pattern": {},
  "revision": null,
  "target_modules": [
    "v_proj",
    "gate_proj",
    "o_proj",
    "k_proj",
    "lm_head",
    "up_proj"
  ],
  "target_parameters": null,
  "task_type": "CAUSAL_LM",
  "trainable_token_indices": null,
  "use_bdlora": null,
  "use_dora": false,
  "use_qalora": false,
  "use_rslora": false,
  "velora_config": null
})";

TEST(PeftConfig, ReadsWhatPeft0212Writes) {
  const PeftAdapterConfig c = parse_peft_adapter_config(kPeft0212AdapterConfig, "a.json");
  EXPECT_EQ(c.lora.rank, 4);
  EXPECT_EQ(c.lora.alpha, 12.0);
  EXPECT_EQ(c.lora.dropout, 0.0);
  EXPECT_EQ(c.lora.targets, (std::vector<std::string>{"k", "v", "o", "gate", "up", "output"}));
  EXPECT_EQ(c.base_model_name_or_path, "ck");
}

TEST(PeftConfig, RefusesWhatItCannotApplyAsPeftWould) {
  const std::string f = "a/adapter_config.json: ";
  const std::string modules =
      "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head";
  {
    try {
      parse_peft_adapter_config("{\"r\": 4,", "a/adapter_config.json");
      FAIL() << "no error";
    } catch (const spec::HfCheckpointError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(f + "not valid JSON: ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(error_of(Json::array()), "a/adapter_config.json: expected a JSON object");
  EXPECT_EQ(error_of(with("peft_type", "IA3")),
            f + "peft_type: expected \"LORA\" (ftbench reads LoRA adapters only), found \"IA3\"");
  EXPECT_EQ(error_of(without("peft_type")),
            f + "peft_type: expected \"LORA\" (ftbench reads LoRA adapters only), found none");
  EXPECT_EQ(error_of(without("r")), f + "r: missing (expected an integer >= 1)");
  EXPECT_EQ(error_of(with("r", 0)), f + "r: expected an integer >= 1, found 0");
  EXPECT_EQ(error_of(with("r", 8.0)), f + "r: expected an integer >= 1, found 8.0");
  EXPECT_EQ(error_of(with("r", "8")), f + "r: expected an integer >= 1, found \"8\"");
  EXPECT_EQ(error_of(without("lora_alpha")), f + "lora_alpha: missing (expected a number > 0)");
  EXPECT_EQ(error_of(with("lora_alpha", -1)), f + "lora_alpha: expected a number > 0, found -1");
  EXPECT_EQ(error_of(with("lora_alpha", "16")),
            f + "lora_alpha: expected a number > 0, found \"16\"");
  EXPECT_EQ(error_of(with("lora_dropout", 1.0)),
            f + "lora_dropout: expected a number in [0, 1), found 1.0");
  EXPECT_EQ(error_of(with("target_modules", {"q_proj", "qkv_proj"})),
            f + "target_modules: unknown module \"qkv_proj\"; expected one of " + modules);
  EXPECT_EQ(error_of(with("target_modules", "all-linear")),
            f +
                "target_modules: \"all-linear\" is not supported; expected a list of module "
                "names among " +
                modules + " (all-linear is every one but lm_head)");
  EXPECT_EQ(error_of(with("target_modules", ".*\\.(q|v)_proj")),
            f +
                "target_modules: a regular expression (\".*\\\\.(q|v)_proj\") is not "
                "supported; expected a list of module names among " +
                modules);
  EXPECT_EQ(error_of(with("target_modules", Json::array())),
            f + "target_modules: expected a list of module names among " + modules + ", found []");
  EXPECT_EQ(error_of(without("target_modules")),
            f + "target_modules: missing (expected a list of module names among " + modules + ")");
  EXPECT_EQ(error_of(with("use_dora", true)),
            f + "use_dora: true is not supported (DoRA rescales the merged weight); expected "
                "false");
  EXPECT_EQ(error_of(with("use_rslora", true)),
            f + "use_rslora: true is not supported (rsLoRA scales by lora_alpha / sqrt(r)); "
                "expected false");
  EXPECT_EQ(error_of(with("fan_in_fan_out", true)),
            f + "fan_in_fan_out: true is not supported (transposed Conv1D weights; Llama's are "
                "[out, in]); expected false");
  EXPECT_EQ(error_of(with("use_dora", "no")), f + "use_dora: expected true or false, found \"no\"");
  EXPECT_EQ(error_of(with("bias", "all")),
            f + "bias: expected \"none\" (ftbench's Llama has no biases), found \"all\"");
  EXPECT_EQ(error_of(with("layers_to_transform", {0, 1})),
            f + "layers_to_transform: expected null (ftbench adapts every layer), found [0,1]");
  EXPECT_EQ(error_of(with("rank_pattern", {{"q_proj", 8}})),
            f + "rank_pattern: expected {} (one r for every module), found {\"q_proj\":8}");
  EXPECT_EQ(error_of(with("alpha_pattern", {{"q_proj", 8}})),
            f + "alpha_pattern: expected {} (one lora_alpha for every module), found "
                "{\"q_proj\":8}");
  EXPECT_EQ(error_of(with("modules_to_save", {"lm_head"})),
            f + "modules_to_save: expected null (whole modules saved next to the adapter), "
                "found [\"lm_head\"]");
  // Accepted spellings of "nothing": null, [] and {}.
  EXPECT_EQ(error_of(with("layers_to_transform", nullptr)), "");
  EXPECT_EQ(error_of(with("modules_to_save", Json::array())), "");
  EXPECT_EQ(error_of(with("bias", nullptr)), "");
}

TEST(PeftConfig, WrittenConfigReadsBackAndHasPeftsFields) {
  spec::LoraSpec lora;
  lora.rank = 8;
  lora.alpha = 16.0;
  lora.dropout = 0.1;
  lora.targets = {"output", "v", "q", "down"};
  const std::string text = peft_adapter_config_json(lora, "meta-llama/Llama-3.2-1B");
  EXPECT_EQ(text, R"({
  "alpha_pattern": {},
  "auto_mapping": null,
  "base_model_name_or_path": "meta-llama/Llama-3.2-1B",
  "bias": "none",
  "fan_in_fan_out": false,
  "inference_mode": true,
  "init_lora_weights": true,
  "layers_pattern": null,
  "layers_to_transform": null,
  "lora_alpha": 16,
  "lora_dropout": 0.1,
  "modules_to_save": null,
  "peft_type": "LORA",
  "r": 8,
  "rank_pattern": {},
  "revision": null,
  "target_modules": [
    "q_proj",
    "v_proj",
    "down_proj",
    "lm_head"
  ],
  "task_type": "CAUSAL_LM",
  "use_dora": false,
  "use_rslora": false
}
)");
  const PeftAdapterConfig back = parse_peft_adapter_config(text, "x");
  EXPECT_EQ(back.lora.rank, 8);
  EXPECT_EQ(back.lora.alpha, 16.0);
  EXPECT_EQ(back.lora.dropout, 0.1);
  EXPECT_EQ(back.lora.targets, (std::vector<std::string>{"q", "v", "down", "output"}));
  EXPECT_EQ(back.base_model_name_or_path, "meta-llama/Llama-3.2-1B");

  lora.alpha = 12.5;
  const Json j = Json::parse(peft_adapter_config_json(lora, ""));
  EXPECT_EQ(j["lora_alpha"].dump(), "12.5");
  EXPECT_TRUE(j["base_model_name_or_path"].is_null());
  EXPECT_EQ(parse_peft_adapter_config(j.dump(), "x").lora.alpha, 12.5);
}

TEST(PeftConfig, ModuleNames) {
  EXPECT_STREQ(hf_module_name("q"), "q_proj");
  EXPECT_STREQ(hf_module_name("k"), "k_proj");
  EXPECT_STREQ(hf_module_name("v"), "v_proj");
  EXPECT_STREQ(hf_module_name("o"), "o_proj");
  EXPECT_STREQ(hf_module_name("gate"), "gate_proj");
  EXPECT_STREQ(hf_module_name("up"), "up_proj");
  EXPECT_STREQ(hf_module_name("down"), "down_proj");
  EXPECT_STREQ(hf_module_name("output"), "lm_head");
  EXPECT_EQ(hf_module_name("qkv"), nullptr);
}

void expect_same_shape(const spec::ModelSpec& a, const spec::ModelSpec& b) {
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.ffn_dim, b.ffn_dim);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_seq_len, b.max_seq_len);
  EXPECT_EQ(a.norm_eps, b.norm_eps);  // exactly: the doubles must round-trip
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  ASSERT_EQ(a.rope_scaling.has_value(), b.rope_scaling.has_value());
  if (a.rope_scaling) {
    EXPECT_EQ(a.rope_scaling->factor, b.rope_scaling->factor);
    EXPECT_EQ(a.rope_scaling->low_freq_factor, b.rope_scaling->low_freq_factor);
    EXPECT_EQ(a.rope_scaling->high_freq_factor, b.rope_scaling->high_freq_factor);
    EXPECT_EQ(a.rope_scaling->original_max_position_embeddings,
              b.rope_scaling->original_max_position_embeddings);
  }
}

TEST(PeftConfig, HfConfigJsonRoundTripsThroughParseHfConfig) {
  for (const char* preset : {"llama3.1-8b", "llama3.2-1b", "llama2-7b", "tiny"}) {
    SCOPED_TRACE(preset);
    const spec::ModelSpec shape = *spec::find_preset(preset);
    const spec::HfConfig back =
        spec::parse_hf_config(hf_config_json(shape, "bfloat16"), "config.json");
    expect_same_shape(shape, back.shape);
    EXPECT_EQ(back.torch_dtype, "bfloat16");
  }
  // Values whose decimal forms are not short: every bit must survive.
  spec::ModelSpec odd = *spec::find_preset("tiny");
  odd.norm_eps = 1e-5;
  odd.rope_theta = 123456.789;
  odd.n_kv_heads = 1;
  odd.tie_embeddings = !odd.tie_embeddings;
  odd.rope_scaling = spec::RopeScaling{0.1 + 0.2, 1.0 / 3.0, 4.25, 256};
  const std::string text = hf_config_json(odd, "float32");
  expect_same_shape(odd, spec::parse_hf_config(text, "config.json").shape);
  EXPECT_NE(text.find("\"rms_norm_eps\": 1e-05,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"rope_type\": \"llama3\""), std::string::npos) << text;
}

TEST(PeftConfig, HfConfigJsonForTheLlama31Preset) {
  spec::ModelSpec shape = *spec::find_preset("llama3.1-8b");
  shape.max_seq_len = 131072;
  EXPECT_EQ(hf_config_json(shape, "bfloat16"), R"({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 128256
}
)");
}

}  // namespace
}  // namespace ftbench::hf
