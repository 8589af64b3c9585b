// Tokenizer interface. Implementations: ByteTokenizer (no files), HfTokenizer (Hugging Face
// tokenizer.json, byte-level BPE as Llama 3 uses it) and SentencePieceTokenizer (.model, Llama 2).
// load_tokenizer() (data/load_tokenizer.h) picks one from a spec value or a path.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace ftbench::data {

// A tokenizer file that cannot be used: the message names the file, the key or position, what
// was expected and what was found.
class TokenizerError : public BadInput {
 public:
  using BadInput::BadInput;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // "byte", or what the file says it is, e.g. "tokenizer.json BPE (128256 tokens)".
  virtual std::string name() const = 0;
  // Ids of `text`. Added and special tokens written in the text ("<|eot_id|>") become their
  // single ids where the tokenizer has them, as Hugging Face's encode does; no BOS or EOS is
  // added: callers add them (see bos_id, eos_id). Thread-safe (const).
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Text of `ids`; special tokens as their text where the tokenizer has one.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  virtual int32_t pad_id() const = 0;
  // Whether a training example starts with BOS, by the tokenizer's own rule (a tokenizer.json's
  // post-processor or tokenizer_config.json's add_bos_token); true implies bos_id() >= 0.
  virtual bool adds_bos() const { return bos_id() >= 0; }
  // The id of a token by its exact text (special tokens included: "<|eot_id|>"); nullopt when
  // the vocabulary has no such token.
  virtual std::optional<int32_t> token_id(std::string_view token) const = 0;
};

}  // namespace ftbench::data
