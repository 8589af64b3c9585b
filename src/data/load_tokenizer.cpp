#include "data/load_tokenizer.h"

#include <filesystem>

#include <fmt/format.h>

#include "data/byte_tokenizer.h"
#include "data/hf_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "spec/choices.h"

namespace ftbench::data {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
  if (spec == ftbench::spec::choice::tokenizer::kByte) return std::make_unique<ByteTokenizer>();
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

std::string describe_special_tokens(const Tokenizer& tokenizer) {
  const auto token = [&](const char* what, int32_t id) {
    if (id < 0) return fmt::format("{} none", what);
    return fmt::format("{} {} = {}", what, tokenizer.decode({id}), id);
  };
  std::string out = token("BOS", tokenizer.bos_id());
  if (tokenizer.bos_id() >= 0)
    out += tokenizer.adds_bos() ? " (starts each example)" : " (not added)";
  out += ", " + token("EOS", tokenizer.eos_id());
  if (tokenizer.pad_id() >= 0 && tokenizer.pad_id() == tokenizer.eos_id()) {
    out += ", PAD = EOS";
  } else {
    out += ", " + token("PAD", tokenizer.pad_id());
  }
  return out;
}

}  // namespace ftbench::data
