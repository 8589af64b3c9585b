#include "ftbench/model/shape_math.h"

#include <algorithm>

namespace ftbench::model {
namespace {

bool has_target(const spec::LoraSpec& lora, const std::string& name) {
  return std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
}

}  // namespace

ParamCounts count_parameters(const spec::ModelSpec& m, const spec::LoraSpec& lora) {
  const int64_t head_dim = m.dim / m.n_heads;
  const int64_t kv_dim = head_dim * m.n_kv_heads;
  const int64_t q_out = m.dim;

  // (in, out) of every linear layer in a decoder layer.
  struct Linear {
    const char* name;
    int64_t in;
    int64_t out;
  };
  const Linear block_linears[] = {{"q", m.dim, q_out},        {"k", m.dim, kv_dim},
                                  {"v", m.dim, kv_dim},       {"o", q_out, m.dim},
                                  {"gate", m.dim, m.ffn_dim}, {"up", m.dim, m.ffn_dim},
                                  {"down", m.ffn_dim, m.dim}};

  ParamCounts c;
  int64_t block_weights = 0;
  int64_t block_lora = 0;
  for (const Linear& l : block_linears) {
    block_weights += l.in * l.out;
    if (has_target(lora, l.name)) block_lora += lora.rank * (l.in + l.out);
  }
  const int64_t block_norms = 2 * m.dim;
  const int64_t head = m.vocab_size * m.dim;

  c.embedding = m.vocab_size * m.dim;
  c.block_matmul = m.n_layers * block_weights;
  c.base_matmul = c.block_matmul + head;
  c.base = c.embedding + m.n_layers * (block_weights + block_norms) + m.dim +
           (m.tie_embeddings ? 0 : head);
  c.lora_in_blocks = m.n_layers * block_lora;
  c.lora = c.lora_in_blocks + (has_target(lora, "output") ? lora.rank * (m.dim + m.vocab_size) : 0);
  return c;
}

std::string to_string(FlopFormula formula) {
  switch (formula) {
    case FlopFormula::kLoraFrozenBase:
      return "lora_frozen_base";
    case FlopFormula::kSixN:
      return "six_n";
  }
  return "unknown";
}

double training_flops_per_token(const spec::ModelSpec& m, const ParamCounts& c, int64_t seq_len,
                                FlopFormula formula, bool recompute) {
  const double n_base = static_cast<double>(c.base_matmul);
  const double n_lora = static_cast<double>(c.lora);
  // Attention score and value products: 2 * s * d each per layer and token, forward.
  const double attn_forward =
      4.0 * static_cast<double>(m.n_layers) * static_cast<double>(m.dim) * seq_len;
  double flops = 0.0;
  switch (formula) {
    case FlopFormula::kLoraFrozenBase:
      // Forward 2N + 2N_lora, input gradients 2N + 2N_lora, weight gradients only for the
      // adapters 2N_lora; attention backward is twice its forward.
      flops = 4.0 * n_base + 6.0 * n_lora + 3.0 * attn_forward;
      break;
    case FlopFormula::kSixN:
      flops = 6.0 * (n_base + n_lora) + 3.0 * attn_forward;
      break;
  }
  if (recompute) {
    flops += 2.0 * static_cast<double>(c.block_matmul + c.lora_in_blocks) + attn_forward;
  }
  return flops;
}

}  // namespace ftbench::model
