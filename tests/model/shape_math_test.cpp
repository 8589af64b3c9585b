#include "model/shape_math.h"

#include <gtest/gtest.h>

#include "spec/derived.h"
#include "spec/presets.h"

namespace ftbench::model {
namespace {

spec::ModelSpec llama31_8b() {
  spec::ModelSpec m;
  m.dim = 4096;
  m.n_layers = 32;
  m.n_heads = 32;
  m.n_kv_heads = 8;
  m.ffn_dim = 14336;
  m.vocab_size = 128256;
  m.tie_embeddings = false;
  return m;
}

TEST(ShapeMath, Llama31_8bParameterCountMatchesPublishedCheckpoint) {
  spec::LoraSpec lora;
  lora.rank = 16;
  lora.targets = {"q", "v", "o"};
  const ParamCounts c = count_parameters(llama31_8b(), lora);
  EXPECT_EQ(c.base, 8030261248);
  // q: 16*(4096+4096), v: 16*(4096+1024), o: 16*(4096+4096), 32 layers.
  EXPECT_EQ(c.lora, 32 * (131072 + 81920 + 131072));
  EXPECT_EQ(c.lora, 11010048);
  EXPECT_EQ(c.total(), 8030261248 + 11010048);
  EXPECT_EQ(c.embedding, 128256LL * 4096);
}

TEST(ShapeMath, TiedEmbeddingsCountTheTableOnce) {
  // Llama 3.2 1B: 1,235,814,400 parameters with tied embeddings.
  spec::ModelSpec m;
  m.dim = 2048;
  m.n_layers = 16;
  m.n_heads = 32;
  m.n_kv_heads = 8;
  m.ffn_dim = 8192;
  m.vocab_size = 128256;
  m.tie_embeddings = true;
  spec::LoraSpec lora;
  lora.targets = {"output"};
  lora.rank = 4;
  const ParamCounts c = count_parameters(m, lora);
  EXPECT_EQ(c.base, 1235814400);
  EXPECT_EQ(c.lora, 4 * (2048 + 128256));
  EXPECT_EQ(c.lora_in_blocks, 0);
}

TEST(ShapeMath, Llama2_7bParameterCount) {
  spec::ModelSpec m;
  m.dim = 4096;
  m.n_layers = 32;
  m.n_heads = 32;
  m.n_kv_heads = 32;
  m.ffn_dim = 11008;
  m.vocab_size = 32000;
  const ParamCounts c = count_parameters(m, spec::LoraSpec{});
  EXPECT_EQ(c.base, 6738415616);
}

// A one-layer toy whose FLOPs are counted by hand below.
spec::ModelSpec flops_model() {
  spec::ModelSpec m;
  m.dim = 8;
  m.n_layers = 1;
  m.n_heads = 2;
  m.n_kv_heads = 1;
  m.ffn_dim = 16;
  m.vocab_size = 10;
  return m;
}

// LoRA on the output head alone: no gradient enters the decoder layers, so checkpointing
// recomputes nothing and no formula counts a recompute.
TEST(ShapeMath, NothingIsRecomputedWithoutAnAdapterInTheLayers) {
  spec::ModelSpec m = flops_model();
  m.n_layers = 2;
  spec::LoraSpec lora;
  lora.rank = 2;
  lora.targets = {"output"};
  const ParamCounts c = count_parameters(m, lora);
  ASSERT_EQ(c.lora_in_blocks, 0);
  for (const FlopFormula f :
       {FlopFormula::kLoraFrozenBase, FlopFormula::kSixN, FlopFormula::kExecuted}) {
    EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, 4, f, true, true),
                     training_flops_per_token(m, c, 4, f, false, true))
        << to_string(f);
  }
}

TEST(ShapeMath, FlopsPerTokenFormulas) {
  const spec::ModelSpec m = flops_model();
  spec::LoraSpec lora;
  lora.rank = 2;
  lora.targets = {"q"};
  const ParamCounts c = count_parameters(m, lora);
  // Block: q 64, k 32, v 32, o 64, gate 128, up 128, down 128 = 576; head 80.
  ASSERT_EQ(c.block_matmul, 576);
  ASSERT_EQ(c.base_matmul, 656);
  ASSERT_EQ(c.lora, 32);
  const int64_t s = 4;
  const double attn = 4.0 * 1 * 8 * s;  // 128
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kLoraFrozenBase, false),
                   4.0 * 656 + 6.0 * 32 + 3.0 * attn);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kSixN, false),
                   6.0 * (656 + 32) + 3.0 * attn);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kSixN, true),
                   6.0 * (656 + 32) + 3.0 * attn + 2.0 * (576 + 32) + attn);
  // Executed: a causal kernel computes (s + 1) / 2s of the scores (10 of 16 for s = 4); the
  // math kernel all of them; the recompute adds the layers' forward, attention included.
  const double causal = attn * 10.0 / 16.0;  // 80
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kExecuted, false, true),
                   4.0 * 656 + 6.0 * 32 + 3.0 * causal);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kExecuted, true, true),
                   4.0 * 656 + 6.0 * 32 + 3.0 * causal + 2.0 * (576 + 32) + causal);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kExecuted, false, false),
                   training_flops_per_token(m, c, s, FlopFormula::kLoraFrozenBase, false));
  // The other formulas keep the whole square whatever the kernel.
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, s, FlopFormula::kSixN, false, true),
                   6.0 * (656 + 32) + 3.0 * attn);
  EXPECT_TRUE(attention_skips_masked_blocks("flash_attention"));
  EXPECT_TRUE(attention_skips_masked_blocks("efficient_attention"));
  EXPECT_TRUE(attention_skips_masked_blocks("cudnn_attention"));
  EXPECT_TRUE(attention_skips_masked_blocks("blocked_math"));
  EXPECT_FALSE(attention_skips_masked_blocks("math"));
  EXPECT_FALSE(attention_skips_masked_blocks("unknown"));
}

// docs/methodology.md section 5's example: Llama 3.1 8B, LoRA r16 on q, v, o, s = 2048.
TEST(ShapeMath, TheReferenceRecipesModelAndExecutedFlops) {
  const spec::ModelSpec m = *spec::find_preset("llama3.1-8b");
  spec::LoraSpec lora;
  lora.rank = 16;
  lora.targets = {"q", "v", "o"};
  const ParamCounts c = count_parameters(m, lora);
  EXPECT_EQ(c.base_matmul, 7504658432);
  EXPECT_EQ(c.block_matmul, 6979321856);
  EXPECT_EQ(c.lora_in_blocks, 11010048);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, 2048, FlopFormula::kSixN, false), 48315236352.0);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, c, 2048, FlopFormula::kExecuted, true, true),
                   46213890048.0);
}

TEST(ShapeMath, DerivedCountsOfTheReferenceRecipe) {
  spec::RunSpec s;
  s.data.num_examples = 2000;
  s.data.seq_len = 2048;
  s.train.micro_batch_size = 4;
  s.train.grad_accum_steps = 4;
  s.train.epochs = 3;
  const spec::DerivedCounts d = spec::derive_counts(s);
  EXPECT_EQ(d.effective_batch, 16);
  EXPECT_EQ(d.micro_batches_per_epoch, 500);
  EXPECT_EQ(d.steps_per_epoch, 125);
  EXPECT_EQ(d.total_steps, 375);
  EXPECT_EQ(d.max_tokens_per_step, 16 * 2048);
  s.data.num_examples = 2010;  // 502 micro-batches: 2 left over after 125 steps, dropped
  EXPECT_EQ(spec::derive_counts(s).steps_per_epoch, 125);
  s.train.max_steps = 100;
  EXPECT_EQ(spec::derive_counts(s).total_steps, 100);
}

// Packed rows decide an epoch's micro-batches: 301 packed micro-batches make 75 steps (1 left
// over), 3 epochs 225 steps; the examples count no more.
TEST(ShapeMath, DerivedCountsFromPackedMicroBatches) {
  spec::RunSpec s;
  s.data.num_examples = 2000;
  s.train.micro_batch_size = 4;
  s.train.grad_accum_steps = 4;
  s.train.epochs = 3;
  const spec::DerivedCounts d = spec::derive_counts_from_batches(s, 301);
  EXPECT_EQ(d.micro_batches_per_epoch, 301);
  EXPECT_EQ(d.steps_per_epoch, 75);
  EXPECT_EQ(d.total_steps, 225);
  EXPECT_EQ(d.effective_batch, 16);
  EXPECT_EQ(spec::derive_counts_from_batches(s, 3).steps_per_epoch, 0);
}

}  // namespace
}  // namespace ftbench::model
