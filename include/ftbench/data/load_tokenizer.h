// Picks a tokenizer from the spec's data.tokenizer value.
#pragma once

#include <memory>
#include <string>

#include "ftbench/data/tokenizer.h"

namespace ftbench::data {

// "byte" -> ByteTokenizer; a path ending in .model -> SentencePieceTokenizer; a tokenizer.json
// file or a folder holding one -> HfTokenizer. Throws TokenizerError naming the path otherwise.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

}  // namespace ftbench::data
