// Byte-level tokenizer: ids 0-255 are the bytes of the UTF-8 text, then BOS, EOS, PAD.
#pragma once

#include "data/tokenizer.h"

namespace ftbench::data {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kBos = 256;
  static constexpr int32_t kEos = 257;
  static constexpr int32_t kPad = 258;
  static constexpr int64_t kVocabSize = 259;

  std::string name() const override { return "byte"; }
  std::vector<int32_t> encode(std::string_view text) const override;
  // Special ids decode to nothing.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override { return kVocabSize; }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  int32_t pad_id() const override { return kPad; }
  // Single bytes ("a") and nothing else: the byte tokenizer has no named special tokens.
  std::optional<int32_t> token_id(std::string_view token) const override;
};

}  // namespace ftbench::data
