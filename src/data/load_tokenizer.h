// Picks a tokenizer from the spec's data.tokenizer value.
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer.h"

namespace ftbench::data {

// "byte" -> ByteTokenizer; a path ending in .model -> SentencePieceTokenizer; a tokenizer.json
// file or a folder holding one -> HfTokenizer. Throws TokenizerError naming the path otherwise.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

// BOS, EOS and PAD by text and id, and whether examples start with BOS, e.g.
// "BOS <|begin_of_text|> = 128000 (starts each example), EOS <|eot_id|> = 128009, PAD = EOS".
std::string describe_special_tokens(const Tokenizer& tokenizer);

}  // namespace ftbench::data
