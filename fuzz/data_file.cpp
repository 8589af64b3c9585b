// Fuzz target: the training-data reader (data::FileDataset::from_text: JSON lines or a JSON
// array of Alpaca, chat, text or pre-tokenized records, each turned into an Example). Input: one
// byte of options, then the file's content. The options byte: bits 0-2 the format (0 auto,
// 1 alpaca, 2 chat, 3 text, 4 tokenized, 5-7 auto), bit 3 on_error skip, bit 4 too_long drop,
// bit 5 train_on_input, bit 6 the plain byte tokenizer (no chat tokens, no BOS rule), bit 7
// max_tokens 8 and max_examples 2 of a random subset.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/byte_tokenizer.h"
#include "data/file_dataset.h"
#include "fuzz_target.h"

namespace {

// The byte tokenizer with Llama 3's chat tokens, so that chat records are read too.
class ChatByteTokenizer final : public ftbench::data::Tokenizer {
 public:
  std::string name() const override { return "chat-bytes"; }
  std::vector<int32_t> encode(std::string_view text) const override { return bytes_.encode(text); }
  std::string decode(const std::vector<int32_t>& ids) const override { return bytes_.decode(ids); }
  int64_t vocab_size() const override { return 262; }
  int32_t bos_id() const override { return bytes_.bos_id(); }
  int32_t eos_id() const override { return bytes_.eos_id(); }
  int32_t pad_id() const override { return bytes_.pad_id(); }
  std::optional<int32_t> token_id(std::string_view token) const override {
    if (token == "<|start_header_id|>") return 259;
    if (token == "<|end_header_id|>") return 260;
    if (token == "<|eot_id|>") return 261;
    return bytes_.token_id(token);
  }

 private:
  ftbench::data::ByteTokenizer bytes_;
};

}  // namespace

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace d = ftbench::data;
  if (size == 0) return FuzzVerdict::kRejected;
  const uint8_t bits = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  static const char* const kFormats[] = {"auto",      "alpaca", "chat", "text",
                                         "tokenized", "auto",   "auto", "auto"};
  d::DataFileOptions options;
  options.path = "fuzz.jsonl";
  options.format = kFormats[bits & 7];
  options.on_error = (bits & 8) != 0 ? "skip" : "fail";
  options.too_long = (bits & 16) != 0 ? "drop" : "truncate";
  options.train_on_input = (bits & 32) != 0;
  if ((bits & 128) != 0) {
    options.max_tokens = 8;
    options.max_examples = 2;
    options.subset = "random";
  }
  const ChatByteTokenizer chat_tokenizer;
  const d::ByteTokenizer byte_tokenizer;
  const d::Tokenizer& tokenizer =
      (bits & 64) != 0 ? static_cast<const d::Tokenizer&>(byte_tokenizer) : chat_tokenizer;
  try {
    const std::unique_ptr<d::FileDataset> dataset =
        d::FileDataset::from_text(text, options, tokenizer);
    for (int64_t i = 0; i < dataset->size(); ++i) dataset->at(i);
    dataset->description();
  } catch (const d::DataError&) {
    return FuzzVerdict::kRejected;
  }
  return FuzzVerdict::kAccepted;
}
