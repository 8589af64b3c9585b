#include "data/file_dataset.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/byte_tokenizer.h"
#include "data/pretokenized.h"

namespace ftbench::data {
namespace {

namespace fs = std::filesystem;

// Bytes as ids 0-255, then BOS, EOS, PAD and the three Llama 3 chat tokens; `with_eot` false
// leaves <|eot_id|> out of the vocabulary, `adds_bos` false says examples start without BOS
// (as GPT-2's tokenizer.json does), `with_eos` false leaves the tokenizer without EOS.
class ChatByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kBos = 256;
  static constexpr int32_t kEos = 257;
  static constexpr int32_t kPad = 258;
  static constexpr int32_t kStartHeader = 259;
  static constexpr int32_t kEndHeader = 260;
  static constexpr int32_t kEot = 261;

  explicit ChatByteTokenizer(bool with_eot = true, bool adds_bos = true, bool with_eos = true)
      : with_eot_(with_eot), adds_bos_(adds_bos), with_eos_(with_eos) {}
  std::string name() const override { return "chat-bytes"; }
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    for (const int32_t id : ids) {
      if (id < 256) text.push_back(static_cast<char>(id));
    }
    return text;
  }
  int64_t vocab_size() const override { return 262; }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return with_eos_ ? kEos : -1; }
  int32_t pad_id() const override { return kPad; }
  bool adds_bos() const override { return adds_bos_; }
  std::optional<int32_t> token_id(std::string_view token) const override {
    if (token == "<|start_header_id|>") return kStartHeader;
    if (token == "<|end_header_id|>") return kEndHeader;
    if (token == "<|eot_id|>" && with_eot_) return kEot;
    return std::nullopt;
  }

 private:
  bool with_eot_;
  bool adds_bos_;
  bool with_eos_;
};

std::vector<int32_t> Ids(std::string_view text) {
  std::vector<int32_t> ids;
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

const std::string kNoInputPrompt =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\nSay hi\n\n### Response:\n";

class FileDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ftbench-file-dataset-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  DataFileOptions Options(const std::string& name, const std::string& content) {
    DataFileOptions options;
    options.path = Write(name, content);
    return options;
  }

  // The DataError message of loading `content` as `name` with `options` (path filled in).
  std::string Error(const std::string& name, const std::string& content,
                    DataFileOptions options = {}, const Tokenizer* tokenizer = nullptr) {
    options.path = Write(name, content);
    try {
      FileDataset dataset(options, tokenizer != nullptr ? *tokenizer : byte_);
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  }

  // Ten text records "r0" .. "r9".
  std::string TenTexts() {
    std::string out;
    for (int i = 0; i < 10; ++i) out += "{\"text\": \"r" + std::to_string(i) + "\"}\n";
    return out;
  }

  static std::vector<std::string> Texts(const Dataset& dataset) {
    ByteTokenizer byte;
    std::vector<std::string> texts;
    for (int64_t i = 0; i < dataset.size(); ++i) texts.push_back(byte.decode(dataset.at(i).tokens));
    return texts;
  }

  fs::path dir_;
  ByteTokenizer byte_;
  ChatByteTokenizer chat_;
};

TEST_F(FileDatasetTest, AlpacaPromptTemplatesAreByteExact) {
  EXPECT_EQ(alpaca_prompt("Say hi", ""), kNoInputPrompt);
  EXPECT_EQ(alpaca_prompt("Sum", "1 2"),
            "Below is an instruction that describes a task, paired with an input that provides "
            "further context. Write a response that appropriately completes the request.\n\n"
            "### Instruction:\nSum\n\n### Input:\n1 2\n\n### Response:\n");
  // Braces in the text are not placeholders.
  EXPECT_EQ(alpaca_prompt("{input}", "{instruction}"),
            "Below is an instruction that describes a task, paired with an input that provides "
            "further context. Write a response that appropriately completes the request.\n\n"
            "### Instruction:\n{input}\n\n### Input:\n{instruction}\n\n### Response:\n");
}

TEST_F(FileDatasetTest, AlpacaJsonLinesTokensAndPrompt) {
  const auto options =
      Options("a.jsonl",
              "{\"instruction\": \"Say hi\", \"input\": \"\", \"output\": \"hi\"}\n"
              "{\"instruction\": \"Sum\", \"input\": \"1 2\", \"output\": \"3\"}\n"
              "{\"instruction\": \"Say hi\", \"input\": null, \"output\": \"\"}\n");
  FileDataset dataset(options, byte_);
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.format(), "alpaca");
  const Example& first = dataset.at(0);
  EXPECT_EQ(first.tokens, Cat({{256}, Ids(kNoInputPrompt), Ids("hi"), {257}}));
  EXPECT_EQ(first.prompt_tokens, 1 + static_cast<int64_t>(kNoInputPrompt.size()));
  EXPECT_TRUE(first.loss_mask.empty());
  const std::string with_input = alpaca_prompt("Sum", "1 2");
  EXPECT_EQ(dataset.at(1).tokens, Cat({{256}, Ids(with_input), Ids("3"), {257}}));
  EXPECT_EQ(dataset.at(1).prompt_tokens, 1 + static_cast<int64_t>(with_input.size()));
  // Empty output: EOS is the only target.
  EXPECT_EQ(dataset.at(2).tokens, Cat({{256}, Ids(kNoInputPrompt), {257}}));
  EXPECT_EQ(dataset.stats().loss_tokens, 3 + 2 + 1);
}

TEST_F(FileDatasetTest, AlpacaJsonArrayReadsLikeJsonLines) {
  auto options =
      Options("a.json",
              "[\n  {\"instruction\": \"Say hi\",\n   \"output\": \"hi\"},\n"
              "  {\"instruction\": \"Sum\", \"input\": \"1 2\", \"output\": \"3\"}\n]\n");
  FileDataset array(options, byte_);
  const auto lines = Options("a.jsonl",
                             "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
                             "{\"instruction\": \"Sum\", \"input\": \"1 2\", \"output\": \"3\"}\n");
  FileDataset jsonl(lines, byte_);
  ASSERT_EQ(array.size(), 2);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(array.at(i).tokens, jsonl.at(i).tokens);
    EXPECT_EQ(array.at(i).prompt_tokens, jsonl.at(i).prompt_tokens);
  }
}

TEST_F(FileDatasetTest, AlpacaWithoutBosOrEosAndTrainOnInput) {
  auto options = Options("a.jsonl", "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n");
  options.add_bos = false;
  options.add_eos = false;
  FileDataset bare(options, byte_);
  EXPECT_EQ(bare.at(0).tokens, Cat({Ids(kNoInputPrompt), Ids("hi")}));
  EXPECT_EQ(bare.at(0).prompt_tokens, static_cast<int64_t>(kNoInputPrompt.size()));

  options.add_bos = true;
  options.add_eos = true;
  options.train_on_input = true;
  FileDataset all(options, byte_);
  EXPECT_EQ(all.at(0).prompt_tokens, 1);
  EXPECT_TRUE(all.at(0).loss_mask.empty());
  EXPECT_EQ(all.stats().loss_tokens, static_cast<int64_t>(kNoInputPrompt.size()) + 2 + 1);
}

// BOS where the tokenizer's rule adds one (Tokenizer::adds_bos), in every format; EOS after
// alpaca and text examples always, and a tokenizer without one is refused for them.
TEST_F(FileDatasetTest, BosFollowsTheTokenizerRuleAndEosIsAlwaysAppended) {
  const std::string alpaca = "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n";
  const ChatByteTokenizer no_bos(true, /*adds_bos=*/false);
  FileDataset a(Options("a.jsonl", alpaca), no_bos);
  EXPECT_EQ(a.at(0).tokens, Cat({Ids(kNoInputPrompt), Ids("hi"), {257}}));
  EXPECT_EQ(a.at(0).prompt_tokens, static_cast<int64_t>(kNoInputPrompt.size()));
  FileDataset t(Options("t.jsonl", "{\"text\": \"abc\"}\n"), no_bos);
  EXPECT_EQ(t.at(0).tokens, Cat({Ids("abc"), {257}}));
  EXPECT_EQ(t.stats().loss_tokens, 3);  // b, c and EOS: the first token predicts from nothing
  FileDataset c(Options("c.jsonl",
                        "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, "
                        "{\"role\": \"assistant\", \"content\": \"a\"}]}\n"),
                no_bos);
  EXPECT_EQ(c.at(0).tokens.front(), ChatByteTokenizer::kStartHeader);

  const ChatByteTokenizer no_eos(true, true, /*with_eos=*/false);
  DataFileOptions options;
  const std::string path = (dir_ / "e.jsonl").string();
  EXPECT_EQ(Error("e.jsonl", alpaca, options, &no_eos),
            path +
                ": the tokenizer (chat-bytes) has no EOS token to end alpaca examples with; set "
                "eos_token in tokenizer_config.json");
  // Chat turns end with <|eot_id|>, pre-tokenized examples with what they hold: no EOS needed.
  FileDataset chat(Options("c2.jsonl",
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, "
                           "{\"role\": \"assistant\", \"content\": \"a\"}]}\n"),
                   no_eos);
  EXPECT_EQ(chat.at(0).tokens.back(), ChatByteTokenizer::kEot);
  FileDataset ids(Options("i.jsonl", "{\"input_ids\": [1, 2, 3]}\n"), no_eos);
  EXPECT_EQ(ids.at(0).tokens, (std::vector<int32_t>{1, 2, 3}));
}

TEST_F(FileDatasetTest, ChatLlama3TokensAndMask) {
  const auto options =
      Options("c.jsonl",
              "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", "
              "\"content\": \" Q \\n\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": "
              "\"user\", \"content\": \"R\"}, {\"role\": \"assistant\", \"content\": \"BC\"}]}\n");
  FileDataset dataset(options, chat_);
  ASSERT_EQ(dataset.size(), 1);
  EXPECT_EQ(dataset.format(), "chat");
  const auto header = [](std::string_view role) {
    return Cat({{259}, Ids(role), {260}, Ids("\n\n")});
  };
  const std::vector<int32_t> expected = Cat({{256},
                                             header("system"),
                                             Ids("S"),
                                             {261},
                                             header("user"),
                                             Ids("Q"),
                                             {261},
                                             header("assistant"),
                                             Ids("A"),
                                             {261},
                                             header("user"),
                                             Ids("R"),
                                             {261},
                                             header("assistant"),
                                             Ids("BC"),
                                             {261}});
  const Example& example = dataset.at(0);
  EXPECT_EQ(example.tokens, expected);
  // Targets: the assistant contents and their <|eot_id|>.
  std::vector<uint8_t> mask(expected.size(), 0);
  const std::size_t system_turn = header("system").size() + 2;  // "S", <|eot_id|>
  const std::size_t user_turn = header("user").size() + 2;
  const std::size_t first_answer = 1 + system_turn + user_turn + header("assistant").size();
  EXPECT_EQ(first_answer, 36u);
  mask[first_answer] = mask[first_answer + 1] = 1;
  const std::size_t second_answer = expected.size() - 3;
  mask[second_answer] = mask[second_answer + 1] = mask[second_answer + 2] = 1;
  EXPECT_EQ(example.loss_mask, mask);
  EXPECT_EQ(expected[first_answer], 'A');
  EXPECT_EQ(example.prompt_tokens, static_cast<int64_t>(first_answer));
  EXPECT_EQ(dataset.stats().loss_tokens, 5);
}

TEST_F(FileDatasetTest, ChatTrainOnInputHasNoMask) {
  auto options = Options("c.jsonl",
                         "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}, "
                         "{\"role\": \"assistant\", \"content\": \"A\"}]}\n");
  options.train_on_input = true;
  options.add_bos = false;
  FileDataset dataset(options, chat_);
  const Example& example = dataset.at(0);
  EXPECT_EQ(example.tokens, Cat({{259},
                                 Ids("user"),
                                 {260},
                                 Ids("\n\nQ"),
                                 {261},
                                 {259},
                                 Ids("assistant"),
                                 {260},
                                 Ids("\n\nA"),
                                 {261}}));
  EXPECT_TRUE(example.loss_mask.empty());
  EXPECT_EQ(example.prompt_tokens, 1);
}

TEST_F(FileDatasetTest, ChatNeedsTheTokenizersSpecialTokens) {
  const std::string chat = "{\"messages\": [{\"role\": \"assistant\", \"content\": \"A\"}]}\n";
  const std::string path = (dir_ / "c.jsonl").string();
  EXPECT_EQ(Error("c.jsonl", chat),
            path +
                ": the tokenizer (byte) has no special token <|start_header_id|> needed by "
                "the chat format");
  const ChatByteTokenizer without_eot(false);
  DataFileOptions options;
  options.format = "chat";
  EXPECT_EQ(Error("c.jsonl", chat, options, &without_eot),
            path +
                ": the tokenizer (chat-bytes) has no special token <|eot_id|> needed by the "
                "chat format");
}

TEST_F(FileDatasetTest, TextTokens) {
  auto options = Options("t.jsonl", "{\"text\": \"hello\"}\n");
  FileDataset dataset(options, byte_);
  EXPECT_EQ(dataset.format(), "text");
  EXPECT_EQ(dataset.at(0).tokens, Cat({{256}, Ids("hello"), {257}}));
  EXPECT_EQ(dataset.at(0).prompt_tokens, 1);
  EXPECT_TRUE(dataset.at(0).loss_mask.empty());
  options.add_eos = false;
  FileDataset no_eos(options, byte_);
  EXPECT_EQ(no_eos.at(0).tokens, Cat({{256}, Ids("hello")}));
}

TEST_F(FileDatasetTest, TokenizedIdsAndLabels) {
  const auto options = Options("k.jsonl",
                               "{\"input_ids\": [5, 6, 7, 8]}\n"
                               "{\"input_ids\": [5, 6, 7, 8], \"labels\": [5, -100, 7, 8]}\n"
                               "{\"input_ids\": [1, 2], \"labels\": null}\n");
  FileDataset dataset(options, byte_);
  EXPECT_EQ(dataset.format(), "tokenized");
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.at(0).tokens, (std::vector<int32_t>{5, 6, 7, 8}));
  EXPECT_EQ(dataset.at(0).prompt_tokens, 1);
  EXPECT_TRUE(dataset.at(0).loss_mask.empty());
  EXPECT_EQ(dataset.at(1).tokens, (std::vector<int32_t>{5, 6, 7, 8}));
  // Token 0 is never a target, whatever its label says.
  EXPECT_EQ(dataset.at(1).loss_mask, (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(dataset.at(1).prompt_tokens, 2);
  EXPECT_TRUE(dataset.at(2).loss_mask.empty());
  EXPECT_EQ(dataset.stats().loss_tokens, 3 + 2 + 1);
}

// Pre-tokenized ids are checked against the model's vocabulary (options.vocab_size), not the
// tokenizer's: without one (data.tokenizer: none) nothing else is needed.
TEST_F(FileDatasetTest, TokenizedIdsAreBoundedByTheModelsVocabulary) {
  auto options = Options("k.jsonl", "{\"input_ids\": [5, 300, 999]}\n");
  options.vocab_size = 1000;
  const PretokenizedIds none(1000);
  FileDataset dataset(options, none);
  EXPECT_EQ(dataset.at(0).tokens, (std::vector<int32_t>{5, 300, 999}));
  FileDataset with_byte_tokenizer(options, byte_);  // 259 byte tokens; the model has 1000
  EXPECT_EQ(with_byte_tokenizer.at(0).tokens, (std::vector<int32_t>{5, 300, 999}));
  options = Options("k.jsonl", "{\"input_ids\": [5, 1000]}\n");
  options.vocab_size = 1000;
  try {
    FileDataset refused(options, none);
    FAIL() << "id 1000 of a 1000-token vocabulary was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  ":1: input_ids[1]: expected a token id in [0, 1000), found 1000"),
              std::string::npos)
        << e.what();
  }
  // Text cannot be read without a tokenizer (the spec allows none with tokenized data only).
  options = Options("t.jsonl", "{\"text\": \"hello\"}\n");
  EXPECT_THROW(FileDataset text(options, none), DataError);
}

// An endless stream of valid records grew memory until it ran out (std::bad_alloc, exit 3, no
// file named): what is held is bounded (spec/limits.h; small bounds here).
TEST_F(FileDatasetTest, WhatIsHeldIsBoundedAndTheFileNamed) {
  std::string lines;
  for (int i = 0; i < 10; ++i) lines += "{\"text\": \"abc\"}\n";
  auto options = Options("many.jsonl", lines);
  options.max_examples_held = 4;
  try {
    FileDataset refused(options, byte_);
    FAIL() << "10 examples held where 4 may be";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("many.jsonl: more than 4 examples or 2147483648 tokens "
                                         "after 5 records; a data set of this size is not held "
                                         "in memory"),
              std::string::npos)
        << e.what();
  }
  options.max_examples_held = 10;
  options.max_tokens_held = 49;  // 10 examples of BOS + 3 bytes + EOS = 50 tokens
  EXPECT_THROW(FileDataset refused(options, byte_), DataError);
  options.max_tokens_held = 50;
  EXPECT_EQ(FileDataset(options, byte_).size(), 10);
}

TEST_F(FileDatasetTest, TruncateKeepsTheFirstTokensAndCounts) {
  auto options =
      Options("t.jsonl", "{\"text\": \"abcdefgh\"}\n{\"text\": \"ab\"}\n{\"text\": \"abc\"}\n");
  options.max_tokens = 5;
  FileDataset dataset(options, byte_);
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.at(0).tokens, Cat({{256}, Ids("abcd")}));  // EOS lost
  EXPECT_EQ(dataset.at(1).tokens, Cat({{256}, Ids("ab"), {257}}));
  EXPECT_EQ(dataset.at(2).tokens, Cat({{256}, Ids("abc"), {257}}));  // exactly max_tokens
  EXPECT_EQ(dataset.stats().truncated, 1);
  EXPECT_EQ(dataset.stats().dropped_too_long, 0);

  options.too_long = "drop";
  FileDataset dropped(options, byte_);
  EXPECT_EQ(Texts(dropped), (std::vector<std::string>{"ab", "abc"}));
  EXPECT_EQ(dropped.stats().truncated, 0);
  EXPECT_EQ(dropped.stats().dropped_too_long, 1);
  EXPECT_EQ(dropped.stats().records, 3);
}

TEST_F(FileDatasetTest, TruncationThatLeavesNoTargetDrops) {
  auto options = Options("k.jsonl",
                         "{\"input_ids\": [1, 2, 3, 4, 5, 6], \"labels\": [-100, -100, -100, "
                         "-100, 5, 6]}\n{\"input_ids\": [1, 2, 3, 4, 5, 6]}\n");
  options.max_tokens = 4;
  FileDataset dataset(options, byte_);
  ASSERT_EQ(dataset.size(), 1);
  EXPECT_EQ(dataset.at(0).tokens, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(dataset.stats().truncated, 1);
  EXPECT_EQ(dataset.stats().dropped_too_long, 1);

  // Under too_long: truncate the message says why a cut example went: its prompt fills the
  // limit (it read as if truncate had been ignored; found by a review).
  DataFileOptions short_limit;
  short_limit.max_tokens = 20;  // inside the Alpaca prompt
  EXPECT_EQ(Error("a.jsonl", "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n", short_limit),
            (dir_ / "a.jsonl").string() +
                ": no usable example: 1 record, 0 skipped as bad, 1 dropped as too long (cut "
                "to 20 tokens, no target token was left: the prompt fills data.seq_len)");
  short_limit.too_long = "drop";
  EXPECT_EQ(Error("a.jsonl", "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n", short_limit),
            (dir_ / "a.jsonl").string() +
                ": no usable example: 1 record, 0 skipped as bad, 1 dropped as too long (over "
                "20 tokens, data.too_long: drop)");
}

TEST_F(FileDatasetTest, OnErrorSkipCountsAndKeepsMessages) {
  auto options = Options("a.jsonl",
                         "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
                         "{\"instruction\": 1, \"output\": \"x\"}\n"
                         "not json\n"
                         "\n"
                         "{\"instruction\": \"Say hi\", \"output\": \"yo\"}\n"
                         "[1]\n");
  options.on_error = "skip";
  FileDataset dataset(options, byte_);
  const DataFileStats& stats = dataset.stats();
  EXPECT_EQ(dataset.size(), 2);
  EXPECT_EQ(stats.records, 5);
  EXPECT_EQ(stats.skipped_bad, 3);
  const std::string path = options.path;
  EXPECT_EQ(stats.skip_messages,
            (std::vector<std::string>{
                path + ":2: instruction: expected a string, found 1",
                path + ":3: malformed JSON at column 2: syntax error while parsing value - invalid "
                       "literal; last read: 'no'",
                path + ":6: expected a JSON object, found an array"}));
}

TEST_F(FileDatasetTest, SubsetFirstAndRandomAreDeterministic) {
  auto options = Options("t.jsonl", TenTexts());
  options.max_examples = 3;
  FileDataset first(options, byte_);
  EXPECT_EQ(Texts(first), (std::vector<std::string>{"r0", "r1", "r2"}));
  EXPECT_EQ(first.stats().not_selected, 7);
  EXPECT_EQ(first.description(),
            "file(path=" + options.path + ", format=text, n=3, subset=first 3 of 10)");

  options.subset = "random";
  options.seed = 7;
  FileDataset random(options, byte_);
  FileDataset again(options, byte_);
  const std::vector<std::string> picked = Texts(random);
  ASSERT_EQ(picked.size(), 3u);
  EXPECT_EQ(picked, Texts(again));
  EXPECT_TRUE(std::is_sorted(picked.begin(), picked.end()));  // file order kept
  EXPECT_EQ(random.description(),
            "file(path=" + options.path + ", format=text, n=3, subset=random 3 of 10 (seed=7))");
  // Another seed draws another sample (for these seeds).
  bool differs = false;
  for (uint64_t seed = 8; seed < 12 && !differs; ++seed) {
    options.seed = seed;
    differs = Texts(FileDataset(options, byte_)) != picked;
  }
  EXPECT_TRUE(differs);

  options.max_examples = 50;  // more than there are: all
  FileDataset all(options, byte_);
  EXPECT_EQ(all.size(), 10);
  EXPECT_EQ(all.description(), "file(path=" + options.path + ", format=text, n=10)");
}

TEST_F(FileDatasetTest, ValidationFractionSplitsDisjointly) {
  auto options = Options("t.jsonl", TenTexts());
  options.seed = 3;
  ValidationOptions validation;
  validation.fraction = 0.25;  // ceil(2.5) = 3 held out
  const TrainValidationData data = load_train_validation(options, validation, byte_);
  ASSERT_NE(data.validation, nullptr);
  EXPECT_EQ(data.train->size(), 7);
  EXPECT_EQ(data.validation->size(), 3);
  std::set<std::string> seen;
  for (const auto& text : Texts(*data.train)) seen.insert(text);
  for (const auto& text : Texts(*data.validation)) seen.insert(text);
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(data.train->stats().not_selected, 3);
  EXPECT_EQ(data.validation->stats().not_selected, 7);
  EXPECT_EQ(data.validation->description(),
            "file(path=" + options.path +
                ", format=text, n=3, split=validation (validation fraction 0.25, seed=3))");
  const TrainValidationData again = load_train_validation(options, validation, byte_);
  EXPECT_EQ(Texts(*again.validation), Texts(*data.validation));

  // 0.07 * 100 is 7.000000000000001 in doubles; 7 are held out, not 8.
  std::string hundred;
  for (int i = 0; i < 100; ++i) hundred += "{\"text\": \"x\"}\n";
  options.path = Write("h.jsonl", hundred);
  validation.fraction = 0.07;
  EXPECT_EQ(load_train_validation(options, validation, byte_).validation->size(), 7);

  // The subset is chosen first, then split.
  options.path = Write("t.jsonl", TenTexts());
  options.max_examples = 4;
  validation.fraction = 0.5;
  const TrainValidationData small = load_train_validation(options, validation, byte_);
  EXPECT_EQ(small.train->size(), 2);
  EXPECT_EQ(small.validation->size(), 2);
  EXPECT_EQ(small.train->stats().not_selected, 8);
}

TEST_F(FileDatasetTest, ValidationFromAFileAndNone) {
  auto options = Options("t.jsonl", TenTexts());
  options.max_examples = 2;
  ValidationOptions validation;
  validation.path =
      Write("v.jsonl", "{\"text\": \"v0\"}\n{\"text\": \"v1\"}\n{\"text\": \"v2\"}\n");
  const TrainValidationData data = load_train_validation(options, validation, byte_);
  EXPECT_EQ(Texts(*data.train), (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(Texts(*data.validation), (std::vector<std::string>{"v0", "v1", "v2"}));
  EXPECT_EQ(load_train_validation(options, ValidationOptions{}, byte_).validation, nullptr);
}

TEST_F(FileDatasetTest, ValidationErrors) {
  auto options = Options("t.jsonl", "{\"text\": \"a\"}\n");
  const auto error = [&](double fraction, const std::string& path) -> std::string {
    ValidationOptions validation;
    validation.fraction = fraction;
    validation.path = path;
    try {
      load_train_validation(options, validation, byte_);
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error(0.5, ""),
            options.path + ": validation fraction 0.5 of 1 example leaves no training example");
  EXPECT_EQ(error(1.0, ""),
            options.path + ": validation fraction: must be a number in [0, 1), found 1");
  EXPECT_EQ(error(0.1, "v.jsonl"),
            options.path + ": validation: give a fraction (0.1) or a file (v.jsonl), not both");
}

TEST_F(FileDatasetTest, StatsAreExact) {
  // Lengths (BOS and EOS included): 3, 4, 5, 6, 12.
  auto options = Options("t.jsonl",
                         "{\"text\": \"a\"}\n{\"text\": \"ab\"}\n{\"text\": \"abc\"}\n"
                         "{\"text\": \"abcd\"}\n{\"text\": \"abcdefghij\"}\n");
  FileDataset dataset(options, byte_);
  const DataFileStats& s = dataset.stats();
  EXPECT_EQ(s.records, 5);
  EXPECT_EQ(s.examples, 5);
  EXPECT_EQ(s.tokens, 30);
  EXPECT_EQ(s.loss_tokens, 25);  // all but each BOS
  EXPECT_DOUBLE_EQ(s.mean_length, 6.0);
  EXPECT_DOUBLE_EQ(s.p50_length, 5.0);
  EXPECT_DOUBLE_EQ(s.p90_length, 6.0 + 0.6 * 6.0);  // numpy linear: rank 3.6
  EXPECT_EQ(s.max_length, 12);
  EXPECT_DOUBLE_EQ(s.masked_fraction, 5.0 / 30.0);
  EXPECT_EQ(s.truncated + s.dropped_too_long + s.skipped_bad + s.not_selected, 0);
  EXPECT_EQ(dataset.description(), "file(path=" + options.path + ", format=text, n=5)");
}

TEST_F(FileDatasetTest, ByteOrderMarkCrLfAndBlankLines) {
  auto options = Options("t.jsonl", "\xEF\xBB\xBF{\"text\": \"a\"}\r\n\r\n  \n{\"text\": 5}\r\n");
  const std::string path = options.path;
  EXPECT_EQ(Error("t.jsonl", "\xEF\xBB\xBF{\"text\": \"a\"}\r\n\r\n  \n{\"text\": 5}\r\n"),
            path + ":4: text: expected a string, found 5");
  options.path = Write("u.jsonl", "\xEF\xBB\xBF{\"text\": \"a\"}\r\n\r\n{\"text\": \"b\"}\r\n");
  EXPECT_EQ(Texts(FileDataset(options, byte_)), (std::vector<std::string>{"a", "b"}));
}

TEST_F(FileDatasetTest, ErrorMessagesNameFileLineAndField) {
  const std::string jsonl = (dir_ / "e.jsonl").string();
  const auto alpaca = [] {
    DataFileOptions o;
    o.format = "alpaca";
    return o;
  }();
  EXPECT_EQ(Error("e.jsonl", "{\"text\": \"a\"}\n{\"instruction\": \"x\"}\n", alpaca),
            jsonl + ":1: missing required key \"instruction\"");
  EXPECT_EQ(Error("e.jsonl", "{\"instruction\": \"x\"}\n"),
            jsonl + ":1: missing required key \"output\"");
  EXPECT_EQ(Error("e.jsonl", "{\"instruction\": \"x\", \"input\": [1], \"output\": \"y\"}\n"),
            jsonl + ":1: input: expected a string or null, found an array");
  EXPECT_EQ(Error("e.jsonl", "\n{\"text\": \"a\"}\n{\"text\": \"a\"\n"),
            jsonl +
                ":3: malformed JSON at column 13: syntax error while parsing object - "
                "unexpected end of input; expected '}'");
  EXPECT_EQ(Error("e.jsonl", "{\"text\": \"a\"}\n{\"text\": \"a\xff\"}\n"),
            jsonl + ":2: invalid UTF-8 at column 12 (byte 0xff)");
  EXPECT_EQ(Error("e.jsonl", "{\"text\": \"\xe2\x82\"}\n"),
            jsonl + ":1: invalid UTF-8 at column 11 (byte 0xe2)");
  EXPECT_EQ(Error("e.jsonl", "{\"text\": \"a\"} {\"text\": \"b\"}\n"),
            jsonl +
                ":1: malformed JSON at column 15: syntax error while parsing value - "
                "unexpected '{'; expected end of input");
  EXPECT_EQ(Error("e.jsonl", "{\"text\": \"a\"}\n\"just a string\"\n"),
            jsonl + ":2: expected a JSON object, found \"just a string\"");
  EXPECT_EQ(Error(
                "e.jsonl", "{\"text\": \"a\"}\n{\"text\": \"" + std::string(50, 'x') + "\"}\n",
                [] {
                  DataFileOptions o;
                  o.format = "chat";
                  return o;
                }(),
                &chat_),
            jsonl + ":1: missing required key \"messages\"");
  EXPECT_EQ(Error("e.jsonl", "{\"id\": 1, \"prompt\": \"p\"}\n"),
            jsonl +
                ":1: cannot tell the data format from the keys \"id\", \"prompt\": expected "
                "messages (chat), input_ids (tokenized), instruction (alpaca) or text "
                "(text); or set the format");
  EXPECT_EQ(Error("e.jsonl", "{}\n"),
            jsonl +
                ":1: cannot tell the data format from the keys of an empty object: expected "
                "messages (chat), input_ids (tokenized), instruction (alpaca) or text "
                "(text); or set the format");
  EXPECT_EQ(Error("e.jsonl", ""), jsonl + ": the file has no records");
  EXPECT_EQ(Error("e.jsonl", "\n \n"), jsonl + ": the file has no records");
  const std::string missing = (dir_ / "missing.jsonl").string();
  DataFileOptions absent;
  absent.path = missing;
  try {
    FileDataset dataset(absent, byte_);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read: No such file or directory");
  }
}

TEST_F(FileDatasetTest, ChatErrorMessages) {
  const std::string path = (dir_ / "c.jsonl").string();
  const auto chat = [&](const std::string& messages) {
    return Error("c.jsonl", "{\"messages\": " + messages + "}\n", {}, &chat_);
  };
  EXPECT_EQ(chat("[]"),
            path + ":1: messages: expected a non-empty array of messages, found an empty array");
  EXPECT_EQ(chat("\"hi\""),
            path + ":1: messages: expected a non-empty array of messages, found \"hi\"");
  EXPECT_EQ(chat("[{\"role\": \"user\", \"content\": \"Q\"}, 3]"),
            path + ":1: messages[1]: expected an object, found 3");
  EXPECT_EQ(chat("[{\"content\": \"Q\"}]"),
            path + ":1: messages[0]: missing required key \"role\"");
  EXPECT_EQ(chat("[{\"role\": \"user\"}]"),
            path + ":1: messages[0]: missing required key \"content\"");
  EXPECT_EQ(chat("[{\"role\": \"assistent\", \"content\": \"A\"}]"),
            path +
                ":1: messages[0].role: expected one of system, user, assistant, found "
                "\"assistent\"; did you mean \"assistant\"?");
  EXPECT_EQ(chat("[{\"role\": 1, \"content\": \"A\"}]"),
            path + ":1: messages[0].role: expected a string, found 1");
  EXPECT_EQ(chat("[{\"role\": \"assistant\", \"content\": null}]"),
            path + ":1: messages[0].content: expected a string, found null");
  EXPECT_EQ(chat("[{\"role\": \"user\", \"content\": \"Q\"}]"),
            path + ":1: messages: no assistant message, so nothing to train on");
}

TEST_F(FileDatasetTest, TokenizedErrorMessages) {
  const std::string path = (dir_ / "k.jsonl").string();
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, 259]}\n"),
            path + ":1: input_ids[1]: expected a token id in [0, 259), found 259");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, -1]}\n"),
            path + ":1: input_ids[1]: expected a token id in [0, 259), found -1");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, 2.0]}\n"),
            path + ":1: input_ids[1]: expected an integer token id, found 2.0");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": []}\n"),
            path + ":1: input_ids: expected a non-empty array of token ids, found an empty array");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, 2], \"labels\": [1]}\n"),
            path + ":1: labels: expected 2 labels (one per input id), found 1");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, 2], \"labels\": [1, 3]}\n"),
            path + ":1: labels[1]: expected -100 or the input id 2, found 3");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, 2], \"labels\": \"x\"}\n"),
            path + ":1: labels: expected an array of integers, found \"x\"");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1, 2], \"labels\": [1, -100]}\n"),
            path + ":1: labels: every label after the first is -100, so nothing to train on");
  EXPECT_EQ(Error("k.jsonl", "{\"input_ids\": [1]}\n"),
            path + ":1: no target token: the example has 1 token and none is trained on");
}

TEST_F(FileDatasetTest, JsonArrayErrorsNameLineAndRecordIndex) {
  const std::string path = (dir_ / "a.json").string();
  EXPECT_EQ(Error("a.json", "[\n  {\"text\": \"a\"},\n\n  {\"text\": 2}\n]\n"),
            path + ":4: record [1]: text: expected a string, found 2");
  EXPECT_EQ(Error("a.json", "[{\"text\": \"a\"}, 7]"),
            path + ":1: record [1]: expected a JSON object, found 7");
  EXPECT_EQ(Error("a.json", "[\n  {\"text\": \"a\"},\n  {\"text\": \"b\",}\n]\n"),
            path +
                ":3: malformed JSON at column 16: syntax error while parsing object key - "
                "unexpected '}'; expected string literal");
  EXPECT_EQ(Error("a.json", "[\n{\"text\": \"\xc0\xaf\"}]"),
            path + ":2: invalid UTF-8 at column 11 (byte 0xc0)");
  EXPECT_EQ(Error("a.json", "[]"), path + ": the file has no records");
  DataFileOptions skip;
  skip.on_error = "skip";
  EXPECT_EQ(Error("a.json", "[{\"text\": 1}, {\"text\": 2}]", skip),
            path + ": no usable example: 2 records, 2 skipped as bad, 0 dropped as too long");
}

// json::parse throws out_of_range, not parse_error, for a number beyond double's range; it is a
// bad record like any malformed JSON (found by fuzz/data_file.cpp).
TEST_F(FileDatasetTest, NumberBeyondDoubleIsMalformedJson) {
  EXPECT_EQ(Error("t.jsonl", "{\"text\": \"a\"}\n{\"text\": 1e309}\n"),
            (dir_ / "t.jsonl").string() + ":2: text: number out of range: 1e309");
  EXPECT_EQ(Error("a.json", "[{\"text\": 1e400}]"),
            (dir_ / "a.json").string() + ": [0].text: number out of range: 1e400");
}

// A record nested past text::kMaxJsonDepth is refused before parsing, as reports and
// tokenizer.json are: printing or copying such a value recurses once per level.
TEST_F(FileDatasetTest, ARecordNestedTooDeepIsRefusedBeforeParsing) {
  const std::string deep = "{\"text\": " + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_EQ(Error("t.jsonl", "{\"text\": \"a\"}\n" + deep + "\n"),
            (dir_ / "t.jsonl").string() +
                ":2: arrays or objects nested deeper than 128 levels (at byte 137)");
  EXPECT_EQ(Error("a.json", "[\n{\"text\": \"a\"},\n" + deep + "]"),
            (dir_ / "a.json").string() +
                ":3: arrays or objects nested deeper than 128 levels (at byte 153)");
}

TEST_F(FileDatasetTest, FromTextReadsTheTextAndNamesThePath) {
  DataFileOptions options;
  options.path = "in-memory.jsonl";
  const auto dataset = FileDataset::from_text("{\"text\": \"hi\"}\n", options, byte_);
  EXPECT_EQ(dataset->size(), 1);
  EXPECT_EQ(dataset->at(0).tokens, Cat({{ByteTokenizer::kBos}, Ids("hi"), {ByteTokenizer::kEos}}));
  EXPECT_EQ(dataset->description(), "file(path=in-memory.jsonl, format=text, n=1)");
}

TEST_F(FileDatasetTest, OptionErrors) {
  const std::string path = (dir_ / "t.jsonl").string();
  const std::string one = "{\"text\": \"a\"}\n";
  DataFileOptions options;
  options.format = "alpacca";
  EXPECT_EQ(Error("t.jsonl", one, options),
            path +
                ": format: expected one of auto, alpaca, chat, text, tokenized, found "
                "\"alpacca\"; did you mean \"alpaca\"?");
  options = {};
  options.too_long = "cut";
  EXPECT_EQ(Error("t.jsonl", one, options),
            path + ": too_long: expected one of truncate, drop, found \"cut\"");
  options = {};
  options.max_tokens = 1;
  EXPECT_EQ(Error("t.jsonl", one, options),
            path + ": max_tokens: must be an integer >= 2, found 1");
  options = {};
  options.max_examples = -1;
  EXPECT_EQ(Error("t.jsonl", one, options),
            path + ": max_examples: must be an integer >= 0, found -1");
}

// A record that gives a key twice was read with its last value, without a word (issue 39): it is
// a malformed record, named by file, line and key.
TEST_F(FileDatasetTest, ARecordThatGivesAKeyTwiceIsRefused) {
  EXPECT_EQ(Error("t.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\", \"text\": \"c\"}\n"),
            (dir_ / "t.jsonl").string() + ":2: text: a key given twice in one object");
  EXPECT_EQ(Error("a.json",
                  "[\n{\"instruction\": \"a\", \"output\": \"b\"},\n{\"instruction\": \"a\",\n"
                  " \"output\": \"b\", \"instruction\": \"c\"}\n]"),
            (dir_ / "a.json").string() + ":4: [1].instruction: a key given twice in one object");
  DataFileOptions skip;
  skip.on_error = "skip";
  skip.path = Write("s.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\", \"text\": \"c\"}\n");
  FileDataset dataset(skip, byte_);
  EXPECT_EQ(dataset.size(), 1);
}

}  // namespace
}  // namespace ftbench::data
