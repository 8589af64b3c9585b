#include "ftbench/data/load_tokenizer.h"

#include <filesystem>

#include <fmt/format.h>

#include "ftbench/data/byte_tokenizer.h"
#include "ftbench/data/hf_tokenizer.h"
#include "ftbench/data/sentencepiece_tokenizer.h"

namespace ftbench::data {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  if (ends_with(spec, ".model")) return SentencePieceTokenizer::from_file(spec);
  std::error_code ec;
  if (!std::filesystem::exists(spec, ec)) {
    throw TokenizerError(fmt::format(
        "{}: no such file or folder (expected \"byte\", a tokenizer.json file or a folder holding "
        "one, or a SentencePiece .model file)",
        spec));
  }
  return HfTokenizer::from_file(spec);
}

}  // namespace ftbench::data
