// Hugging Face tokenizer.json: byte-level BPE as GPT-2 and Llama 3 use it.
//
// Supported (anything else is a TokenizerError naming the key): model.type "BPE" with vocab and
// merges (["a b", ...] or [["a", "b"], ...]; the vocab holds all 256 byte-level symbols),
// ignore_merges, byte_fallback false; normalizer null; pre_tokenizer ByteLevel (add_prefix_space,
// use_regex) or a Sequence of Split (Regex or String pattern, behavior Isolated / Removed, invert
// false) and ByteLevel(use_regex false); decoder ByteLevel; added_tokens (special or not, lstrip
// and rstrip honoured, single_word false) matched in the text before pre-tokenization, longest
// first; post_processor ignored (callers add BOS/EOS). Regexes run through PCRE2 with UTF and
// UCP, so \p{L}, \p{N} and look-ahead work as in the Rust tokenizers crate (onig/fancy-regex).
// BOS/EOS/PAD come from tokenizer_config.json next to the file when present (bos_token,
// eos_token, pad_token), else from well-known added tokens (<|begin_of_text|>, <|end_of_text|>,
// <s>, </s>, <|endoftext|>); PAD defaults to EOS; an id none of these gives is -1. Whether
// examples start with BOS (adds_bos): tokenizer_config.json's add_bos_token when it has one,
// else whether the post_processor (TemplateProcessing, alone or in a Sequence, or
// RobertaProcessing) puts a special token before the text, as Llama 3's "<|begin_of_text|> $A"
// does; GPT-2's ByteLevel post-processor adds none. That token is then the BOS.
// encode throws TokenizerError naming the byte offset when the text is not valid UTF-8 (the Rust
// crate takes str, so it never sees such text). decode returns the raw bytes (a cut multi-byte
// character stays cut, not U+FFFD) and skips ids that name no token. Thread-safe: encode caches
// BPE results per pre-token behind a shared mutex.
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer.h"

namespace ftbench::data {

class HfTokenizer final : public Tokenizer {
 public:
  // `path`: a tokenizer.json file, or a folder holding one (and maybe tokenizer_config.json).
  static std::unique_ptr<HfTokenizer> from_file(const std::string& path);
  // From the JSON texts; `config_json` may be empty. `source` names them in messages.
  static std::unique_ptr<HfTokenizer> from_json(const std::string& tokenizer_json,
                                                const std::string& config_json,
                                                const std::string& source);
  ~HfTokenizer() override;

  std::string name() const override;
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;
  int32_t pad_id() const override;
  bool adds_bos() const override;
  std::optional<int32_t> token_id(std::string_view token) const override;

 private:
  struct Impl;
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ftbench::data
