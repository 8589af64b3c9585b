#include "data/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "model_proto_writer.h"

namespace ftbench::data {
namespace {

using test::bytes_field;
using test::charsmap;
using test::leaf_unit;
using test::one_rule_trie;
using test::piece_field;
using test::varint_field;

namespace fs = std::filesystem;

// Byte fallback alone takes 256 pieces; the unigram trainer finds at most ~390 on this text.
constexpr int kVocabSize = 360;

// A few hundred lines of English, French, German, Spanish, Russian, Japanese and Chinese words,
// picked by a fixed linear congruential generator. No emoji: they must go through byte fallback.
std::string training_text() {
  const std::vector<std::string> words = {
      "the",     "the",     "the",   "and",        "of",     "to",       "model",    "token",
      "there",   "then",    "other", "quick",      "brown",  "fox",      "jumps",    "over",
      "lazy",    "dog",     "café",  "crème",      "brûlée", "à",        "la",       "française",
      "été",     "naïve",   "Größe", "über",       "Straße", "schön",    "mañana",   "niño",
      "año",     "привет",  "мир",   "язык",       "日本語", "の",       "テキスト", "です",
      "東京",    "中文",    "文本",  "模型",       "数据",   "训练",     "12345",    "2024",
      "tokens,", "models.", "(the)", "\"quoted\"", "it's",   "self-test"};
  std::string text;
  uint64_t state = 12345;
  for (int line = 0; line < 400; ++line) {
    const int length = 4 + line % 9;
    for (int w = 0; w < length; ++w) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      if (w > 0) text += ' ';
      text += words[(state >> 33) % words.size()];
    }
    text += '\n';
  }
  return text;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Tiny models trained in a temporary folder (each on first use, once per test process), with
// Llama 2's special ids, byte fallback and normalization (identity, whitespace kept); one thread,
// no shuffling. The BPE model has Llama 2's layout (<unk> <s> </s>, then <0x00>..<0xFF>); the
// unigram one also has a user-defined symbol, <|sep|>, which takes id 3 and moves the byte
// pieces up by one.
class TrainedModels {
 public:
  TrainedModels() {
    std::string pattern = (fs::temp_directory_path() / "ftbench-spm-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    write_bytes(dir_ / "corpus.txt", training_text());
  }
  ~TrainedModels() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  TrainedModels(const TrainedModels&) = delete;
  TrainedModels& operator=(const TrainedModels&) = delete;

  const fs::path& dir() const { return dir_; }

  // Path of the "bpe" or "unigram" model.
  std::string model(const std::string& type) {
    const fs::path path = dir_ / (type + ".model");
    if (fs::exists(path)) return path.string();
    std::string args = "--input=" + (dir_ / "corpus.txt").string() +
                       " --model_prefix=" + (dir_ / type).string() + " --model_type=" + type +
                       " --vocab_size=" + std::to_string(kVocabSize) +
                       " --bos_id=1 --eos_id=2 --unk_id=0 --pad_id=-1 --byte_fallback=true"
                       " --normalization_rule_name=identity --remove_extra_whitespaces=false"
                       " --add_dummy_prefix=true --split_digits=true"
                       " --allow_whitespace_only_pieces=true --character_coverage=1.0"
                       " --num_threads=1 --input_sentence_size=100000"
                       " --shuffle_input_sentence=false --minloglevel=2";
    if (type == "unigram") args += " --user_defined_symbols=<|sep|>";
    const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args);
    if (!status.ok()) throw std::runtime_error("training failed: " + status.ToString());
    return path.string();
  }

 private:
  fs::path dir_;
};

TrainedModels& models() {
  static TrainedModels trained;
  return trained;
}

// The message of the TokenizerError that loading `path` throws; fails the test when none is.
std::string load_error(const std::string& path) {
  try {
    SentencePieceTokenizer::from_file(path);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TokenizerError for " << path;
  return "";
}

class SentencePieceModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Id of the byte piece <0x00>.
  int32_t first_byte_id() const { return GetParam() == "bpe" ? 3 : 4; }
  void SetUp() override {
    path_ = models().model(GetParam());
    tok_ = SentencePieceTokenizer::from_file(path_);
  }
  std::string path_;
  std::unique_ptr<SentencePieceTokenizer> tok_;
};

TEST_P(SentencePieceModelTest, HasLlama2SpecialIdsAndName) {
  EXPECT_EQ(tok_->vocab_size(), kVocabSize);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_EQ(tok_->pad_id(), 0);  // no pad piece: falls back to <unk>
  EXPECT_EQ(tok_->token_id("<unk>"), 0);
  EXPECT_EQ(tok_->token_id("<s>"), 1);
  EXPECT_EQ(tok_->token_id("</s>"), 2);
  const std::string type = GetParam() == "bpe" ? "BPE" : "Unigram";
  EXPECT_EQ(tok_->name(), "SentencePiece " + type + " (" + std::to_string(kVocabSize) + " pieces)");
}

TEST_P(SentencePieceModelTest, ByteFallbackPiecesFollowTheSpecialPieces) {
  // As in Llama 2's tokenizer.model, <0x00> is id 3 (4 after <|sep|>) and byte b is <0x00> + b.
  const int32_t b0 = first_byte_id();
  EXPECT_EQ(tok_->token_id("<0x00>"), b0);
  EXPECT_EQ(tok_->token_id("<0xF0>"), b0 + 0xF0);
  EXPECT_EQ(tok_->token_id("<0xFF>"), b0 + 0xFF);
  // U+1F642 is F0 9F 99 82 in UTF-8 and is not in the training text.
  const std::optional<int32_t> space = tok_->token_id("\xE2\x96\x81");  // "▁"
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ(tok_->encode("\xF0\x9F\x99\x82"),
            (std::vector<int32_t>{*space, b0 + 0xF0, b0 + 0x9F, b0 + 0x99, b0 + 0x82}));
}

TEST_P(SentencePieceModelTest, RoundTripsTextAndMatchesTheProcessor) {
  sentencepiece::SentencePieceProcessor reference;
  ASSERT_TRUE(reference.Load(path_).ok());
  const std::vector<std::string> texts = {
      "the quick brown fox jumps over the lazy dog",
      "caf\xC3\xA9 cr\xC3\xA8me br\xC3\xBBl\xC3\xA9"
      "e, Gr\xC3\xB6\xC3\x9F"
      "e \xC3\xBC"
      "ber",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9"
      "\xE3\x83\x88",                                   // 日本語のテキスト
      "\xE9\xBE\x8D \xE4\xB8\xAD\xE6\x96\x87",          // 龍 (unseen: bytes) 中文
      "rocket \xF0\x9F\x9A\x80 and \xF0\x9F\x99\x82!",  // emoji: byte fallback
      "  two  spaces,\ta tab\nand a newline  ",
      "<s> and </s> are text here",
      "",
  };
  for (const std::string& text : texts) {
    const std::vector<int32_t> ids = tok_->encode(text);
    for (const int32_t id : ids) {
      EXPECT_GE(id, 0) << text;
      EXPECT_LT(id, tok_->vocab_size()) << text;
      EXPECT_NE(id, 0) << "byte fallback leaves nothing unknown: " << text;
    }
    const std::vector<int> expected = reference.EncodeAsIds(text);
    EXPECT_EQ(ids, std::vector<int32_t>(expected.begin(), expected.end())) << text;
    EXPECT_EQ(tok_->decode(ids), text);
    std::vector<int32_t> wrapped = ids;
    wrapped.insert(wrapped.begin(), tok_->bos_id());
    wrapped.push_back(tok_->eos_id());
    EXPECT_EQ(tok_->decode(wrapped), text) << "control pieces decode to nothing";
  }
}

TEST_P(SentencePieceModelTest, FindsFrequentWordPieces) {
  const std::optional<int32_t> the = tok_->token_id("\xE2\x96\x81the");  // "▁the"
  ASSERT_TRUE(the.has_value());
  EXPECT_GT(*the, first_byte_id() + 0xFF) << "a learned piece comes after the byte pieces";
  EXPECT_EQ(tok_->encode("the"), std::vector<int32_t>{*the});
  EXPECT_EQ(tok_->decode({*the}), "the");
  EXPECT_EQ(tok_->token_id("no such piece"), std::nullopt);
  EXPECT_EQ(tok_->token_id(""), std::nullopt);
}

TEST_P(SentencePieceModelTest, UserDefinedSymbolsAreSingleIdsControlSymbolsAreText) {
  const std::optional<int32_t> sep = tok_->token_id("<|sep|>");
  const std::vector<int32_t> ids = tok_->encode("the<|sep|>the");
  EXPECT_EQ(tok_->decode(ids), "the<|sep|>the");
  if (GetParam() == "unigram") {
    EXPECT_EQ(sep, 3);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 3), 1);
  } else {
    EXPECT_EQ(sep, std::nullopt);  // Llama 2 has no user-defined symbols
  }
  const std::vector<int32_t> control = tok_->encode("<s></s>");
  EXPECT_EQ(std::count(control.begin(), control.end(), 1), 0);
  EXPECT_EQ(std::count(control.begin(), control.end(), 2), 0);
  EXPECT_EQ(tok_->decode(control), "<s></s>");
}

TEST_P(SentencePieceModelTest, DecodeSkipsIdsOutsideTheVocabulary) {
  const std::vector<int32_t> ids = tok_->encode("the dog");
  std::vector<int32_t> noisy = {-1};
  noisy.insert(noisy.end(), ids.begin(), ids.end());
  noisy.push_back(kVocabSize);
  noisy.push_back(1 << 30);
  EXPECT_EQ(tok_->decode(noisy), "the dog");
}

TEST_P(SentencePieceModelTest, EncodesFromSeveralThreads) {
  const std::string text = "the quick brown fox \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82";
  const std::vector<int32_t> expected = tok_->encode(text);
  std::vector<std::vector<int32_t>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) result = tok_->encode(text);
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, expected);
}

INSTANTIATE_TEST_SUITE_P(SentencePiece, SentencePieceModelTest,
                         ::testing::Values("bpe", "unigram"));

TEST(SentencePieceTokenizer, MissingFileNamesThePath) {
  const std::string path = (models().dir() / "does-not-exist.model").string();
  const std::string message = load_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
}

TEST(SentencePieceTokenizer, TextFileIsNotAModel) {
  const std::string path = (models().dir() / "notes.model").string();
  write_bytes(path, "this is a text file, not a SentencePiece model\n");
  const std::string message = load_error(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  const std::string empty = (models().dir() / "empty.model").string();
  write_bytes(empty, "");
  EXPECT_NE(load_error(empty).find(empty), std::string::npos);
}

// A unigram model: <unk> <s> </s>, then `pieces` (piece_field), identity normalization (no
// precompiled map), dummy prefix and whitespace escaping on (the defaults). The expected ids of
// the tests below are PyPI's sentencepiece 0.2.3 on the same file.
std::string unigram_model(const std::string& pieces) {
  return piece_field("<unk>", 0.0F, 2) + piece_field("<s>", 0.0F, 3) +
         piece_field("</s>", 0.0F, 3) + pieces +
         bytes_field(2, varint_field(3, 1)) +         // trainer_spec.model_type: UNIGRAM
         bytes_field(3, bytes_field(1, "identity"));  // normalizer_spec.name
}

// "▁4444" is "▁" "4" "444" or "▁" "444" "4", and with these scores (a trained model's) the two
// float sums are equal. The Viterbi keeps the first path that reaches a position and replaces it
// only with a strictly better one, in float: SentencePiece 0.2.2 and later (PyPI's) give "▁" "4"
// "444". Earlier releases (Debian's 0.1.97) add the piece's score in double (their user-defined
// symbol score is a double, which makes the whole expression one) and compare that with the
// float they stored, so there the second path, better by less than a float's rounding, won
// ("▁" "444" "4").
TEST(SentencePieceTokenizer, UnigramTiesGoToTheFirstPathAsInSentencePiece022) {
  const std::string path = (models().dir() / "tie.model").string();
  write_bytes(path, unigram_model(piece_field("\xE2\x96\x81", -4.110776901245117F, 1) +
                                  piece_field("4", -10.550413131713867F, 1) +
                                  piece_field("444", -10.61970043182373F, 1)));
  const auto tok = SentencePieceTokenizer::from_file(path);
  EXPECT_EQ(tok->name(), "SentencePiece Unigram (6 pieces)");
  EXPECT_EQ(tok->encode("4444"), (std::vector<int32_t>{3, 4, 5}));
  // The rounding, and so the winner, depends on the score of the path before the word.
  EXPECT_EQ(tok->encode("4 4444 444"), (std::vector<int32_t>{3, 4, 3, 5, 4, 3, 5}));
  // "4444 x" 5,000 times: the path loses about 50 a pair ("x" is unknown, scored 10 below the
  // lowest piece), and SentencePiece 0.2.2 and later shift the scores back to 0 each time they
  // pass -1e5 (every 2,000 pairs here) to keep float precision. Between two shifts the rounding
  // goes the same way: pair 20 after each splits "4444" as "▁" "444" "4", every other pair as
  // "▁" "4" "444". (Without the shift only pair 20 does; Debian's 0.1.97 differs in 1,185.)
  std::string text;
  std::vector<int32_t> expected;
  for (int pair = 0; pair < 5000; ++pair) {
    text += pair == 0 ? "4444 x" : " 4444 x";
    if (pair % 2000 == 20) {
      expected.insert(expected.end(), {3, 5, 4, 3, 0});
    } else {
      expected.insert(expected.end(), {3, 4, 5, 3, 0});
    }
  }
  EXPECT_EQ(tok->encode(text), expected);
  // An unknown character (no byte fallback): one <unk> per run, as the processor merges them.
  EXPECT_EQ(tok->encode("4x4xy"), (std::vector<int32_t>{3, 4, 0, 4, 0}));
  EXPECT_EQ(tok->encode(""), std::vector<int32_t>{});
}

// A user-defined symbol scores 0.1 x (its bytes - 1) in SentencePiece 0.2.2 and later: "4444"
// 0.3, so "▁" "4" "4444" (-1 - 1 + 0.3 = -1.7) beats the normal piece "▁44444" (-1.8). Earlier
// releases (Debian's 0.1.97) score it length x max_score - 0.1 with a max_score stuck at FLT_MIN
// (about 0), so -0.1, and choose "▁44444" (-2.1 against -1.8).
TEST(SentencePieceTokenizer, UnigramUserDefinedSymbolsScoreAsInSentencePiece022) {
  const std::string path = (models().dir() / "user-defined.model").string();
  const std::string space = "\xE2\x96\x81";  // "▁"
  const int user_defined = 4;
  write_bytes(path, unigram_model(piece_field(space, -1.0F, 1) + piece_field("4", -1.0F, 1) +
                                  piece_field(space + "44444", -1.8F, 1) +
                                  piece_field("4444", 0.0F, user_defined)));
  const auto tok = SentencePieceTokenizer::from_file(path);
  EXPECT_EQ(tok->encode("44444"), (std::vector<int32_t>{3, 4, 6}));
  EXPECT_EQ(tok->encode("4444"), (std::vector<int32_t>{3, 6}));
}

// The layout check_sentencepiece_model expects of a precompiled_charsmap is the one the library
// reads: a hand-written trie of the rule "A" -> "a" normalizes "A" as "a" there.
TEST(SentencePieceTokenizer, HandWrittenCharsmapIsReadAsTheChecksReadIt) {
  const std::string model =
      piece_field("<unk>", 0.0F, 2) + piece_field("<s>", 0.0F, 3) + piece_field("</s>", 0.0F, 3) +
      piece_field("\xE2\x96\x81", -1.0F, 1) + piece_field("a", -1.0F, 1) +
      piece_field("b", -1.0F, 1) + bytes_field(2, varint_field(3, 1)) +
      bytes_field(3, bytes_field(1, "custom") +
                         bytes_field(2, charsmap(one_rule_trie(), std::string("a\0", 2))));
  const auto tok = SentencePieceTokenizer::from_serialized(model, "one-rule.model");
  EXPECT_EQ(tok->encode("A"), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(tok->encode("aAb"), (std::vector<int32_t>{3, 4, 4, 5}));
  // A leaf past the strings is refused before the library reads the model.
  std::vector<uint32_t> units = one_rule_trie();
  units[512] = leaf_unit(1000);
  const std::string bad = piece_field("<unk>", 0.0F, 2) + piece_field("a", -1.0F, 1) +
                          bytes_field(2, varint_field(3, 1)) +
                          bytes_field(3, bytes_field(2, charsmap(units, std::string("a\0", 2))));
  try {
    SentencePieceTokenizer::from_serialized(bad, "bad.model");
    ADD_FAILURE() << "accepted";
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()),
              "SentencePiece model \"bad.model\": normalizer_spec.precompiled_charsmap: trie unit "
              "321 (reached by the bytes 41): expected its leaf to point into the 2 bytes of "
              "replacement strings, found offset 1000");
  }
}

TEST(SentencePieceTokenizer, TruncatedModelIsAnError) {
  const std::string bytes = read_bytes(models().model("bpe"));
  ASSERT_GT(bytes.size(), 1000u);
  const std::string path = (models().dir() / "truncated.model").string();
  std::vector<size_t> cuts = {bytes.size() - 1, 1};
  for (size_t eighth = 1; eighth < 8; ++eighth) cuts.push_back(bytes.size() * eighth / 8);
  // Near the end: inside or just before the trainer and normalizer specs.
  for (size_t back = 2; back < 80; ++back) cuts.push_back(bytes.size() - back);
  for (const size_t cut : cuts) {
    write_bytes(path, bytes.substr(0, cut));
    const std::string message = load_error(path);
    EXPECT_NE(message.find(path), std::string::npos) << "cut at " << cut << ": " << message;
  }
}

}  // namespace
}  // namespace ftbench::data
