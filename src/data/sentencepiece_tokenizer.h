// SentencePiece .model files (Llama 2), through Debian's libsentencepiece. Unigram models are
// segmented by ftbench itself, on the library's normalized text, as SentencePiece 0.2.2 and
// later (PyPI's) do it: earlier releases, Debian's 0.1.97 among them, break ties between
// equal-scoring paths and score user-defined symbols differently (src/data/spm/
// sentencepiece_backend.cpp, UnigramSegmenter).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "data/tokenizer.h"

namespace ftbench::data {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Throws TokenizerError naming the file when it cannot be read or is not a SentencePiece model.
  static std::unique_ptr<SentencePieceTokenizer> from_file(const std::string& path);
  // The same for the bytes of a .model file, named `path` in messages: checked by
  // check_sentencepiece_model (sentencepiece_model.h) before SentencePiece parses them, and the
  // special ids the library then answers checked against the pieces.
  static std::unique_ptr<SentencePieceTokenizer> from_serialized(std::string_view model,
                                                                 const std::string& path);
  ~SentencePieceTokenizer() override;

  std::string name() const override;
  // Control symbols (<s>, </s>) written in the text are not special here (SentencePiece treats
  // text as text); user-defined symbols of the model are matched as single ids.
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;
  // The model's pad id, or its unk id when it has none (Llama 2 has none).
  int32_t pad_id() const override;
  std::optional<int32_t> token_id(std::string_view token) const override;

 private:
  struct Impl;
  explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ftbench::data
