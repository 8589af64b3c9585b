#include <algorithm>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "data/byte_tokenizer.h"
#include "data/rng.h"
#include "data/synthetic_dataset.h"
#include "data/torch/batcher.h"
#include "data/torch/prefetcher.h"

namespace ftbench::data {
namespace {

TEST(ByteTokenizer, RoundTripsUtf8AndSkipsSpecials) {
  const ByteTokenizer tok;
  const std::string text = "h\xC3\xA9llo";  // "héllo"
  const std::vector<int32_t> ids = tok.encode(text);
  EXPECT_EQ(ids, (std::vector<int32_t>{104, 195, 169, 108, 108, 111}));
  std::vector<int32_t> with_specials = ids;
  with_specials.insert(with_specials.begin(), ByteTokenizer::kBos);
  with_specials.push_back(ByteTokenizer::kEos);
  EXPECT_EQ(tok.decode(with_specials), text);
  EXPECT_EQ(tok.vocab_size(), 259);
}

TEST(SplitMix64, KnownSequence) {
  // Reference values of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
  SplitMix64 g(0);
  EXPECT_EQ(g.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(g.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(g.next(), 0x06C45D188009454FULL);
}

spec::DataSpec data_spec() {
  spec::DataSpec d;
  d.num_examples = 40;
  d.seq_len = 64;
  d.min_tokens = 10;
  d.max_tokens = 60;
  d.length_distribution = "uniform";
  d.prompt_fraction = 0.5;
  d.seed = 99;
  return d;
}

TEST(SyntheticDataset, LengthsFollowTheSpecExactly) {
  const ByteTokenizer tok;
  const spec::DataSpec d = data_spec();
  const SyntheticDataset ds(d, tok);
  ASSERT_EQ(ds.size(), 40);
  for (int64_t i = 0; i < ds.size(); ++i) {
    const Example& ex = ds.at(i);
    const int64_t n = static_cast<int64_t>(ex.tokens.size());
    EXPECT_EQ(n, synthetic_example_length(d, i));
    EXPECT_GE(n, 10);
    EXPECT_LE(n, 60);
    EXPECT_EQ(ex.tokens.front(), ByteTokenizer::kBos);
    EXPECT_EQ(ex.tokens.back(), ByteTokenizer::kEos);
    EXPECT_GT(ex.prompt_tokens, 1);
    EXPECT_LT(ex.prompt_tokens, n - 1);
  }
}

TEST(SyntheticDataset, DeterministicAndSeedDependent) {
  const ByteTokenizer tok;
  spec::DataSpec d = data_spec();
  const SyntheticDataset a(d, tok);
  const SyntheticDataset b(d, tok);
  d.seed = 100;
  const SyntheticDataset c(d, tok);
  int differing = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.at(i).tokens, b.at(i).tokens);
    if (a.at(i).tokens != c.at(i).tokens) ++differing;
  }
  EXPECT_GT(differing, 30);
}

TEST(SyntheticDataset, ResponseRepeatsThePromptWords) {
  const ByteTokenizer tok;
  spec::DataSpec d = data_spec();
  d.length_distribution = "fixed";
  d.max_tokens = 60;
  const SyntheticDataset ds(d, tok);
  const Example& ex = ds.at(0);
  const std::string prompt = tok.decode({ex.tokens.begin(), ex.tokens.begin() + ex.prompt_tokens});
  const std::string response = tok.decode({ex.tokens.begin() + ex.prompt_tokens, ex.tokens.end()});
  ASSERT_EQ(prompt.rfind("Repeat: ", 0), 0u) << prompt;
  EXPECT_EQ(prompt.substr(8, 10), response.substr(0, 10));
  EXPECT_EQ(static_cast<int64_t>(ex.tokens.size()), 60);
}

TEST(SyntheticDataset, LognormalLengthsClippedToRange) {
  spec::DataSpec d = data_spec();
  d.length_distribution = "lognormal";
  d.lognormal_median_tokens = 30.0;
  d.lognormal_sigma = 0.8;
  d.num_examples = 2000;
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < d.num_examples; ++i) lengths.push_back(synthetic_example_length(d, i));
  std::sort(lengths.begin(), lengths.end());
  EXPECT_GE(lengths.front(), 10);
  EXPECT_LE(lengths.back(), 60);
  // The median of a log-normal is its median parameter; 2,000 draws land within +-2 tokens.
  EXPECT_NEAR(double(lengths[1000]), 30.0, 2.0);
}

TEST(Batcher, PadsShiftsAndMasksTheLoss) {
  const ByteTokenizer tok;
  spec::DataSpec d = data_spec();
  d.num_examples = 6;
  const SyntheticDataset ds(d, tok);
  BatcherOptions o;
  o.micro_batch_size = 3;
  o.seq_len = 64;
  o.shuffle = false;
  o.pad_id = ByteTokenizer::kPad;
  Batcher b(ds, o, at::kCPU);
  EXPECT_EQ(b.batches_per_epoch(), 2);
  const MicroBatch mb = b.get(1, 1);
  int64_t longest = 0;
  int64_t real = 0;
  int64_t loss_tokens = 0;
  for (int64_t r = 0; r < 3; ++r) {
    const Example& ex = ds.at(3 + r);
    const int64_t n = static_cast<int64_t>(ex.tokens.size());
    longest = std::max(longest, n);
    real += n;
    loss_tokens += n - ex.prompt_tokens;
  }
  ASSERT_EQ(mb.input_ids.size(1), longest);
  EXPECT_EQ(mb.real_tokens, real);
  EXPECT_EQ(mb.padded_tokens, 3 * longest);
  EXPECT_EQ(mb.loss_tokens, loss_tokens);
  EXPECT_EQ(mb.labels.ne(-100).sum().item<int64_t>(), loss_tokens);
  ASSERT_EQ(mb.loss_positions.numel(), loss_tokens);
  EXPECT_TRUE(
      mb.labels.reshape({-1}).index_select(0, mb.loss_positions).ne(-100).all().item<bool>());
  const Example& ex = ds.at(3);
  const int64_t n = static_cast<int64_t>(ex.tokens.size());
  for (int64_t t = 0; t < longest; ++t) {
    const int64_t id = mb.input_ids[0][t].item<int64_t>();
    const int64_t label = mb.labels[0][t].item<int64_t>();
    EXPECT_EQ(id, t < n ? ex.tokens[t] : ByteTokenizer::kPad) << t;
    const bool has_label = t + 1 >= ex.prompt_tokens && t + 1 < n;
    EXPECT_EQ(label, has_label ? ex.tokens[t + 1] : -100) << t;
  }
}

TEST(Batcher, ShuffleIsADeterministicPermutationPerEpoch) {
  const ByteTokenizer tok;
  spec::DataSpec d = data_spec();
  d.num_examples = 8;
  const SyntheticDataset ds(d, tok);
  BatcherOptions o;
  o.micro_batch_size = 1;
  o.seq_len = 64;
  o.padding = Padding::kMaxLength;
  o.seed = 5;
  Batcher a(ds, o, at::kCPU);
  Batcher b(ds, o, at::kCPU);
  std::vector<int64_t> first_tokens_e1;
  std::vector<int64_t> first_tokens_e2;
  for (int64_t i = 0; i < 8; ++i) {
    const MicroBatch x = a.get(1, i);
    EXPECT_EQ(x.input_ids.size(1), 64);  // max_length padding
    EXPECT_TRUE(x.input_ids.equal(b.get(1, i).input_ids));
    first_tokens_e1.push_back(x.real_tokens);
  }
  for (int64_t i = 0; i < 8; ++i) first_tokens_e2.push_back(a.get(2, i).real_tokens);
  std::vector<int64_t> sorted1 = first_tokens_e1;
  std::vector<int64_t> sorted2 = first_tokens_e2;
  std::sort(sorted1.begin(), sorted1.end());
  std::sort(sorted2.begin(), sorted2.end());
  EXPECT_EQ(sorted1, sorted2);                  // same examples
  EXPECT_NE(first_tokens_e1, first_tokens_e2);  // another order
}

// Packing: whole examples per row in data set order, positions restarting, no label across an
// example boundary, the packed count per epoch, and a deterministic per-epoch order of rows.
TEST(Batcher, PackFillsRowsWithWholeExamples) {
  const ByteTokenizer tok;
  spec::DataSpec d = data_spec();  // 40 examples of 10..60 tokens
  d.num_examples = 40;
  const SyntheticDataset ds(d, tok);
  BatcherOptions o;
  o.micro_batch_size = 2;
  o.seq_len = 64;
  o.padding = Padding::kPack;
  o.seed = 3;
  o.pad_id = ByteTokenizer::kPad;
  Batcher b(ds, o, at::kCPU);
  // Greedy packing in data set order, written out independently.
  std::vector<std::vector<int64_t>> rows(1);
  int64_t used = 0;
  for (int64_t i = 0; i < ds.size(); ++i) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(ds.at(i).tokens.size()), 64);
    if (used > 0 && used + n > 64) {
      rows.emplace_back();
      used = 0;
    }
    rows.back().push_back(i);
    used += n;
  }
  EXPECT_EQ(b.rows_per_epoch(), static_cast<int64_t>(rows.size()));
  EXPECT_EQ(b.batches_per_epoch(), static_cast<int64_t>(rows.size()) / 2);
  EXPECT_LT(b.batches_per_epoch(), 20);  // fewer micro-batches than one example per row
  EXPECT_THROW(b.get(1, b.batches_per_epoch()), std::out_of_range);

  std::vector<int> seen(static_cast<size_t>(ds.size()), 0);
  int64_t examples = 0;
  for (int64_t i = 0; i < b.batches_per_epoch(); ++i) {
    const MicroBatch mb = b.get(1, i);
    ASSERT_EQ(mb.input_ids.size(0), 2);
    ASSERT_EQ(mb.input_ids.size(1), 64);
    ASSERT_TRUE(mb.position_ids.defined());
    ASSERT_TRUE(mb.segment_ids.defined());
    EXPECT_EQ(mb.padded_tokens, 128);
    examples += mb.examples;
    int64_t real = 0;
    int64_t loss_tokens = 0;
    for (int64_t r = 0; r < 2; ++r) {
      // Identify the row by its first example, then check every token of every example.
      int64_t first = -1;
      for (const auto& row : rows) {
        const Example& ex = ds.at(row.front());
        bool match = true;
        for (int64_t t = 0; t < static_cast<int64_t>(ex.tokens.size()) && t < 64; ++t) {
          match = match && mb.input_ids[r][t].item<int64_t>() == ex.tokens[t];
        }
        if (match) first = &row - rows.data();
        if (match) break;
      }
      ASSERT_GE(first, 0);
      int64_t off = 0;
      int64_t segment = 0;
      for (int64_t idx : rows[static_cast<size_t>(first)]) {
        ++seen[static_cast<size_t>(idx)];
        const Example& ex = ds.at(idx);
        const int64_t n = static_cast<int64_t>(ex.tokens.size());
        for (int64_t t = 0; t < n; ++t) {
          EXPECT_EQ(mb.input_ids[r][off + t].item<int64_t>(), ex.tokens[t]);
          EXPECT_EQ(mb.position_ids[r][off + t].item<int64_t>(), t);  // restarts at 0
          EXPECT_EQ(mb.segment_ids[r][off + t].item<int64_t>(), segment);
          const bool has_label = t + 1 >= ex.prompt_tokens && t + 1 < n;
          EXPECT_EQ(mb.labels[r][off + t].item<int64_t>(), has_label ? ex.tokens[t + 1] : -100);
          if (has_label) ++loss_tokens;
        }
        // The last token of an example never predicts the next example's first token.
        EXPECT_EQ(mb.labels[r][off + n - 1].item<int64_t>(), -100);
        off += n;
        ++segment;
      }
      real += off;
      for (int64_t t = off; t < 64; ++t) {  // padding: its own segment, no label
        EXPECT_EQ(mb.input_ids[r][t].item<int64_t>(), ByteTokenizer::kPad);
        EXPECT_EQ(mb.labels[r][t].item<int64_t>(), -100);
        EXPECT_EQ(mb.segment_ids[r][t].item<int64_t>(), segment);
        EXPECT_LT(mb.position_ids[r][t].item<int64_t>(), 64);
      }
    }
    EXPECT_EQ(mb.real_tokens, real);
    EXPECT_EQ(mb.loss_tokens, loss_tokens);
    ASSERT_EQ(mb.loss_positions.numel(), loss_tokens);
    EXPECT_TRUE(
        mb.labels.reshape({-1}).index_select(0, mb.loss_positions).ne(-100).all().item<bool>());
  }
  // Each example at most once an epoch (a last partial micro-batch of rows is dropped).
  int64_t total_seen = 0;
  for (int c : seen) {
    EXPECT_LE(c, 1);
    total_seen += c;
  }
  EXPECT_EQ(total_seen, examples);

  // Determinism: the same rows in the same order from another batcher; another order in
  // epoch 2 (the rows themselves are packed once).
  Batcher again(ds, o, at::kCPU);
  bool epochs_differ = false;
  for (int64_t i = 0; i < b.batches_per_epoch(); ++i) {
    const MicroBatch x = b.get(1, i);
    const MicroBatch y = again.get(1, i);
    EXPECT_TRUE(x.input_ids.equal(y.input_ids));
    EXPECT_TRUE(x.labels.equal(y.labels));
    EXPECT_TRUE(x.position_ids.equal(y.position_ids));
    EXPECT_TRUE(x.segment_ids.equal(y.segment_ids));
    epochs_differ = epochs_differ || !x.input_ids.equal(b.get(2, i).input_ids);
  }
  EXPECT_TRUE(epochs_differ);
}

TEST(Batcher, PackTruncatesLongExamplesAndLeavesUnpackedBatchesAlone) {
  const ByteTokenizer tok;
  spec::DataSpec d = data_spec();
  d.num_examples = 6;
  d.min_tokens = 40;
  d.max_tokens = 60;
  const SyntheticDataset ds(d, tok);
  BatcherOptions o;
  o.micro_batch_size = 1;
  o.seq_len = 32;  // every example is longer: one truncated example per row
  o.padding = Padding::kPack;
  o.shuffle = false;
  Batcher b(ds, o, at::kCPU);
  EXPECT_EQ(b.batches_per_epoch(), 6);
  for (int64_t i = 0; i < 6; ++i) {
    const MicroBatch mb = b.get(1, i);
    EXPECT_EQ(mb.real_tokens, 32);
    EXPECT_EQ(mb.examples, 1);
    EXPECT_TRUE(mb.position_ids.equal(at::arange(32, at::kLong).unsqueeze(0)));
    EXPECT_EQ(mb.segment_ids.max().item<int64_t>(), 0);
    EXPECT_EQ(mb.labels[0][31].item<int64_t>(), -100);
  }
  o.padding = Padding::kLongest;
  Batcher plain(ds, o, at::kCPU);
  const MicroBatch mb = plain.get(1, 0);
  EXPECT_FALSE(mb.position_ids.defined());
  EXPECT_FALSE(mb.segment_ids.defined());
}

// The out-of-memory fallback halves the micro-batch and doubles the accumulation: the step's
// micro-batches at the smaller size must hold exactly the rows of its micro-batches at the
// larger one, in the same order, with every padding (max_length, so rows compare as tensors),
// packing included, and in later epochs too.
TEST(Batcher, ASmallerMicroBatchSplitsTheSameRows) {
  const ByteTokenizer tok;
  const SyntheticDataset ds(data_spec(), tok);  // 40 examples
  for (const Padding padding : {Padding::kMaxLength, Padding::kPack}) {
    BatcherOptions o;
    o.micro_batch_size = 4;
    o.seq_len = 64;
    o.padding = padding;
    o.seed = 11;
    o.pad_id = tok.pad_id();
    Batcher four(ds, o, at::kCPU);
    Batcher split(ds, o, at::kCPU);
    const int64_t batches_at_four = four.batches_per_epoch();
    split.set_micro_batch_size(2);
    EXPECT_EQ(split.micro_batch_size(), 2);
    EXPECT_EQ(split.batches_per_epoch(), four.rows_per_epoch() / 2);
    EXPECT_GE(split.batches_per_epoch(), 2 * batches_at_four);
    for (int64_t epoch = 1; epoch <= 2; ++epoch) {
      for (int64_t i = 0; i < batches_at_four; ++i) {
        const MicroBatch whole = four.get(epoch, i);
        const MicroBatch first = split.get(epoch, 2 * i);
        const MicroBatch second = split.get(epoch, 2 * i + 1);
        EXPECT_TRUE(at::equal(whole.input_ids, at::cat({first.input_ids, second.input_ids})))
            << epoch << "/" << i;
        EXPECT_TRUE(at::equal(whole.labels, at::cat({first.labels, second.labels})));
        EXPECT_EQ(whole.real_tokens, first.real_tokens + second.real_tokens);
        EXPECT_EQ(whole.loss_tokens, first.loss_tokens + second.loss_tokens);
        EXPECT_EQ(whole.examples, first.examples + second.examples);
      }
    }
  }
  Batcher b(ds, BatcherOptions{}, at::kCPU);
  EXPECT_THROW(b.set_micro_batch_size(0), std::invalid_argument);
}

// The prefetcher hands out exactly what the batcher builds, in the order asked, and passes an
// error of the background thread on to the caller.
// Data parallel: steps 3 to 6 of 5 an epoch, 4 micro-batches each over 2 ranks: rank 0 takes the
// first two of each step, rank 1 the last two; together the one-process order, in each step.
TEST(StepOrder, RanksTakeConsecutiveDisjointSharesOfEachStep) {
  const StepOrder whole{3, 7, 5, 4};
  StepOrder r0 = whole;
  r0.ranks = 2;
  StepOrder r1 = r0;
  r1.rank = 1;
  ASSERT_EQ(r0.size(), 8);
  ASSERT_EQ(r1.size(), 8);
  const std::vector<std::pair<int64_t, int64_t>> rank0 = {{1, 12}, {1, 13}, {1, 16}, {1, 17},
                                                          {2, 0},  {2, 1},  {2, 4},  {2, 5}};
  const std::vector<std::pair<int64_t, int64_t>> rank1 = {{1, 14}, {1, 15}, {1, 18}, {1, 19},
                                                          {2, 2},  {2, 3},  {2, 6},  {2, 7}};
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(r0.at(i), rank0[size_t(i)]) << i;
    EXPECT_EQ(r1.at(i), rank1[size_t(i)]) << i;
  }
  for (int64_t step = 0; step < 4; ++step) {
    for (int64_t j = 0; j < 4; ++j) {
      const StepOrder& r = j < 2 ? r0 : r1;
      EXPECT_EQ(whole.at(step * 4 + j), r.at(step * 2 + j % 2)) << step << "/" << j;
    }
  }
}

TEST(Prefetcher, GivesTheBatchersMicroBatchesInOrder) {
  const ByteTokenizer tok;
  const SyntheticDataset ds(data_spec(), tok);
  BatcherOptions o;
  o.micro_batch_size = 4;
  o.seq_len = 64;
  o.seed = 3;
  o.pad_id = tok.pad_id();
  Batcher direct(ds, o, at::kCPU);
  Batcher prefetched(ds, o, at::kCPU);
  // Steps 3 to 6 of 5 an epoch, 2 micro-batches each: the last two steps of epoch 1, the first
  // two of epoch 2.
  const StepOrder steps{3, 7, 5, 2};
  const std::vector<std::pair<int64_t, int64_t>> order = {{1, 6}, {1, 7}, {1, 8}, {1, 9},
                                                          {2, 0}, {2, 1}, {2, 2}, {2, 3}};
  ASSERT_EQ(steps.size(), 8);
  for (int64_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps.at(i), order[size_t(i)]) << i;
  Prefetcher prefetcher(prefetched, steps, 2);
  for (const auto& [epoch, index] : order) {
    const MicroBatch a = direct.get(epoch, index);
    const MicroBatch b = prefetcher.next();
    EXPECT_TRUE(at::equal(a.input_ids, b.input_ids)) << epoch << "/" << index;
    EXPECT_TRUE(at::equal(a.labels, b.labels));
    EXPECT_EQ(a.loss_tokens, b.loss_tokens);
  }
  EXPECT_THROW(prefetcher.next(), std::out_of_range);

  // Micro-batch 10 does not exist (40 examples / 4): with 6 steps an epoch, step 5 asks for it.
  // The error reaches next() after the valid ones, and a prefetcher destroyed with batches
  // still queued stops cleanly.
  Batcher failing(ds, o, at::kCPU);
  Prefetcher bad(failing, StepOrder{4, 6, 6, 2}, 1);
  EXPECT_NO_THROW(bad.next());
  EXPECT_NO_THROW(bad.next());
  EXPECT_THROW(bad.next(), std::out_of_range);
  Batcher unused(ds, o, at::kCPU);
  { Prefetcher abandoned(unused, StepOrder{0, 3, 5, 1}, 3); }
}

}  // namespace
}  // namespace ftbench::data
