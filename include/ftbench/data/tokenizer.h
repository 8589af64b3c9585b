// Tokenizer interface. Implementations: ByteTokenizer now; Hugging Face tokenizer.json BPE and
// SentencePiece later, behind the same interface.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ftbench::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;
  // Ids of `text` without special tokens.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  virtual int32_t pad_id() const = 0;
};

}  // namespace ftbench::data
