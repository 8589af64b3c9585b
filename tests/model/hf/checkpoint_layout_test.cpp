#include "model/hf/checkpoint_layout.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/shape_math.h"
#include "spec/checkpoint_config.h"
#include "spec/presets.h"

namespace ftbench::hf {
namespace {

// config.json of meta-llama/Llama-3.1-8B as published on the Hugging Face hub.
constexpr const char* kLlama31_8b = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

std::string error_of(const std::string& text) {
  try {
    spec::parse_hf_config(text, "c.json");
  } catch (const spec::HfCheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, Llama31_8bGivesThePresetShape) {
  const spec::HfConfig c = spec::parse_hf_config(kLlama31_8b, "config.json");
  const spec::ModelSpec preset = *spec::find_preset("llama3.1-8b");
  const spec::ModelSpec& m = c.shape;
  EXPECT_EQ(m.dim, preset.dim);
  EXPECT_EQ(m.n_layers, preset.n_layers);
  EXPECT_EQ(m.n_heads, preset.n_heads);
  EXPECT_EQ(m.n_kv_heads, preset.n_kv_heads);
  EXPECT_EQ(m.ffn_dim, preset.ffn_dim);
  EXPECT_EQ(m.vocab_size, preset.vocab_size);
  EXPECT_EQ(m.norm_eps, preset.norm_eps);
  EXPECT_EQ(m.rope_theta, preset.rope_theta);
  EXPECT_EQ(m.tie_embeddings, preset.tie_embeddings);
  ASSERT_TRUE(m.rope_scaling.has_value());
  ASSERT_TRUE(preset.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->factor, preset.rope_scaling->factor);
  EXPECT_EQ(m.rope_scaling->original_max_position_embeddings,
            preset.rope_scaling->original_max_position_embeddings);
  EXPECT_EQ(m.max_seq_len, 131072);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{128000});
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{128001});
  // The tensors HF writes add up to the 8,030,261,248 parameters of the model card.
  int64_t total = 0;
  for (const HfTensor& t : hf_llama_tensors(m)) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    total += n;
  }
  EXPECT_EQ(total, 8'030'261'248);
  EXPECT_EQ(hf_llama_tensors(m).size(), 2u + 32u * 9u + 1u);
}

// Transformers 5 writes the rotary settings as rope_parameters (and "dtype" for "torch_dtype"):
// the same Llama 3.1 8B as its 4.x config.json above.
TEST(HfConfig, Transformers5RopeParametersGiveTheSameShape) {
  nlohmann::json v5 = nlohmann::json::parse(kLlama31_8b);
  v5.erase("rope_theta");
  nlohmann::json params = v5["rope_scaling"];
  v5.erase("rope_scaling");
  params["rope_theta"] = 500000.0;
  v5["rope_parameters"] = params;
  v5["dtype"] = v5["torch_dtype"];
  v5.erase("torch_dtype");
  v5["transformers_version"] = "5.0.0";
  const spec::HfConfig a = spec::parse_hf_config(kLlama31_8b, "4.json");
  const spec::HfConfig b = spec::parse_hf_config(v5.dump(), "5.json");
  EXPECT_EQ(b.shape.rope_theta, 500000.0);
  ASSERT_TRUE(b.shape.rope_scaling.has_value());
  EXPECT_EQ(b.shape.rope_scaling->factor, a.shape.rope_scaling->factor);
  EXPECT_EQ(b.shape.rope_scaling->low_freq_factor, a.shape.rope_scaling->low_freq_factor);
  EXPECT_EQ(b.shape.rope_scaling->high_freq_factor, a.shape.rope_scaling->high_freq_factor);
  EXPECT_EQ(b.shape.rope_scaling->original_max_position_embeddings,
            a.shape.rope_scaling->original_max_position_embeddings);
  EXPECT_EQ(b.torch_dtype, "bfloat16");
  // A plain rotary: rope_type default, its own theta.
  const spec::HfConfig plain = spec::parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 300,
          "max_position_embeddings": 256,
          "rope_parameters": {"rope_type": "default", "rope_theta": 20000.0}})",
      "c.json");
  EXPECT_EQ(plain.shape.rope_theta, 20000.0);
  EXPECT_FALSE(plain.shape.rope_scaling.has_value());
  // Both forms, disagreeing; and a field of the object that is wrong, named with its path.
  const std::string base = R"("model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 300,
      "max_position_embeddings": 256)";
  EXPECT_EQ(error_of("{" + base +
                     R"(, "rope_theta": 10000.0, "rope_parameters": {"rope_type": "default",
                     "rope_theta": 500000.0}})"),
            "c.json: rope_theta: 10000 here, 500000 in rope_parameters.rope_theta");
  EXPECT_EQ(error_of("{" + base +
                     R"(, "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0,
                     "factor": -8}})"),
            "c.json: rope_parameters.factor: expected a number > 0, found -8");
  EXPECT_EQ(error_of("{" + base + R"(, "rope_parameters": {"rope_type": "yarn"}})"),
            "c.json: rope_parameters.rope_type: expected \"llama3\" or \"default\" (the "
            "scalings ftbench implements), found \"yarn\"");
}

// config.json exactly as transformers 5.25.0 saves a small LlamaForCausalLM (GQA, tied head,
// Llama 3 rope scaling): what tests/reference/hf_transformers.py make writes for the tests against
// transformers itself.
constexpr const char* kTransformers525Config = R"({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "dtype": "float32",
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 96,
  "max_position_embeddings": 64,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": null,
  "pretraining_tp": 1,
  "rms_norm_eps": 0.001,
  "rope_parameters": {
    "factor": 8.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 16,
    "rope_theta": 500000.0,
    "rope_type": "llama3"
  },
  "tie_word_embeddings": true,
  "transformers_version": "5.25.0",
  "use_cache": true,
  "vocab_size": 97
})";

TEST(HfConfig, ReadsTheConfigTransformers525Writes) {
  const spec::HfConfig c = spec::parse_hf_config(kTransformers525Config, "config.json");
  const spec::ModelSpec& m = c.shape;
  EXPECT_EQ(m.dim, 64);
  EXPECT_EQ(m.n_layers, 2);
  EXPECT_EQ(m.n_heads, 4);
  EXPECT_EQ(m.n_kv_heads, 2);
  EXPECT_EQ(m.ffn_dim, 96);
  EXPECT_EQ(m.vocab_size, 97);
  EXPECT_EQ(m.max_seq_len, 64);
  EXPECT_EQ(m.norm_eps, 1e-3);
  EXPECT_EQ(m.rope_theta, 500000.0);
  EXPECT_TRUE(m.tie_embeddings);
  ASSERT_TRUE(m.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->factor, 8.0);
  EXPECT_EQ(m.rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(m.rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(m.rope_scaling->original_max_position_embeddings, 16);
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(c.bos_token_ids, std::vector<int64_t>{1});
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
}

TEST(HfConfig, DefaultsAsTransformersLlamaConfig) {
  const spec::HfConfig c = spec::parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 300,
          "max_position_embeddings": 256, "tie_word_embeddings": true,
          "eos_token_id": [1, 2]})",
      "c.json");
  EXPECT_EQ(c.shape.n_kv_heads, 4);
  EXPECT_EQ(c.shape.rope_theta, 10000.0);
  EXPECT_EQ(c.shape.norm_eps, 1e-6);
  EXPECT_FALSE(c.shape.rope_scaling.has_value());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(hf_llama_tensors(c.shape).back().name, "model.norm.weight");
}

TEST(HfConfig, RefusesWhatTheModelCannotBeNamingTheKey) {
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 300, "max_position_embeddings": 256)";
  EXPECT_EQ(error_of("{\"model_type\": \"mistral\", " + base + "}"),
            "c.json: model_type: expected \"llama\" (a Llama checkpoint), found \"mistral\"");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"hidden_act\": \"gelu\", " + base + "}"),
            "c.json: hidden_act: expected \"silu\" (SwiGLU), found \"gelu\"");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"attention_bias\": true, " + base + "}"),
            "c.json: attention_bias: expected false: ftbench's Llama has no biases");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"num_key_value_heads\": 3, " + base + "}"),
            "c.json: num_key_value_heads: 3 does not divide num_attention_heads 4");
  EXPECT_EQ(error_of("{\"model_type\": \"llama\", \"head_dim\": 32, " + base + "}"),
            "c.json: head_dim: expected hidden_size / num_attention_heads = 16, found 32");
  EXPECT_EQ(
      error_of(R"({"model_type": "llama", "rope_scaling": {"rope_type": "yarn"}, )" + base + "}"),
      "c.json: rope_scaling.rope_type: expected \"llama3\" or \"default\" (the scalings "
      "ftbench implements), found \"yarn\"");
  EXPECT_EQ(error_of(R"({"model_type": "llama", "hidden_size": 64})"),
            "c.json: num_hidden_layers: missing (expected an integer >= 1)");
  EXPECT_EQ(error_of(R"({"model_type": "llama", "hidden_size": -4})"),
            "c.json: hidden_size: expected an integer in [1, 16777216], found -4");
  // Sizes no model has are refused before anything is computed from them.
  EXPECT_EQ(error_of(R"({"model_type": "llama", "hidden_size": 18446744073709551615})"),
            "c.json: hidden_size: expected an integer in [1, 16777216], found "
            "18446744073709551615");
  EXPECT_EQ(error_of(R"({"model_type": "llama", "hidden_size": 60, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 300,
      "max_position_embeddings": 256})"),
            "c.json: hidden_size: 60 / num_attention_heads 4 = 15 per head, which is odd: rotary "
            "embeddings rotate pairs of dimensions");
  EXPECT_EQ(error_of(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 4097})"),
            "c.json: num_hidden_layers: expected an integer in [1, 4096], found 4097");
  EXPECT_NE(error_of("{").find("c.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(error_of("[]"), "c.json: expected a JSON object");
}

TEST(HfConfig, ShardIndexMapsTensorsToFilesInTheFolder) {
  const auto map = parse_shard_index(
      R"({"metadata": {"total_size": 16}, "weight_map": {"a": "model-00001-of-00002.safetensors",
          "b": "model-00002-of-00002.safetensors"}})",
      "i.json");
  EXPECT_EQ(map.at("b"), "model-00002-of-00002.safetensors");
  for (const char* bad :
       {R"({"weight_map": {"a": "../x.safetensors"}})", R"({"weight_map": {"a": "/etc/passwd"}})",
        R"({"weight_map": {"a": ".."}})", R"({"weight_map": {"a": 3}})", R"({"weight_map": []})",
        R"([])"}) {
    EXPECT_THROW(parse_shard_index(bad, "i.json"), spec::HfCheckpointError) << bad;
  }
}

// config.json with a key given twice was read with its last value (issue 39): refused, naming
// the file and the key.
TEST(HfConfig, AKeyGivenTwiceIsRefused) {
  EXPECT_EQ(error_of("{\"hidden_size\": 2048," + std::string(kLlama31_8b).substr(1)),
            "c.json: hidden_size: a key given twice in one object");
}

}  // namespace
}  // namespace ftbench::hf
