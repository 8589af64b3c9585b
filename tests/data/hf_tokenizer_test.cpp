#include "data/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/byte_tokenizer.h"
#include "data/load_tokenizer.h"

namespace ftbench::data {
namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-2's byte-to-character table, written out independently of the implementation: printable
// Latin-1 bytes stand for themselves, the rest map to U+0100.. in byte order.
std::string byte_symbol(unsigned char b) {
  static_assert(sizeof(char32_t) == 4);
  uint32_t cp = b;
  if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
    uint32_t n = 0;
    for (uint32_t x = 0; x < b; ++x) {
      if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++n;
    }
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

// Byte-level form of raw bytes ("\xC3\xA9" -> "Ã©", " a" -> "Ġa").
std::string byte_level(const std::string& raw) {
  std::string s;
  for (const char c : raw) s += byte_symbol(static_cast<unsigned char>(c));
  return s;
}

// A tokenizer.json with the 256 byte symbols as ids 0-255 (id = byte value), then one token per
// merge (ids 256, 257, ... in merge order). Merges are given as raw byte pairs.
struct Spec {
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> extra_vocab;  // raw bytes, ids after the merges
  json pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  json added_tokens = json::array();
  bool ignore_merges = false;
  bool pair_merges = false;  // [["a", "b"]] instead of ["a b"]
  json post_processor = nullptr;
};

json tokenizer_json(const Spec& spec) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_symbol(static_cast<unsigned char>(b))] = b;
  json merges = json::array();
  int next = 256;
  for (const auto& [a, b] : spec.merges) {
    const std::string left = byte_level(a), right = byte_level(b);
    if (!vocab.contains(left + right)) vocab[left + right] = next++;
    if (spec.pair_merges) {
      merges.push_back(json::array({left, right}));
    } else {
      merges.push_back(left + " " + right);
    }
  }
  for (const std::string& t : spec.extra_vocab) vocab[byte_level(t)] = next++;
  return {{"version", "1.0"},
          {"added_tokens", spec.added_tokens},
          {"normalizer", nullptr},
          {"pre_tokenizer", spec.pre_tokenizer},
          {"post_processor", spec.post_processor},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"byte_fallback", false},
            {"ignore_merges", spec.ignore_merges},
            {"vocab", vocab},
            {"merges", merges}}}};
}

std::unique_ptr<HfTokenizer> make(const Spec& spec, const std::string& config = "") {
  return HfTokenizer::from_json(tokenizer_json(spec).dump(), config, "test.json");
}

json llama3_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", kLlama3Pattern}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"},
             {"add_prefix_space", false},
             {"trim_offsets", true},
             {"use_regex", false}}}}};
}

json added(const std::string& content, int id, bool special = true, bool lstrip = false,
           bool rstrip = false) {
  return {{"id", id},         {"content", content},     {"single_word", false}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", !special}, {"special", special}};
}

// The message of the TokenizerError that `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "";
}

TEST(HfTokenizer, AsciiWithoutMergesIsOneIdPerByte) {
  const auto t = make({});
  EXPECT_EQ(t->encode("Hi!"), (Ids{72, 105, 33}));
  EXPECT_EQ(t->encode(""), Ids{});
  EXPECT_EQ(t->vocab_size(), 256);
  EXPECT_EQ(t->name(), "tokenizer.json BPE (256 tokens)");
}

TEST(HfTokenizer, MergesApplyLowestRankFirst) {
  Spec bc_first;
  bc_first.merges = {{"b", "c"}, {"a", "b"}};  // "bc" = 256, "ab" = 257
  EXPECT_EQ(make(bc_first)->encode("abc"), (Ids{97, 256}));
  Spec ab_first;
  ab_first.merges = {{"a", "b"}, {"b", "c"}};  // "ab" = 256, "bc" = 257
  EXPECT_EQ(make(ab_first)->encode("abc"), (Ids{256, 99}));
  ab_first.pair_merges = true;
  EXPECT_EQ(make(ab_first)->encode("abc"), (Ids{256, 99}));
}

TEST(HfTokenizer, EqualRanksMergeLeftmostFirstAndChain) {
  Spec spec;
  spec.merges = {{"a", "a"}, {"aa", "aa"}, {"aaaa", "a"}};  // 256, 257, 258
  const auto t = make(spec);
  EXPECT_EQ(t->encode("aaa"), (Ids{256, 97}));
  EXPECT_EQ(t->encode("aaaa"), (Ids{257}));
  EXPECT_EQ(t->encode("aaaaa"), (Ids{258}));
  EXPECT_EQ(t->encode("aaaaaaa"), (Ids{257, 256, 97}));
}

TEST(HfTokenizer, LongRunsMergeInOnePiece) {
  Spec spec;
  spec.merges = {{"=", "="}};  // 256
  const auto t = make(spec);
  const Ids ids = t->encode(std::string(200001, '='));
  ASSERT_EQ(ids.size(), 100001u);
  EXPECT_EQ(ids.front(), 256);
  EXPECT_EQ(ids.back(), 61);
  EXPECT_EQ(t->encode(std::string(100000, ' ')).size(), 100000u);  // no merge for spaces
}

TEST(HfTokenizer, NonAsciiIsEncodedAsByteLevelSymbols) {
  Spec spec;
  // U+1F600 is F0 9F 98 80; merge it into one token (258), leave é (C3 A9) as two bytes.
  spec.merges = {{"\xF0", "\x9F"}, {"\xF0\x9F", "\x98"}, {"\xF0\x9F\x98", "\x80"}};
  const auto t = make(spec);
  EXPECT_EQ(t->encode("\xC3\xA9"), (Ids{0xC3, 0xA9}));
  EXPECT_EQ(t->encode("\xF0\x9F\x98\x80"), (Ids{258}));
  EXPECT_EQ(t->encode("\xF0\x9F\x98\x81"), (Ids{257, 0x81}));
  EXPECT_EQ(t->token_id(byte_level("\xF0\x9F\x98\x80")), 258);
  EXPECT_EQ(t->token_id("\xC4\xA0"), 32);  // "Ġ" is the space byte
  EXPECT_EQ(t->token_id("nope"), std::nullopt);
}

TEST(HfTokenizer, Gpt2PreTokenizerSplitsBeforeMerging) {
  Spec spec;
  spec.merges = {{" ", "w"}, {"o", " "}, {"3", "4"}};  // " w" 256, "o " 257, "34" 258
  const auto t = make(spec);
  // "o w" splits into "o", " w": the "o " merge cannot cross the split.
  EXPECT_EQ(t->encode("o w"), (Ids{111, 256}));
  // GPT-2 keeps digit runs whole, so "34" merges inside "1234".
  EXPECT_EQ(t->encode("1234"), (Ids{49, 50, 258}));
  // Contractions are lower-case only in GPT-2: "'LL" is punctuation then letters.
  spec.merges = {{"'", "l"}, {"'l", "l"}, {"'", "L"}};  // "'l" 256, "'ll" 257, "'L" 258
  EXPECT_EQ(make(spec)->encode("I'll"), (Ids{73, 257}));
  EXPECT_EQ(make(spec)->encode("I'LL"), (Ids{73, 39, 76, 76}));
}

TEST(HfTokenizer, Llama3SplitThenByteLevel) {
  Spec spec;
  spec.pre_tokenizer = llama3_pre_tokenizer();
  spec.merges = {{"3", "4"}, {"'", "L"}, {"'L", "L"}, {" ", "w"}};  // 256, 257, 258, 259
  const auto t = make(spec);
  // Digits go in groups of three: "123" "4", so "34" does not merge.
  EXPECT_EQ(t->encode("1234"), (Ids{49, 50, 51, 52}));
  EXPECT_EQ(t->encode("34"), (Ids{256}));
  // Contractions are case-insensitive: "'LL" is one piece.
  EXPECT_EQ(t->encode("I'LL"), (Ids{73, 258}));
  EXPECT_EQ(t->encode("a w"), (Ids{97, 259}));
  // Whitespace before a word stays with the word, the rest is its own piece.
  EXPECT_EQ(t->encode("a   w"), (Ids{97, 32, 32, 259}));
}

TEST(HfTokenizer, IgnoreMergesTakesWholeVocabularyPieces) {
  Spec spec;
  spec.pre_tokenizer = llama3_pre_tokenizer();
  spec.extra_vocab = {"hello"};  // 256, reachable by no merge
  EXPECT_EQ(make(spec)->encode("hello"), (Ids{104, 101, 108, 108, 111}));
  spec.ignore_merges = true;
  EXPECT_EQ(make(spec)->encode("hello"), (Ids{256}));
  EXPECT_EQ(make(spec)->encode("hello!"), (Ids{256, 33}));
}

TEST(HfTokenizer, SplitRemovedAndStringPattern) {
  Spec spec;
  spec.pre_tokenizer = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Removed"}},
        {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  spec.merges = {{"a", "b"}};
  EXPECT_EQ(make(spec)->encode("a-b--ab"), (Ids{97, 98, 256}));
}

TEST(HfTokenizer, AddPrefixSpace) {
  Spec spec;
  spec.pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  spec.merges = {{" ", "a"}};  // 256
  const auto t = make(spec);
  EXPECT_EQ(t->encode("a a"), (Ids{256, 256}));
  EXPECT_EQ(t->encode(" a"), (Ids{256}));
}

TEST(HfTokenizer, AddedTokensSplitTheTextLongestFirst) {
  Spec spec;
  spec.merges = {{"h", "i"}};  // 256
  spec.added_tokens = {added("<|eot_id|>", 300), added("<|eot", 301, false),
                       added("<|begin_of_text|>", 302)};
  const auto t = make(spec);
  EXPECT_EQ(t->encode("hi<|eot_id|>hi"), (Ids{256, 300, 256}));
  EXPECT_EQ(t->encode("<|begin_of_text|><|eot|>"), (Ids{302, 301, 124, 62}));
  EXPECT_EQ(t->encode("<|eot_id|><|eot_id|>"), (Ids{300, 300}));
  // An added token ends a pre-token: " hi" and "hi" around it are encoded apart.
  EXPECT_EQ(t->encode(" <|eot_id|> hi"), (Ids{32, 300, 32, 256}));
  EXPECT_EQ(t->vocab_size(), 303);
  EXPECT_EQ(t->token_id("<|eot_id|>"), 300);
  EXPECT_EQ(t->bos_id(), 302);
  EXPECT_EQ(t->eos_id(), -1);
  EXPECT_EQ(t->pad_id(), -1);
}

TEST(HfTokenizer, AddedTokenStripsWhitespaceOnRequestedSides) {
  Spec spec;
  spec.added_tokens = {added("<mask>", 300, true, /*lstrip=*/true, /*rstrip=*/false),
                       added("<sep>", 301, true, /*lstrip=*/false, /*rstrip=*/true)};
  const auto t = make(spec);
  EXPECT_EQ(t->encode("a  <mask> b"), (Ids{97, 300, 32, 98}));
  EXPECT_EQ(t->encode("a <sep>  b"), (Ids{97, 32, 301, 98}));
}

TEST(HfTokenizer, DecodeRoundTrip) {
  Spec spec;
  spec.pre_tokenizer = llama3_pre_tokenizer();
  spec.merges = {{"\xF0", "\x9F"}, {" ", "w"}, {"o", "r"}};
  spec.added_tokens = json::array({added("<|eot_id|>", 400)});
  const auto t = make(spec);
  const std::string text =
      "Hello, w\xC3\xB6rld! \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB\r\n\t "
      "123<|eot_id|>\xE4\xB8"
      "\xAD\xE6\x96\x87";
  EXPECT_EQ(t->decode(t->encode(text)), text);
  EXPECT_EQ(t->decode({400, 104, 105}), "<|eot_id|>hi");
  EXPECT_EQ(t->decode({104, 99999, -1, 105}), "hi");  // unknown ids are skipped
}

TEST(HfTokenizer, SpecialIdsFromConfigElseWellKnownTokens) {
  Spec spec;
  spec.added_tokens = {added("<|begin_of_text|>", 300), added("<|end_of_text|>", 301),
                       added("<|eot_id|>", 302), added("<|finetune_right_pad_id|>", 303)};
  const auto fallback = make(spec);
  EXPECT_EQ(fallback->bos_id(), 300);
  EXPECT_EQ(fallback->eos_id(), 301);
  EXPECT_EQ(fallback->pad_id(), 301);  // pad defaults to eos
  const auto configured =
      make(spec,
           R"({"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|eot_id|>"},
          "pad_token": "<|finetune_right_pad_id|>"})");
  EXPECT_EQ(configured->bos_id(), 300);
  EXPECT_EQ(configured->eos_id(), 302);
  EXPECT_EQ(configured->pad_id(), 303);
  EXPECT_NE(error_of([&] { make(spec, R"({"eos_token": "<nope>"})"); }).find("<nope>"),
            std::string::npos);

  Spec gpt2;
  gpt2.added_tokens = json::array({added("<|endoftext|>", 256)});
  const auto t = make(gpt2);
  EXPECT_EQ(t->bos_id(), 256);
  EXPECT_EQ(t->eos_id(), 256);
}

// Llama 3's post-processor, as its tokenizer.json has it: ByteLevel, then "<|begin_of_text|> $A".
json llama3_post_processor(const std::string& bos = "<|begin_of_text|>", int bos_id = 300) {
  const json template_processing = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens", {{bos, {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}}}}}};
  return {{"type", "Sequence"},
          {"processors",
           {{{"type", "ByteLevel"},
             {"add_prefix_space", true},
             {"trim_offsets", false},
             {"use_regex", true}},
            template_processing}}};
}

TEST(HfTokenizer, BosFollowsThePostProcessorUnlessTheConfigSays) {
  Spec llama3;
  llama3.added_tokens = {added("<|begin_of_text|>", 300), added("<|end_of_text|>", 301),
                         added("<s>", 302)};
  // No post-processor, or GPT-2's ByteLevel one: no BOS (the id is still known).
  EXPECT_FALSE(make(llama3)->adds_bos());
  llama3.post_processor = {{"type", "ByteLevel"}, {"trim_offsets", true}};
  EXPECT_FALSE(make(llama3)->adds_bos());
  // Llama 3's template: BOS, and it is the template's token.
  llama3.post_processor = llama3_post_processor();
  const auto t = make(llama3);
  EXPECT_TRUE(t->adds_bos());
  EXPECT_EQ(t->bos_id(), 300);
  // A template whose first piece is the text adds none.
  json text_first = llama3_post_processor();
  text_first["processors"][1]["single"] = {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}};
  llama3.post_processor = text_first;
  EXPECT_FALSE(make(llama3)->adds_bos());
  // Without a config bos_token the template's token is the BOS, even where "<s>" would be taken.
  Spec other = llama3;
  other.added_tokens = {added("<s>", 300), added("<bos>", 301)};
  other.post_processor = llama3_post_processor("<bos>", 301);
  EXPECT_EQ(make(other)->bos_id(), 301);
  // RobertaProcessing: cls before the text.
  other.post_processor = {{"type", "RobertaProcessing"},
                          {"sep", {"</s>", 2}},
                          {"cls", {"<s>", 300}},
                          {"trim_offsets", true},
                          {"add_prefix_space", false}};
  EXPECT_TRUE(make(other)->adds_bos());
  EXPECT_EQ(make(other)->bos_id(), 300);

  // tokenizer_config.json's add_bos_token wins either way.
  llama3.post_processor = llama3_post_processor();
  EXPECT_FALSE(make(llama3, R"({"add_bos_token": false})")->adds_bos());
  Spec plain;
  plain.added_tokens = json::array({added("<|begin_of_text|>", 300)});
  EXPECT_TRUE(make(plain, R"({"add_bos_token": true})")->adds_bos());
  EXPECT_EQ(make(plain, R"({"add_bos_token": true})")->bos_id(), 300);

  // Errors name the file and the key.
  Spec none;
  EXPECT_EQ(error_of([&] { make(none, R"({"add_bos_token": true})"); }),
            "tokenizer_config.json: add_bos_token is true, but there is no BOS token: set "
            "bos_token");
  EXPECT_EQ(error_of([&] { make(llama3, R"({"add_bos_token": "yes"})"); }),
            "tokenizer_config.json: add_bos_token: expected true or false, found \"yes\"");
  Spec unknown;
  unknown.post_processor = llama3_post_processor("<|nope|>", 999);
  unknown.post_processor["processors"][1]["special_tokens"] = json::object();
  EXPECT_EQ(error_of([&] { make(unknown); }),
            "test.json: post_processor.single[0]: \"<|nope|>\" is not a token of the file");
}

TEST(HfTokenizer, RejectsUnsupportedModels) {
  for (const char* type : {"WordPiece", "Unigram"}) {
    json j = tokenizer_json({});
    j["model"]["type"] = type;
    const std::string message = error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); });
    EXPECT_NE(message.find("t.json: model.type"), std::string::npos) << message;
    EXPECT_NE(message.find(type), std::string::npos) << message;
  }
  json j = tokenizer_json({});
  j["normalizer"] = {{"type", "NFC"}};
  EXPECT_NE(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }).find("normalizer"),
            std::string::npos);
  j = tokenizer_json({});
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_NE(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }).find("Metaspace"),
            std::string::npos);
  j = tokenizer_json({});
  j["model"]["byte_fallback"] = true;
  EXPECT_NE(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }).find("byte_fallback"),
            std::string::npos);
}

TEST(HfTokenizer, RejectsBrokenVocabAndMerges) {
  json j = tokenizer_json({});
  j["model"].erase("vocab");
  EXPECT_NE(error_of([&] {
              HfTokenizer::from_json(j.dump(), "", "t.json");
            }).find("t.json: model.vocab: missing"),
            std::string::npos);

  j = tokenizer_json({});
  j["model"]["merges"] = {"a b", "a xyz"};
  j["model"]["vocab"]["ab"] = 256;
  const std::string unknown = error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); });
  EXPECT_NE(unknown.find("model.merges[1]"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("\"xyz\" is not in model.vocab"), std::string::npos) << unknown;

  j = tokenizer_json({});
  j["model"]["merges"] = {"a b"};  // "ab" is missing from the vocabulary
  EXPECT_NE(
      error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }).find("merged token \"ab\""),
      std::string::npos);

  j = tokenizer_json({});
  j["model"]["vocab"].erase("a");
  EXPECT_NE(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }).find("byte 0x61"),
            std::string::npos);
}

// A 3.8 kB file with one id of 2^31 - 1 sized the id table to 2^31 strings (64 GiB): ids are
// bounded by the number of tokens, vocabulary plus added tokens, with room for the small gaps
// real vocabularies have (issue 14, item 6).
TEST(HfTokenizer, AnIdFarBeyondTheTokenCountIsRefused) {
  json j = tokenizer_json({});
  j["model"]["vocab"]["zz"] = 2147483647;
  EXPECT_EQ(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }),
            "t.json: model.vocab[\"zz\"]: id 2147483647 is far beyond the tokenizer's 257 tokens "
            "(257 in model.vocab, 0 in added_tokens): ids up to 1537 (twice the tokens, plus 1,024 "
            "for gaps) are accepted; a gap that large is a broken file");

  j = tokenizer_json({});
  j["added_tokens"] = json::array({added("<|x|>", 50'000'000)});
  EXPECT_EQ(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); }),
            "t.json: added_tokens[0] \"<|x|>\": id 50000000 is far beyond the tokenizer's 257 "
            "tokens (256 in model.vocab, 1 in added_tokens): ids up to 1537 (twice the tokens, "
            "plus 1,024 for gaps) are accepted; a gap that large is a broken file");

  // Gaps up to the bound are real vocabularies' reserved ids: 256 byte tokens and two added
  // ones may use ids up to 2 x 258 + 1023 = 1539.
  j = tokenizer_json({});
  j["added_tokens"] = json::array({added("<|a|>", 1539), added("<|b|>", 256)});
  EXPECT_EQ(HfTokenizer::from_json(j.dump(), "", "t.json")->vocab_size(), 1540);
  j["added_tokens"] = json::array({added("<|a|>", 1540), added("<|b|>", 256)});
  EXPECT_NE(error_of([&] { HfTokenizer::from_json(j.dump(), "", "t.json"); })
                .find("added_tokens[0] \"<|a|>\": id 1540 is far beyond the tokenizer's 258 "
                      "tokens"),
            std::string::npos);
}

TEST(HfTokenizer, BadJsonNamesThePosition) {
  const std::string message =
      error_of([] { HfTokenizer::from_json(R"({"model": {"type": "BPE",})", "", "t.json"); });
  EXPECT_NE(message.find("t.json: invalid JSON at byte 26"), std::string::npos) << message;
}

TEST(HfTokenizer, InvalidUtf8TextNamesTheOffset) {
  const auto t = make({});
  const std::string message = error_of([&] {
    t->encode(
        "ab\xFF"
        "c");
  });
  EXPECT_NE(message.find("offset 2"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { t->encode("\xC3"); }).find("offset 0"), std::string::npos);
  EXPECT_NE(error_of([&] { t->encode("x\xED\xA0\x80"); }).find("offset 1"),
            std::string::npos);  // a UTF-16 surrogate
  EXPECT_NE(error_of([&] { t->encode("\xC0\xAF"); }).find("offset 0"),
            std::string::npos);  // overlong
}

TEST(HfTokenizer, EncodeIsThreadSafe) {
  Spec spec;
  spec.pre_tokenizer = llama3_pre_tokenizer();
  spec.merges = {{"t", "h"}, {"th", "e"}, {" ", "the"}, {"e", "r"}};
  const auto t = make(spec);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "the other " + std::to_string(i) + " rather\n";
  const Ids expected = t->encode(text);
  std::vector<Ids> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&t, &text, &r] { r = t->encode(text); });
  for (auto& th : threads) th.join();
  for (const Ids& r : results) EXPECT_EQ(r, expected);
}

TEST(HfTokenizer, LoadsFromFileOrFolder) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ftbench_hf_tokenizer_test_" +
                    std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  Spec spec;
  spec.added_tokens = {added("<s>", 256), added("</s>", 257), added("<pad>", 258)};
  std::ofstream(dir / "tokenizer.json") << tokenizer_json(spec).dump();
  std::ofstream(dir / "tokenizer_config.json") << R"({"pad_token": "<pad>"})";
  const auto from_folder = load_tokenizer(dir.string());
  EXPECT_EQ(from_folder->name(), "tokenizer.json BPE (259 tokens)");
  EXPECT_EQ(from_folder->pad_id(), 258);
  EXPECT_EQ(from_folder->bos_id(), 256);
  EXPECT_EQ(load_tokenizer((dir / "tokenizer.json").string())->eos_id(), 257);
  EXPECT_EQ(load_tokenizer("byte")->name(), "byte");
  // A .model path goes to SentencePiece, which names the file it cannot read.
  const std::string spm_error =
      error_of([&] { load_tokenizer((dir / "tokenizer.model").string()); });
  EXPECT_NE(spm_error.find("tokenizer.model"), std::string::npos) << spm_error;
  EXPECT_EQ(spm_error.find("not supported"), std::string::npos) << spm_error;
  EXPECT_NE(error_of([&] { load_tokenizer((dir / "missing.json").string()); }).find("no such file"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// A vocabulary that gives a token twice was read with its last id (issue 39): refused, naming
// the file and the token; so is any other key given twice.
TEST(HfTokenizer, ATokenGivenTwiceInTheVocabularyIsRefused) {
  std::string text = tokenizer_json(Spec{}).dump();
  const std::size_t vocab = text.find("\"vocab\":{");
  ASSERT_NE(vocab, std::string::npos);
  text.insert(vocab + 9, "\"a\":300,");
  EXPECT_EQ(error_of([&] { HfTokenizer::from_json(text, "", "tokenizer.json"); }),
            "tokenizer.json: model.vocab.a: a key given twice in one object");
  EXPECT_EQ(error_of([&] {
              HfTokenizer::from_json(tokenizer_json(Spec{}).dump(),
                                     R"({"eos_token": "a", "eos_token": "b"})", "tokenizer.json");
            }),
            "tokenizer_config.json: eos_token: a key given twice in one object");
}

}  // namespace
}  // namespace ftbench::data
