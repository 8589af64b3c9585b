#include "data/fingerprint.h"

#include <gtest/gtest.h>

#include "data/byte_tokenizer.h"
#include "data/synthetic_dataset.h"
#include "data/torch/batcher.h"

namespace ftbench::data {
namespace {

class TwoExamples : public Dataset {
 public:
  TwoExamples() { examples_ = {{{257, 10, 11, 12, 258}, 2, {}}, {{257, 300, 258}, 1, {}}}; }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  const Example& at(int64_t i) const override { return examples_[static_cast<size_t>(i)]; }
  std::string description() const override { return "two examples"; }

 private:
  std::vector<Example> examples_;
};

// Expected digests from Python's hashlib over the documented layout (docs/report-schema.md,
// `data.fingerprint`): per example struct.pack('<qq', count, loss_start) + '<i' per token.
TEST(DataFingerprint, MatchesTheDocumentedByteLayout) {
  const TwoExamples ds;
  const DataStats masked = fingerprint(ds, /*train_on_input=*/false);
  EXPECT_EQ(masked.fingerprint, "8ed82514c9102845f6f3776d3cc267358cdcae5b93348e5ab6c9747b3ac1327e");
  EXPECT_EQ(masked.examples, 2);
  EXPECT_EQ(masked.tokens, 8);
  EXPECT_EQ(masked.loss_tokens, (5 - 2) + (3 - 1));
  const DataStats all = fingerprint(ds, /*train_on_input=*/true);
  EXPECT_EQ(all.fingerprint, "d72effdab328406475c8f6d0cea24fcbf4b4162d61952c40dd97d5bb325732da");
  EXPECT_EQ(all.loss_tokens, (5 - 1) + (3 - 1));
}

class OneMaskedExample : public Dataset {
 public:
  int64_t size() const override { return 1; }
  const Example& at(int64_t) const override { return example_; }
  std::string description() const override { return "one masked example"; }

 private:
  Example example_{{257, 10, 11, 12, 258}, 0, {0, 0, 1, 0, 1}};
};

// A per-token loss mask is hashed as -1 then the mask bytes (Python hashlib over
// struct.pack('<qq', 5, -1) + bytes(mask) + '<i' per token). train_on_input does not apply to it.
TEST(DataFingerprint, HashesAPerTokenLossMask) {
  const OneMaskedExample ds;
  for (const bool train_on_input : {false, true}) {
    const DataStats stats = fingerprint(ds, train_on_input);
    EXPECT_EQ(stats.fingerprint,
              "f4de0c433039993d9d952702c366c547fe6e6cc5c0fae81d0649f3a7fba0ed86");
    EXPECT_EQ(stats.loss_tokens, 2);
  }
}

// The batcher takes labels exactly where the mask says: positions 1 and 3 predict tokens 2 and 4.
TEST(DataFingerprint, BatcherFollowsTheLossMask) {
  const OneMaskedExample ds;
  BatcherOptions o;
  o.micro_batch_size = 1;
  o.seq_len = 8;
  o.shuffle = false;
  o.pad_id = 0;
  Batcher batcher(ds, o, at::kCPU);
  const MicroBatch mb = batcher.get(1, 0);
  EXPECT_EQ(mb.loss_tokens, 2);
  const at::Tensor labels = mb.labels.flatten();
  const std::vector<int64_t> got(labels.data_ptr<int64_t>(),
                                 labels.data_ptr<int64_t>() + labels.numel());
  EXPECT_EQ(got, (std::vector<int64_t>{-100, 11, -100, 258, -100}));
}

// The loss-token count is what the batcher trains on over one epoch.
TEST(DataFingerprint, LossTokensAgreeWithTheBatcher) {
  const ByteTokenizer tok;
  spec::DataSpec d;
  d.num_examples = 24;
  d.seq_len = 64;
  d.min_tokens = 10;
  d.max_tokens = 60;
  d.seed = 5;
  for (const bool train_on_input : {false, true}) {
    d.train_on_input = train_on_input;
    const SyntheticDataset ds(d, tok);
    BatcherOptions o;
    o.micro_batch_size = 4;
    o.seq_len = d.seq_len;
    o.train_on_input = train_on_input;
    o.seed = 1;
    Batcher batcher(ds, o, at::kCPU);
    int64_t loss_tokens = 0;
    int64_t real_tokens = 0;
    for (int64_t i = 0; i < batcher.batches_per_epoch(); ++i) {
      const MicroBatch mb = batcher.get(1, i);
      loss_tokens += mb.loss_tokens;
      real_tokens += mb.real_tokens;
    }
    const DataStats stats = fingerprint(ds, train_on_input);
    EXPECT_EQ(stats.loss_tokens, loss_tokens) << train_on_input;
    EXPECT_EQ(stats.tokens, real_tokens) << train_on_input;
  }
  // The mask is part of the data: the same tokens trained on the prompt hash differently.
  d.train_on_input = false;
  const SyntheticDataset ds(d, tok);
  EXPECT_NE(fingerprint(ds, false).fingerprint, fingerprint(ds, true).fingerprint);
}

}  // namespace
}  // namespace ftbench::data
