// Shared by the model tests: a small Llama and LoRA on every target, and a tensor difference.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

#include "spec/run_spec.h"

namespace ftbench::model::testing {

inline spec::ModelSpec small_model() {
  spec::ModelSpec m;
  m.dim = 32;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.ffn_dim = 48;
  m.vocab_size = 50;
  m.max_seq_len = 64;
  m.norm_eps = 1e-5;
  m.rope_theta = 10000.0;
  m.dtype = "fp32";
  return m;
}

inline spec::LoraSpec all_targets(int64_t rank) {
  spec::LoraSpec l;
  l.rank = rank;
  l.alpha = 2.0 * rank;
  l.dropout = 0.0;
  l.targets = {"q", "k", "v", "o", "gate", "up", "down", "output"};
  l.dtype = "fp32";
  return l;
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace ftbench::model::testing
