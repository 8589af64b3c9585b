#include "model/shape_math.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "spec/limits.h"

namespace ftbench::model {
namespace {

bool has_target(const spec::LoraSpec& lora, const std::string& name) {
  return std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
}

}  // namespace

std::optional<ParamCounts> try_count_parameters(const spec::ModelSpec& m,
                                                const spec::LoraSpec& lora) {
  if (m.n_heads < 1) return std::nullopt;
  // Every product and sum checked: a wrapped count would make a model of "0 parameters".
  struct Checked {
    std::optional<int64_t> v;
    Checked operator*(const Checked& o) const {
      return {v && o.v ? spec::checked_mul(*v, *o.v) : std::nullopt};
    }
    Checked operator+(const Checked& o) const {
      return {v && o.v ? spec::checked_add(*v, *o.v) : std::nullopt};
    }
  };
  const auto c = [](int64_t x) { return Checked{x}; };
  const int64_t head_dim = m.dim / m.n_heads;
  const Checked kv_dim = c(head_dim) * c(m.n_kv_heads);
  const Checked dim = c(m.dim);
  const Checked ffn = c(m.ffn_dim);

  // (in, out) of every linear layer in a decoder layer.
  struct Linear {
    const char* name;
    Checked in;
    Checked out;
  };
  const Linear block_linears[] = {{"q", dim, dim},   {"k", dim, kv_dim}, {"v", dim, kv_dim},
                                  {"o", dim, dim},   {"gate", dim, ffn}, {"up", dim, ffn},
                                  {"down", ffn, dim}};

  Checked block_weights = c(0);
  Checked block_lora = c(0);
  for (const Linear& l : block_linears) {
    block_weights = block_weights + l.in * l.out;
    if (has_target(lora, l.name)) block_lora = block_lora + c(lora.rank) * (l.in + l.out);
  }
  const Checked layers = c(m.n_layers);
  const Checked block_norms = c(2) * dim;
  const Checked head = c(m.vocab_size) * dim;
  const Checked embedding = head;
  const Checked block_matmul = layers * block_weights;
  const Checked base_matmul = block_matmul + head;
  const Checked base =
      embedding + layers * (block_weights + block_norms) + dim + (m.tie_embeddings ? c(0) : head);
  const Checked lora_in_blocks = layers * block_lora;
  const Checked lora_total =
      lora_in_blocks + (has_target(lora, "output") ? c(lora.rank) * (dim + c(m.vocab_size)) : c(0));
  // The sum the report writes as parameters.total.
  const Checked total = base + lora_total;
  if (!embedding.v || !block_matmul.v || !base_matmul.v || !base.v || !lora_in_blocks.v ||
      !lora_total.v || !total.v) {
    return std::nullopt;
  }
  ParamCounts out;
  out.embedding = *embedding.v;
  out.block_matmul = *block_matmul.v;
  out.base_matmul = *base_matmul.v;
  out.base = *base.v;
  out.lora_in_blocks = *lora_in_blocks.v;
  out.lora = *lora_total.v;
  return out;
}

ParamCounts count_parameters(const spec::ModelSpec& m, const spec::LoraSpec& lora) {
  const std::optional<ParamCounts> counts = try_count_parameters(m, lora);
  if (!counts) {
    throw std::overflow_error(fmt::format(
        "the model's parameter count does not fit in 64 bits (dim {}, n_layers {}, ffn_dim {}, "
        "vocab_size {}, lora.rank {})",
        m.dim, m.n_layers, m.ffn_dim, m.vocab_size, lora.rank));
  }
  return *counts;
}

std::string to_string(FlopFormula formula) {
  return std::string(text::spelling_of(kFlopFormulaSpellings, formula));
}

bool attention_skips_masked_blocks(std::string_view attention_kernel) {
  return attention_kernel == "flash_attention" || attention_kernel == "efficient_attention" ||
         attention_kernel == "cudnn_attention" || attention_kernel == "blocked_math";
}

double training_flops_per_token(const spec::ModelSpec& m, const ParamCounts& c, int64_t seq_len,
                                FlopFormula formula, bool recompute, bool causal_half) {
  const double n_base = static_cast<double>(c.base_matmul);
  const double n_lora = static_cast<double>(c.lora);
  // Attention score and value products: 2 * s * d each per layer and token, forward.
  double attn_forward =
      4.0 * static_cast<double>(m.n_layers) * static_cast<double>(m.dim) * seq_len;
  // Executed causal attention: a token at position i sees i + 1 keys, (s + 1) / 2 on average.
  if (formula == FlopFormula::kExecuted && causal_half && seq_len > 0) {
    attn_forward *= (static_cast<double>(seq_len) + 1.0) / (2.0 * static_cast<double>(seq_len));
  }
  double flops = 0.0;
  switch (formula) {
    case FlopFormula::kLoraFrozenBase:
    case FlopFormula::kExecuted:
      // Forward 2N + 2N_lora, input gradients 2N + 2N_lora, weight gradients only for the
      // adapters 2N_lora; attention backward is twice its forward.
      flops = 4.0 * n_base + 6.0 * n_lora + 3.0 * attn_forward;
      break;
    case FlopFormula::kSixN:
      flops = 6.0 * (n_base + n_lora) + 3.0 * attn_forward;
      break;
  }
  // Without an adapter in the decoder layers no gradient enters them, so nothing is recomputed.
  if (recompute && c.lora_in_blocks > 0) {
    flops += 2.0 * static_cast<double>(c.block_matmul + c.lora_in_blocks) + attn_forward;
  }
  return flops;
}

}  // namespace ftbench::model
