#include "spec/presets.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spec/spec_loader.h"

namespace ftbench::spec {
namespace {

// Parameters of a Llama with this shape: embeddings (+ untied output head), per layer q, k, v, o
// projections, the three SwiGLU matrices and two RMSNorm weights, and the final norm. Written
// out here independently of the model code, to check the preset shapes against the parameter
// counts published for each checkpoint.
int64_t LlamaParameters(const ModelSpec& m) {
  const int64_t head_dim = m.dim / m.n_heads;
  const int64_t kv_dim = m.n_kv_heads * head_dim;
  const int64_t attention = 2 * m.dim * m.dim + 2 * m.dim * kv_dim;
  const int64_t mlp = 3 * m.dim * m.ffn_dim;
  const int64_t per_layer = attention + mlp + 2 * m.dim;
  const int64_t embeddings = m.vocab_size * m.dim * (m.tie_embeddings ? 1 : 2);
  return m.n_layers * per_layer + embeddings + m.dim;
}

TEST(Presets, NamesInDocumentationOrder) {
  EXPECT_EQ(preset_names(), (std::vector<std::string>{"tiny", "llama3.2-1b", "llama3.1-8b",
                                                      "llama3.1-70b", "llama2-7b", "llama2-70b"}));
}

TEST(Presets, UnknownAndCustomHaveNoPreset) {
  EXPECT_FALSE(find_preset("llama3-8b").has_value());
  EXPECT_FALSE(find_preset("custom").has_value());
  EXPECT_FALSE(find_preset("").has_value());
}

TEST(Presets, Tiny) {
  const ModelSpec m = find_preset("tiny").value();
  EXPECT_EQ(m.preset, "tiny");
  EXPECT_EQ(m.dim, 64);
  EXPECT_EQ(m.n_layers, 2);
  EXPECT_EQ(m.n_heads, 4);
  EXPECT_EQ(m.n_kv_heads, 2);
  EXPECT_EQ(m.ffn_dim, 176);
  EXPECT_EQ(m.vocab_size, 320);
  EXPECT_EQ(m.max_seq_len, 512);
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(m.rope_theta, 10000.0);
  EXPECT_FALSE(m.rope_scaling.has_value());
  EXPECT_FALSE(m.tie_embeddings);
  // Non-shape keys stay at their defaults.
  EXPECT_EQ(m.dtype, "fp32");
  EXPECT_EQ(m.activation_checkpointing, "none");
  EXPECT_EQ(m.checkpoint, "");
  EXPECT_EQ(LlamaParameters(m), 133440);
}

TEST(Presets, Llama32_1b) {
  const ModelSpec m = find_preset("llama3.2-1b").value();
  EXPECT_EQ(m.dim, 2048);
  EXPECT_EQ(m.n_layers, 16);
  EXPECT_EQ(m.n_heads, 32);
  EXPECT_EQ(m.n_kv_heads, 8);
  EXPECT_EQ(m.ffn_dim, 8192);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_EQ(m.max_seq_len, 131072);
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(m.rope_theta, 500000.0);
  ASSERT_TRUE(m.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->factor, 32.0);
  EXPECT_EQ(m.rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(m.rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(m.rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_EQ(LlamaParameters(m), 1235814400);  // Hugging Face model card: 1.24B
}

TEST(Presets, Llama31_8b) {
  const ModelSpec m = find_preset("llama3.1-8b").value();
  EXPECT_EQ(m.dim, 4096);
  EXPECT_EQ(m.n_layers, 32);
  EXPECT_EQ(m.n_heads, 32);
  EXPECT_EQ(m.n_kv_heads, 8);
  EXPECT_EQ(m.ffn_dim, 14336);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_EQ(m.max_seq_len, 131072);
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(m.rope_theta, 500000.0);
  ASSERT_TRUE(m.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->factor, 8.0);
  EXPECT_EQ(m.rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(m.rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(m.rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(LlamaParameters(m), 8030261248);
}

TEST(Presets, Llama31_70b) {
  const ModelSpec m = find_preset("llama3.1-70b").value();
  EXPECT_EQ(m.dim, 8192);
  EXPECT_EQ(m.n_layers, 80);
  EXPECT_EQ(m.n_heads, 64);
  EXPECT_EQ(m.n_kv_heads, 8);
  EXPECT_EQ(m.ffn_dim, 28672);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_EQ(m.max_seq_len, 131072);
  EXPECT_EQ(m.rope_theta, 500000.0);
  ASSERT_TRUE(m.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->factor, 8.0);
  EXPECT_EQ(m.rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(LlamaParameters(m), 70553706496);
}

TEST(Presets, Llama2_7b) {
  const ModelSpec m = find_preset("llama2-7b").value();
  EXPECT_EQ(m.dim, 4096);
  EXPECT_EQ(m.n_layers, 32);
  EXPECT_EQ(m.n_heads, 32);
  EXPECT_EQ(m.n_kv_heads, 32);
  EXPECT_EQ(m.ffn_dim, 11008);
  EXPECT_EQ(m.vocab_size, 32000);
  EXPECT_EQ(m.max_seq_len, 4096);
  EXPECT_EQ(m.norm_eps, 1e-5);
  EXPECT_EQ(m.rope_theta, 10000.0);
  EXPECT_FALSE(m.rope_scaling.has_value());
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(LlamaParameters(m), 6738415616);
}

TEST(Presets, Llama2_70b) {
  const ModelSpec m = find_preset("llama2-70b").value();
  EXPECT_EQ(m.dim, 8192);
  EXPECT_EQ(m.n_layers, 80);
  EXPECT_EQ(m.n_heads, 64);
  EXPECT_EQ(m.n_kv_heads, 8);
  EXPECT_EQ(m.ffn_dim, 28672);
  EXPECT_EQ(m.vocab_size, 32000);
  EXPECT_EQ(m.max_seq_len, 4096);
  EXPECT_EQ(m.rope_theta, 10000.0);
  EXPECT_FALSE(m.rope_scaling.has_value());
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(LlamaParameters(m), 68976648192);
}

TEST(Presets, EveryPresetPassesValidation) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    const RunSpec s = load_spec_from_string("model:\n  preset: " + name + "\n", "t.yaml");
    EXPECT_EQ(s.model.preset, name);
    EXPECT_EQ(s.model.dim, find_preset(name)->dim);
  }
}

}  // namespace
}  // namespace ftbench::spec
