// Fuzz target: a SentencePiece .model file (data::check_sentencepiece_model, what
// SentencePieceTokenizer::from_file runs before libsentencepiece parses the file; issue 39),
// then, for an accepted model, the library itself through ftbench's module
// (libftbench_spm.so): it loads the model, encodes texts whose bytes walk the normalizer's
// trie (every byte value, the characters that NFKC rules map, invalid UTF-8), and decodes. The
// checks' promise is that the library never reads outside an accepted model, and every id it
// gives back must be one of the model's pieces.
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "data/sentencepiece_tokenizer.h"
#include "fuzz_target.h"

namespace {

std::vector<std::string> texts() {
  std::string every_byte;
  for (int byte = 1; byte < 256; ++byte) {
    every_byte.push_back(static_cast<char>(byte));
    every_byte.push_back('A');
  }
  return {
      "A cat \xEF\xBC\xA1\xE3\x80\x80x AAA",  // "A cat Ａ　x AAA": the seed's three rules
      "Hello w\xC3\xB6rld \xEF\xBC\xA1\xEF\xBC\xA2 \xE2\x91\xA0 caf\xC3\xA9 \xE6\x9D\xB1 "
      "\xEF\xAC\x81",
      every_byte,
      std::string("nul\0inside", 10),
  };
}

}  // namespace

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace fd = ftbench::data;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<fd::SentencePieceTokenizer> tokenizer;
  try {
    tokenizer = fd::SentencePieceTokenizer::from_serialized(bytes, "fuzz.model");
  } catch (const fd::TokenizerError&) {
    return FuzzVerdict::kRejected;
  }
  const int64_t pieces = tokenizer->vocab_size();
  for (const std::string& text : texts()) {
    std::vector<int32_t> ids;
    try {
      ids = tokenizer->encode(text);
    } catch (const fd::TokenizerError&) {
      return FuzzVerdict::kRejected;  // the library's own error status, or an id refused
    }
    for (const int32_t id : ids) {
      if (id < 0 || id >= pieces) {
        throw std::logic_error("an accepted model encoded to id " + std::to_string(id) +
                               " outside its pieces");
      }
    }
    ids.push_back(tokenizer->bos_id());
    ids.push_back(tokenizer->eos_id());
    try {
      tokenizer->decode(ids);
    } catch (const fd::TokenizerError&) {
      return FuzzVerdict::kRejected;
    }
  }
  return FuzzVerdict::kAccepted;
}
