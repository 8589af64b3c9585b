// The stand-in tokenizer of pre-tokenized data (data.format: tokenized, data.tokenizer: none):
// the ids are given, so nothing is encoded; ids are checked against the model's vocabulary.
#pragma once

#include "data/tokenizer.h"

namespace ftbench::data {

class PretokenizedIds final : public Tokenizer {
 public:
  // `vocab_size`: the model's embedding rows (model.vocab_size).
  explicit PretokenizedIds(int64_t vocab_size) : vocab_size_(vocab_size) {}

  std::string name() const override { return "none (pre-tokenized ids)"; }
  // Throws TokenizerError: there is no tokenizer to encode text with.
  std::vector<int32_t> encode(std::string_view text) const override;
  // The ids as numbers ("[1, 2, 3]"): there is no vocabulary to decode with.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return -1; }
  // Padding positions are masked out of attention and loss: any id in the vocabulary serves.
  int32_t pad_id() const override { return 0; }
  std::optional<int32_t> token_id(std::string_view) const override { return std::nullopt; }

 private:
  int64_t vocab_size_;
};

}  // namespace ftbench::data
