// End to end: hostile input (tests/hostile/ and variants made here) through the torch-free
// `ftbench` commands. Each case must end with its documented exit code and one clear message on
// stderr that names the file (and the key or line where there is one) and what was expected:
// no crash, no hang, no library's raw exception text, nothing on stdout. tests/hostile/README.md
// lists the corpus.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"
#include "hostile_gemm_corpus.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::Outcome;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;
using ftbench::e2e::shell_quote;
using ftbench::e2e::slurp;

const fs::path kSource = FTBENCH_SOURCE_DIR;
const fs::path kCorpus = kSource / "tests/hostile";
const fs::path kH100 = kSource / "tests/fixtures/reports/h100-reference.json";
const fs::path kMi300x = kSource / "tests/fixtures/reports/mi300x-reference.json";

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Text that only a crash, an escaped exception or a sanitizer writes: none may reach a user.
void expect_no_crash(const Outcome& r) {
  EXPECT_FALSE(r.timed_out) << "hung; stderr: " << r.err;
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << "; stderr: " << r.err;
  for (const char* text :
       {"terminate called", "Segmentation fault", "Aborted", "core dumped", "AddressSanitizer",
        "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:", "std::bad_alloc",
        "bad_alloc", "[json.exception", "yaml-cpp", "basic_string", "vector::_M", "stoi", "stoll",
        "what():", "an unexpected error"}) {
    EXPECT_EQ(r.err.find(text), std::string::npos) << "stderr has \"" << text << "\": " << r.err;
  }
}

// A refused input: exit code 2, nothing on stdout, stderr one "error: ..." naming what
// `expected` lists.
void expect_bad_input(const Outcome& r, const std::vector<std::string>& expected,
                      int exit_code = 2) {
  expect_no_crash(r);
  EXPECT_EQ(r.exit_code, exit_code) << "stderr: " << r.err << "\nstdout: " << r.out;
  EXPECT_EQ(r.out, "") << "stderr: " << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_LT(r.err.size(), 4096u) << "a flood, not a message: " << r.err.substr(0, 4096);
  for (const std::string& text : expected) {
    EXPECT_NE(r.err.find(text), std::string::npos) << "stderr lacks \"" << text << "\": " << r.err;
  }
}

// Files of a folder (names, sorted): what a failed command must leave as it found it.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    names.push_back(fs::relative(e.path(), dir).string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// One case: the command (shell text after `ftbench`), made from the scratch folder where a case
// may write its generated input, and what the error must name.
struct Case {
  std::string name;
  std::function<std::string(const fs::path& scratch)> command;
  std::vector<std::string> expected;
  int exit_code = 2;
};

std::string q(const fs::path& p) { return shell_quote(p.string()); }

std::string corpus(const std::string& relative) { return (kCorpus / relative).string(); }

// `ftbench validate` of a spec in the corpus.
Case spec_case(const std::string& file, std::vector<std::string> expected) {
  expected.insert(expected.begin(), "error: invalid run spec\n" + corpus("specs/" + file));
  return Case{"spec_" + file,
              [file](const fs::path&) { return "validate " + q(corpus("specs/" + file)); },
              std::move(expected)};
}

// `ftbench validate` of a generated spec.
Case generated_spec_case(const std::string& name, std::function<std::string()> bytes,
                         std::vector<std::string> expected) {
  return Case{"spec_" + name,
              [name, bytes](const fs::path& scratch) {
                write_bytes(scratch / (name + ".yaml"), bytes());
                return "validate " + q(scratch / (name + ".yaml"));
              },
              std::move(expected)};
}

// ci-tiny with a data file from the corpus: the file is read as the run would read it.
std::string validate_data_args(const std::string& path, const std::string& extra = "") {
  return "validate configs/ci-tiny.yaml --set data.source=file --set " +
         shell_quote("data.path=" + path) +
         " --set data.seq_len=512 --set data.max_tokens=512 --set data.min_tokens=2 "
         "--set train.micro_batch_size=1 --set train.grad_accum_steps=1 " +
         extra;
}

Case data_case(const std::string& file, std::vector<std::string> expected) {
  return Case{"data_" + file,
              [file](const fs::path&) { return validate_data_args(corpus("data/" + file)); },
              std::move(expected)};
}

Case generated_data_case(const std::string& name, std::function<std::string()> bytes,
                         std::vector<std::string> expected) {
  return Case{"data_" + name,
              [name, bytes](const fs::path& scratch) {
                write_bytes(scratch / (name + ".jsonl"), bytes());
                return validate_data_args((scratch / (name + ".jsonl")).string());
              },
              std::move(expected)};
}

Case tokenizer_case(const std::string& file, std::vector<std::string> expected) {
  return Case{"tokenizer_" + file,
              [file](const fs::path&) {
                return "tokenize --tokenizer " + q(corpus("tokenizers/" + file)) + " hello";
              },
              std::move(expected)};
}

// A SentencePiece model of fuzz/regressions/sentencepiece_model/ (binary, so kept with the fuzz
// target's inputs rather than in the corpus here).
std::string spm_regression(const std::string& name) {
  return (kSource / "fuzz/regressions/sentencepiece_model" / (name + ".model")).string();
}

std::string spm_leaf_past_strings_message() {
  return "SentencePiece model \"" + spm_regression("charsmap-leaf-past-strings") +
         "\": normalizer_spec.precompiled_charsmap: trie unit 1 (reached by the bytes 41): "
         "expected its leaf to point into the 4 bytes of replacement strings, found offset "
         "8388610";
}

Case catalog_case(const std::string& file, std::vector<std::string> expected) {
  return Case{
      "catalog_" + file,
      [file](const fs::path&) { return "catalog --catalog " + q(corpus("catalogs/" + file)); },
      std::move(expected)};
}

// `ftbench cost` of a report: the fixture with `edit` applied to its JSON text.
Case report_case(const std::string& name, std::function<std::string(std::string)> edit,
                 std::vector<std::string> expected) {
  return Case{"report_" + name,
              [name, edit](const fs::path& scratch) {
                const fs::path path = scratch / (name + ".json");
                write_bytes(path, edit(slurp(kH100)));
                return "cost " + q(path) + " --rate 2.5 --billing per-second";
              },
              std::move(expected)};
}

// The fixture's JSON, changed by `edit`, as text.
std::function<std::string(std::string)> json_edit(std::function<void(nlohmann::json&)> edit) {
  return [edit](std::string text) {
    nlohmann::json j = nlohmann::json::parse(text);
    edit(j);
    return j.dump(2);
  };
}

// The first `"key": <number>` in `text` with its number replaced by `value` (raw JSON text).
std::function<std::string(std::string)> number_text(const std::string& key,
                                                    const std::string& value) {
  return [key, value](std::string text) {
    const std::string needle = "\"" + key + "\": ";
    const std::size_t at = text.find(needle);
    if (at == std::string::npos) return std::string("key not in the fixture: ") + key;
    const std::size_t start = at + needle.size();
    const std::size_t end = text.find_first_of(",\n}", start);
    return text.replace(start, end - start, value);
  };
}

std::string repeated(const std::string& piece, std::size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (std::size_t i = 0; i < times; ++i) out += piece;
  return out;
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xFF);
  return out;
}

std::vector<Case> cases() {
  const std::string alpaca = R"({"instruction": "Say hi", "input": "", "output": "hi"})";
  return {
      // ---- run specs (ftbench validate) ----
      spec_case("yaml-syntax-error.yaml", {":5: invalid YAML: "}),
      spec_case("tab-indentation.yaml", {":3: invalid YAML: "}),
      spec_case("wrong-types.yaml",
                {":3: model.preset: expected a string", ":5: lora.rank: expected an integer",
                 ":6: lora.targets: expected a list", ":8: data.seq_len: expected an integer",
                 ":10: train.lr: expected a number", ":11: train.epochs: expected an integer"}),
      spec_case("not-a-mapping.yaml", {":2: expected a mapping of sections"}),
      spec_case("unknown-keys.yaml", {":5: lora.rnak: unknown key \"rnak\"; did you mean \"rank\"?",
                                      ":6: optimiser: unknown section"}),
      spec_case("huge-numbers.yaml", {":5: data.seq_len: ", ":8: train.micro_batch_size: ",
                                      ":9: train.lr: ", ":10: train.epochs: "}),
      spec_case("negative-sizes.yaml",
                {":5: lora.rank: must be an integer >= 1, found -8",
                 ":7: data.seq_len: must be an integer >= 2, found -128",
                 ":10: train.micro_batch_size: must be an integer >= 1, found -4"}),
      spec_case("duplicate-keys.yaml",
                {":6: lora.rank: duplicate key \"rank\" (first given at line 5)"}),
      spec_case("billion-laughs.yaml", {":2: a: unknown section \"a\""}),
      spec_case("alias-bomb-in-known-key.yaml",
                {":7: train.lr: expected a number, found a list",
                 ":9: backend.device: expected a string, found a list"}),
      spec_case("undefined-alias.yaml", {":3: invalid YAML: "}),
      // Counts that do not fit, and files that are not one spec (issue 14, items 1 and 15).
      spec_case("overflowing-epochs.yaml",
                {":5: train.epochs: 4 steps per epoch x 4611686018427387904 epochs = more than "
                 "2^63 optimizer steps; a run has at most 1,000,000 optimizer steps"}),
      spec_case("huge-counts.yaml",
                {":3: data.num_examples: must be an integer <= 16777216 (synthetic examples are "
                 "generated before the first step), found 9223372036854775807"}),
      spec_case("overflowing-batch.yaml",
                {":3: train.micro_batch_size: train.micro_batch_size x train.grad_accum_steps = "
                 "4611686018427387904 x 4 is more than 2^63 examples per optimizer step"}),
      spec_case("custom-shape-2-62.yaml",
                {":4: model.dim: must be an integer <= 16777216",
                 ":5: model.n_layers: must be an "
                 "integer <= 4096",
                 ":8: model.ffn_dim: must be an integer <= 16777216",
                 ":9: model.vocab_size: must be an integer <= 16777216",
                 ":10: model.max_seq_len: must be an integer <= 16777216"}),
      spec_case("second-document.yaml",
                {":4: a second YAML document (after \"---\"): a spec is one document; only the "
                 "first would be read"}),
      spec_case("empty.yaml", {": the spec is empty: expected a mapping of sections"}),
      spec_case("comments-only.yaml",
                {": the spec is empty (only comments): expected a mapping of sections"}),
      Case{"spec_dev_zero",
           [](const fs::path&) { return std::string("validate /dev/zero"); },
           {"/dev/zero: cannot read file: a character device (such as /dev/zero or a terminal), "
            "not a file"}},
      generated_spec_case("binary-garbage", [] { return random_bytes(4096, 7); },
                          {"binary-garbage.yaml:1: invalid YAML: "}),
      generated_spec_case("nul-bytes", [] { return std::string("model:\n  preset: ti\0ny\n", 22); },
                          {"nul-bytes.yaml:2: model.preset: ", "found \"ti\\x"}),
      generated_spec_case("invalid-utf8",
                          [] { return std::string("model:\n  preset: \xC3\x28\xFF\n"); },
                          {"invalid-utf8.yaml:2: model.preset: ", "found \"\\xC3(\\xFF\""}),
      generated_spec_case(
          // One bracket a line: a line of 100,000 is refused before the parser (spec_long_value).
          "deep-nesting", [] { return repeated("[\n", 100000); },
          {"deep-nesting.yaml:100001: invalid YAML: lists or mappings nested too deeply"}),
      generated_spec_case(
          "deep-mapping", [] { return repeated("{a: \n", 100000); },
          {"deep-mapping.yaml:100001: invalid YAML: lists or mappings nested too deeply"}),
      generated_spec_case(
          "long-line", [] { return "output:\n  name: " + std::string(60'000, 'n') + "\n"; },
          {"long-line.yaml:2: output.name: must be at most 200 characters, found 60000"}),
      generated_spec_case(
          "long-value", [] { return "output:\n  name: " + std::string(200'000, 'n') + "\n"; },
          {"long-value.yaml:2: 200008 bytes on one line; a spec line holds at most 65536"}),
      generated_spec_case(
          "huge", [] { return "output:\n  name: " + std::string(8 << 20, 'n') + "\n"; },
          {"huge.yaml: cannot read file: 8388625 bytes; a run spec holds at most 1 MiB"}),
      Case{"spec_directory",
           [](const fs::path& scratch) {
             fs::create_directory(scratch / "folder.yaml");
             return "validate " + q(scratch / "folder.yaml");
           },
           {"folder.yaml: cannot read file: Is a directory"}},
      Case{"spec_missing",
           [](const fs::path& scratch) { return "validate " + q(scratch / "absent.yaml"); },
           {"absent.yaml: cannot read file: No such file or directory"}},
      Case{"spec_bad_override",
           [](const fs::path&) {
             return "validate configs/ci-tiny.yaml --set 'lora.rank=[1' --set train.lr=1e999";
           },
           {"--set: lora.rank: cannot parse value \"[1\" as YAML", "--set: train.lr: "}},

      // ---- data files (ftbench validate reads them as the run would) ----
      data_case("broken-json.jsonl", {"data/broken-json.jsonl:2: malformed JSON at column"}),
      data_case("missing-field.jsonl",
                {"data/missing-field.jsonl:2: ", "missing required key \"output\""}),
      data_case("wrong-type.jsonl",
                {"data/wrong-type.jsonl:2: ", "output: expected a string, found 123"}),
      data_case("not-an-object.jsonl",
                {"data/not-an-object.jsonl:2: expected a JSON object, found"}),
      data_case("mixed-formats.jsonl",
                {"data/mixed-formats.jsonl:2: missing required key \"text\""}),
      data_case("text-wrong-type.jsonl",
                {"data/text-wrong-type.jsonl:2: text: expected a string, found an array"}),
      data_case("tokenized-huge-id.jsonl",
                {"data/tokenized-huge-id.jsonl:1: input_ids[2]: expected an integer token id, "
                 "found 1e+20"}),
      // Checked against the model's vocabulary (ci-tiny: 320), not a tokenizer's.
      data_case("tokenized-negative-id.jsonl",
                {"data/tokenized-negative-id.jsonl:1: input_ids[2]: expected a token id in [0, "
                 "320), found -5"}),
      data_case("empty.jsonl", {"data/empty.jsonl: the file has no records"}),
      data_case("truncated-alpaca.json",
                {"data/truncated-alpaca.json:4: malformed JSON at column 54: "}),
      // A key given twice: nlohmann kept the last value without a word (issue 39).
      data_case("duplicate-key.jsonl",
                {"data/duplicate-key.jsonl:2: output: a key given twice in one object"}),
      data_case("duplicate-key-array.json",
                {"data/duplicate-key-array.json:4: [1].instruction: a key given twice in one "
                 "object"}),
      generated_data_case("invalid-utf8",
                          [alpaca] {
                            return alpaca + "\n" +
                                   R"({"instruction": "x", "input": "", "output": "caf)" +
                                   std::string("\xE9") + "\"}\n";
                          },
                          {"invalid-utf8.jsonl:2: invalid UTF-8 at column "}),
      generated_data_case(
          "nul-byte", [alpaca] { return alpaca + "\n" + std::string("{\"instr\0", 8) + "\n"; },
          {"nul-byte.jsonl:2: malformed JSON at column 8: ", "(NUL) must be escaped"}),
      generated_data_case("binary-garbage", [] { return random_bytes(4096, 11); },
                          {"binary-garbage.jsonl:1: invalid UTF-8 at column "}),
      generated_data_case(
          "deep-nesting", [] { return repeated("[", 100000) + "\n"; },
          // Refused before parsing, as reports and tokenizer.json are (text::kMaxJsonDepth).
          {"deep-nesting.jsonl:1: arrays or objects nested deeper than 128 levels (at byte 129)"}),
      generated_data_case(
          "long-line",
          [alpaca] {
            return alpaca + "\n{\"instruction\": \"" + std::string(64 << 20, 'x') + "\n";
          },
          {"long-line.jsonl: cannot read: line 2 is longer than 64 MiB; a line of a JSON Lines "
           "data file holds at most that"}),
      Case{"data_dev_zero",
           [](const fs::path&) { return validate_data_args("/dev/zero"); },
           {"data.path: /dev/zero: cannot read: a character device (such as /dev/zero or a "
            "terminal), not a file"}},
      Case{"data_directory",
           [](const fs::path& scratch) {
             fs::create_directory(scratch / "folder.jsonl");
             return validate_data_args((scratch / "folder.jsonl").string());
           },
           {"folder.jsonl: cannot read: Is a directory"}},
      Case{"data_missing",
           [](const fs::path& scratch) {
             return validate_data_args((scratch / "absent.jsonl").string());
           },
           // Refused before reading, as the run refuses it (check_named_files).
           {"data.path: ", "absent.jsonl: no such file or folder"}},

      // ---- tokenizer.json files (ftbench tokenize) ----
      tokenizer_case("truncated.json", {"tokenizers/truncated.json: invalid JSON at byte"}),
      tokenizer_case(
          "not-json.json",
          {"tokenizers/not-json.json: invalid JSON at byte 2: syntax error while parsing "
           "value - invalid literal; last read: 'th'"}),
      tokenizer_case("empty.json", {"tokenizers/empty.json: invalid JSON at byte"}),
      tokenizer_case("top-level-array.json",
                     {"tokenizers/top-level-array.json: expected a JSON object at the top"}),
      tokenizer_case("no-model.json", {"tokenizers/no-model.json: model: missing"}),
      tokenizer_case("wordpiece.json",
                     {"tokenizers/wordpiece.json: model.type: \"WordPiece\" is not supported"}),
      tokenizer_case("vocab-not-object.json",
                     {"tokenizers/vocab-not-object.json: model.vocab: missing or not an object"}),
      tokenizer_case("negative-id.json",
                     {"tokenizers/negative-id.json: model.vocab[\"a\"]: expected a non-negative "
                      "id, found -3"}),
      tokenizer_case("id-not-integer.json",
                     {"tokenizers/id-not-integer.json: model.vocab[\"a\"]: expected a "
                      "non-negative id, found \"zero\""}),
      tokenizer_case("type-not-string.json",
                     {"tokenizers/type-not-string.json: model: expected an object with a string "
                      "\"type\", found a \"type\" that is a number"}),
      tokenizer_case("missing-byte-tokens.json",
                     {"tokenizers/missing-byte-tokens.json: model.vocab: no token"}),
      tokenizer_case("merge-not-in-vocab.json",
                     {"tokenizers/merge-not-in-vocab.json: model.merges[0]: merged token \"ab\" "
                      "is not in model.vocab"}),
      tokenizer_case("merge-unknown-token.json",
                     {"tokenizers/merge-unknown-token.json: model.merges[0]: right token \"zz\" "
                      "is not in model.vocab"}),
      tokenizer_case("duplicate-vocab-key.json",
                     {"tokenizers/duplicate-vocab-key.json: model.vocab.a: a key given twice in "
                      "one object"}),
      tokenizer_case("merges-not-array.json",
                     {"tokenizers/merges-not-array.json: model.merges: missing or not an array"}),
      // Sized the id table to 2^31 strings (issue 14, item 6).
      tokenizer_case("huge-id-gap.json",
                     {"tokenizers/huge-id-gap.json: model.vocab[\"zz\"]: id 2147483647 is far "
                      "beyond the tokenizer's 257 tokens (257 in model.vocab, 0 in added_tokens)"}),
      // ---- SentencePiece .model files (issue 39) ----
      // One changed byte of a trained model (fuzz/regressions/sentencepiece_model/: the leaf of
      // "A" points 8 MB past the replacement strings) made SentencePiece's normalizer read
      // there: SIGSEGV in `tokenize` and in `validate` as soon as a text held an "A".
      Case{"spm_charsmap_leaf_past_strings_tokenize",
           [](const fs::path&) {
             return "tokenize --tokenizer " + q(spm_regression("charsmap-leaf-past-strings")) +
                    " 'A cat'";
           },
           {spm_leaf_past_strings_message()}},
      Case{"spm_charsmap_leaf_past_strings_validate",
           [](const fs::path& scratch) {
             write_bytes(scratch / "alpaca.jsonl",
                         "{\"instruction\": \"A cat\", \"input\": \"\", \"output\": \"A\"}\n");
             return validate_data_args(
                 (scratch / "alpaca.jsonl").string(),
                 "--set " + q("data.tokenizer=" + spm_regression("charsmap-leaf-past-strings")));
           },
           {spm_leaf_past_strings_message()}},
      Case{"spm_charsmap_children_past_trie_tokenize",
           [](const fs::path&) {
             // U+3000, the ideographic space, is E3 80 80.
             return "tokenize --tokenizer " + q(spm_regression("charsmap-children-past-trie")) +
                    " 'A\xE3\x80\x80"
                    "cat'";
           },
           {"SentencePiece model \"" + spm_regression("charsmap-children-past-trie") +
            "\": normalizer_spec.precompiled_charsmap: trie unit 3 (reached by the bytes E3 80): "
            "expected its children's units 48896 to 49151 inside the trie, found a trie of 256 "
            "units"}},
      Case{"tokenizer_dev_zero",
           [](const fs::path&) { return std::string("tokenize --tokenizer /dev/zero hello"); },
           {"/dev/zero: cannot be read: a character device"}},
      Case{
          "tokenize_dev_zero_input",
          [](const fs::path&) { return std::string("tokenize --tokenizer byte --file /dev/zero"); },
          {"/dev/zero: cannot be read: a character device"}},
      // The file's own strings in the message are escaped: it cannot drive the terminal.
      Case{"tokenizer_escapes_in_names",
           [](const fs::path& scratch) {
             write_bytes(scratch / "esc.json",
                         R"({"model": {"type": "BPE", "vocab": {"\u001b]0;x\u0007": -3}, )"
                         R"("merges": []}})");
             return "tokenize --tokenizer " + q(scratch / "esc.json") + " hello";
           },
           {"esc.json: model.vocab[\"\\x1B]0;x\\x07\"]: expected a non-negative id, found -3"}},
      Case{"tokenizer_escapes_in_type",
           [](const fs::path& scratch) {
             write_bytes(scratch / "esc.json",
                         R"({"model": {"type": "BPE\u001b[2J\u009b", "vocab": {}, "merges": []}})");
             return "tokenize --tokenizer " + q(scratch / "esc.json") + " hello";
           },
           {"esc.json: model.type: \"BPE\\x1B[2J\\u009B\" is not supported"}},
      Case{"tokenizer_deep_id",
           [](const fs::path& scratch) {
             write_bytes(scratch / "deep.json", R"({"model": {"type": "BPE", "vocab": {"a": )" +
                                                    repeated("[", 200000) + repeated("]", 200000) +
                                                    "}, \"merges\": []}}");
             return "tokenize --tokenizer " + q(scratch / "deep.json") + " hello";
           },
           {"deep.json: arrays or objects nested deeper than 128 levels (at byte "}},
      Case{"compare_deep_report",
           [](const fs::path& scratch) {
             std::string text = slurp(kMi300x);
             text.insert(text.find("\"spec\": {") + 8, "{\"x\": " + repeated("{\"a\": ", 1000) +
                                                           "1" + repeated("}", 1000) + ", \"y\": ");
             write_bytes(scratch / "deep.json", text);
             return "compare " + q(kH100) + " " + q(scratch / "deep.json");
           },
           {"deep.json: not a readable report: arrays or objects nested deeper than 128 levels"}},
      Case{"tokenizer_directory_without_file",
           [](const fs::path& scratch) {
             fs::create_directory(scratch / "model");
             return "tokenize --tokenizer " + q(scratch / "model") + " hello";
           },
           {"model/tokenizer.json: no such file"}},
      Case{"tokenizer_missing",
           [](const fs::path& scratch) {
             return "tokenize --tokenizer " + q(scratch / "absent.json") + " hello";
           },
           {"absent.json: no such file or folder"}},
      Case{"tokenize_missing_input_file",
           [](const fs::path& scratch) {
             return "tokenize --tokenizer byte --file " + q(scratch / "absent.txt");
           },
           {"absent.txt: cannot be read"}},

      // ---- catalogs (ftbench catalog --catalog) ----
      catalog_case("yaml-syntax-error.yaml", {"catalogs/yaml-syntax-error.yaml:4: invalid YAML"}),
      catalog_case("wrong-types.yaml",
                   {"catalogs/wrong-types.yaml:6: offers[0].usd_per_gpu_hour: expected a number, "
                    "found \"cheap\"",
                    "catalogs/wrong-types.yaml:7: offers[0].gpus_per_instance: expected an "
                    "integer, found a list"}),
      catalog_case("negative-price.yaml",
                   {"catalogs/negative-price.yaml:6: offers[0].usd_per_gpu_hour: expected a "
                    "finite number > 0, found \"-2.5\""}),
      catalog_case("unknown-section.yaml",
                   {"catalogs/unknown-section.yaml:1: ", "did you mean \"offers\"?"}),
      catalog_case("duplicate-keys.yaml",
                   {"catalogs/duplicate-keys.yaml:7: offers[0].usd_per_gpu_hour: duplicate key "
                    "\"usd_per_gpu_hour\" (first given at line 6)"}),
      catalog_case("alias-bomb.yaml",
                   {"catalogs/alias-bomb.yaml:5: gpus[1].aliases: expected a list of strings"}),
      catalog_case("huge-price.yaml",
                   {"catalogs/huge-price.yaml:6: offers[0].usd_per_gpu_hour: expected a finite "
                    "number > 0, found \"1.0e999\""}),
      catalog_case("bad-date.yaml",
                   {"catalogs/bad-date.yaml:8: offers[0].date: expected a calendar date "
                    "YYYY-MM-DD, found \"2026-02-30\""}),
      catalog_case("missing-column.csv",
                   {"catalogs/missing-column.csv:1: missing required column AcceleratorCount"}),
      catalog_case("ragged-row.csv",
                   {"catalogs/ragged-row.csv:3: expected 5 fields as in the header, found 3"}),
      catalog_case("bad-price.csv",
                   {"catalogs/bad-price.csv:2: column Price: expected a finite number >= 0, found "
                    "\"ninety\"",
                    "catalogs/bad-price.csv:3: column Price: expected a finite number >= 0, found "
                    "\"-4\"",
                    "catalogs/bad-price.csv:4: column Price: expected a finite number >= 0, found "
                    "\"inf\""}),
      // One malformed column of every row: ten lines and a count, not 5,000 lines (issue 39).
      catalog_case("malformed-column.csv",
                   {"catalogs/malformed-column.csv:2: column Price: expected a finite number >= "
                    "0, found \"N/A\"",
                    "catalogs/malformed-column.csv:11: column Price",
                    "catalogs/malformed-column.csv: 4990 more problems on lines 12 to 5001: 4990 "
                    "x column Price: expected a finite number >= 0"}),
      catalog_case("unclosed-quote.csv",
                   {"catalogs/unclosed-quote.csv:2: quoted field not closed"}),
      catalog_case("empty.csv", {"catalogs/empty.csv:1: empty file: expected a header row"}),
      // Values the reader took and billing (or the JSON writer) refused later, with exit 3 or
      // an error naming the report instead of the catalog.
      catalog_case("absurd-price.yaml",
                   {"catalogs/absurd-price.yaml:4: providers[0].min_billed_seconds: must be an "
                    "integer between 0 and 31622400 (366 days), found 9223372036854775807",
                    "catalogs/absurd-price.yaml:10: offers[0].usd_per_gpu_hour: expected a price "
                    "per GPU-hour from 0.0001 to 1000000, found \"1.0e300\"",
                    "catalogs/absurd-price.yaml:17: offers[1].usd_per_instance_hour: expected a "
                    "price per GPU-hour from 0.0001 to 1000000, found \"5.0e-324\" for 8 GPUs (0 "
                    "per GPU-hour)",
                    "catalogs/absurd-price.yaml:25: offers[2].min_billed_seconds: must be an "
                    "integer between 0 and 31622400 (366 days), found 9223372036854775807"}),
      catalog_case("absurd-price.csv",
                   {"catalogs/absurd-price.csv:2: column Price: expected a price per GPU-hour "
                    "from 0.0001 to 1000000, found \"1e300\" for 8 GPUs (1.25e+299 per GPU-hour)",
                    "catalogs/absurd-price.csv:3: column SpotPrice: expected a price per "
                    "GPU-hour from 0.0001 to 1000000, found \"5e-324\" for 8 GPUs (0 per "
                    "GPU-hour)"}),
      Case{"catalog_invalid_utf8_yaml",
           [](const fs::path& scratch) {
             write_bytes(scratch / "latin1.yaml",
                         "offers:\n  - provider: p\n    gpu: H100-SXM\n    tier: on-demand\n"
                         "    source: \"x\"\n    billing: per-second\n"
                         "    usd_per_gpu_hour: 2.5\n    region: \"caf\xE9\"\n");
             return "catalog --catalog " + q(scratch / "latin1.yaml") + " --format json";
           },
           {"latin1.yaml:8: offers[0].region: expected UTF-8 text, found \"caf\\xE9\" (byte 4 "
            "is not UTF-8"}},
      Case{"catalog_invalid_utf8_csv",
           [](const fs::path& scratch) {
             write_bytes(scratch / "latin1.csv",
                         "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n"
                         "p5\xFF,H100,8,98.32,us-east-1\n");
             return "cost " + q(kH100) + " --catalog " + q(scratch / "latin1.csv") +
                    " --format json";
           },
           {"latin1.csv:2: column InstanceType: expected UTF-8 text, found \"p5\\xFF\" (byte 3 "
            "is not UTF-8"}},
      Case{"catalog_binary_garbage",
           [](const fs::path& scratch) {
             write_bytes(scratch / "garbage.yaml", random_bytes(4096, 13));
             return "catalog --catalog " + q(scratch / "garbage.yaml");
           },
           {"garbage.yaml"}},
      Case{"catalog_directory",
           [](const fs::path& scratch) {
             fs::create_directory(scratch / "cat.yaml");
             return "catalog --catalog " + q(scratch / "cat.yaml");
           },
           {"cat.yaml: is a folder, not a catalog file"}},
      Case{"catalog_dev_zero",
           [](const fs::path&) { return std::string("catalog --catalog /dev/zero"); },
           {"/dev/zero: cannot read file: a character device"}},
      Case{"catalog_missing",
           [](const fs::path& scratch) {
             return "cost " + q(kH100) + " --catalog " + q(scratch / "absent.yaml");
           },
           {"absent.yaml: "}},

      // ---- reports (ftbench cost and compare) ----
      report_case("future-schema",
                  json_edit([](nlohmann::json& j) { j["schema"] = "ftbench.report/2.0"; }),
                  {"future-schema.json: unsupported report schema \"ftbench.report/2.0\""}),
      report_case("schema-number", json_edit([](nlohmann::json& j) { j["schema"] = 1.2; }),
                  {"schema-number.json: schema: expected a string"}),
      report_case("no-schema", json_edit([](nlohmann::json& j) { j.erase("schema"); }),
                  {"no-schema.json: not an ftbench report (no \"schema\" field)"}),
      report_case("name-number", json_edit([](nlohmann::json& j) { j["run"]["name"] = 5; }),
                  {"name-number.json: run.name: expected a string, found number"}),
      report_case("steps-string", json_edit([](nlohmann::json& j) { j["steps"] = "many"; }),
                  {"steps-string.json: steps: expected an array, found string"}),
      report_case("step-seconds-string",
                  json_edit([](nlohmann::json& j) { j["steps"][3]["wall_seconds"] = "0.5"; }),
                  {"step-seconds-string.json: steps[3].wall_seconds: expected a number, found "
                   "string"}),
      report_case("negative-duration",
                  json_edit([](nlohmann::json& j) { j["steps"][2]["wall_seconds"] = -1.0; }),
                  {"negative-duration.json: steps[2].wall_seconds: expected a number >= 0"}),
      report_case("nan-literal", number_text("wall_seconds", "NaN"),
                  {"nan-literal.json: not valid JSON at byte"}),
      report_case("infinity-literal", number_text("wall_seconds", "Infinity"),
                  {"infinity-literal.json: not valid JSON at byte"}),
      report_case("overflowing-double", number_text("wall_seconds", "1e999"),
                  {"overflowing-double.json: not a readable report: steps[0].wall_seconds: number "
                   "out of range: 1e999"}),
      report_case("overflowing-integer", number_text("tokens", "99999999999999999999999"),
                  {"overflowing-integer.json: data.tokens: expected an integer, found number"}),
      report_case("empty", [](std::string) { return std::string(); },
                  {"empty.json: not valid JSON at byte"}),
      report_case("array", [](std::string) { return std::string("[1, 2, 3]"); },
                  {"array.json: not an ftbench report (expected a JSON object, found array)"}),
      report_case("nul-bytes", [](std::string text) { return text.replace(100, 1, 1, '\0'); },
                  {"nul-bytes.json: not valid JSON at byte 101"}),
      // The parser stops at a NUL as at the end: what follows was ignored (found by a review).
      report_case("nul-then-garbage",
                  [](std::string text) { return text + std::string(1, '\0') + "garbage"; },
                  {"nul-then-garbage.json: not valid JSON at byte ",
                   ": a NUL byte, which no JSON text holds"}),
      report_case(
          "invalid-utf8",
          [](std::string text) { return text.replace(text.find("h100-reference"), 1, "\xFF"); },
          {"invalid-utf8.json: not valid JSON at byte"}),
      report_case("deep-nesting", [](std::string) { return repeated("[", 1000000); },
                  {"deep-nesting.json: "}),
      // Valid JSON nested 200,000 levels deep where the reader keeps a copy (the spec) or reads
      // a value (a variable): copying or printing it would recurse as deep.
      report_case("deep-spec",
                  [](std::string text) {
                    const std::size_t at = text.find("\"spec\": {") + 8;
                    return text.insert(at, "{\"deep\": " + repeated("[", 200000) +
                                               repeated("]", 200000) + ", \"was\": ");
                  },
                  {"deep-spec.json: not a readable report: arrays or objects nested deeper "
                   "than 128 levels (at byte "}),
      report_case("binary-garbage", [](std::string) { return random_bytes(1 << 16, 17); },
                  {"binary-garbage.json: not valid JSON at byte"}),
      // Figures that cannot all be true (docs/report-schema.md, Consistency): refused with the
      // file and the field, before anything is printed.
      report_case("steps-longer-than-run", json_edit([](nlohmann::json& j) {
                    for (nlohmann::json& step : j["steps"]) step["wall_seconds"] = 144.75;
                  }),
                  {"steps-longer-than-run.json: steps[].wall_seconds: the steps add up to "
                   "54281.25 s, more than the run's 1080 s"}),
      report_case("huge-step-time",
                  json_edit([](nlohmann::json& j) { j["steps"][5]["wall_seconds"] = 1e300; }),
                  {"huge-step-time.json: steps[5].wall_seconds: expected at most 31622400 s "
                   "(366 days), found 1e+300"}),
      report_case("huge-t0", json_edit([](nlohmann::json& j) {
                    j["timing"]["t0_before_process_seconds"] = 1e300;
                  }),
                  {"huge-t0.json: timing.t0_before_process_seconds: expected at most 2592000 s "
                   "(30 days), found 1e+300"}),
      report_case("negative-parameters",
                  json_edit([](nlohmann::json& j) { j["parameters"]["trainable"] = -11010048; }),
                  {"negative-parameters.json: parameters.trainable: expected an integer between "
                   "0 and 10^15, found -11010048"}),
      report_case("negative-data-tokens",
                  json_edit([](nlohmann::json& j) { j["data"]["tokens"] = -712345; }),
                  {"negative-data-tokens.json: data.tokens: expected an integer between 0 and "
                   "10^15, found -712345"}),
      report_case("negative-data-examples",
                  json_edit([](nlohmann::json& j) { j["data"]["examples"] = -2000; }),
                  {"negative-data-examples.json: data.examples: expected an integer between 0 "
                   "and 10^15, found -2000"}),
      report_case("step-in-missing-segment",
                  json_edit([](nlohmann::json& j) { j["steps"][10]["segment"] = 2; }),
                  {"step-in-missing-segment.json: steps[10].segment: segment 2 does not exist"}),
      report_case("duplicate-step-numbers",
                  json_edit([](nlohmann::json& j) { j["steps"][3]["step"] = 3; }),
                  {"duplicate-step-numbers.json: steps[3].step: expected step 4 (steps are "
                   "numbered 1, 2, ... in order, one record each), found 3"}),
      // More GPUs than billing takes (cost::kMaxGpus): the report's fault, not a failed run.
      report_case("huge-world-size",
                  json_edit([](nlohmann::json& j) { j["run"]["world_size"] = 2147483648LL; }),
                  {"huge-world-size.json: run.world_size: expected an integer between 1 and "
                   "65536, found 2147483648"}),
      // A throughput so low that the projection would never end, written over the measured
      // one: the reader holds it to the steps and names the field, not "duration must be >= 0
      // seconds, found inf".
      Case{"report_throughput_too_low_to_project",
           [](const fs::path& scratch) {
             nlohmann::json j = nlohmann::json::parse(slurp(kH100));
             j["summary"]["tokens_per_second"]["real"] = 1e-320;
             write_bytes(scratch / "slow.json", j.dump(2));
             return "cost " + q(scratch / "slow.json") + " --rate 2 --project-tokens 1M";
           },
           {"slow.json: summary.tokens_per_second.real: expected the measured steps' real_tokens "
            "/ wall_seconds = 2355.4298093226153, found 1e-320"}},
      // Summary figures written over the measured ones (issue 39): refused by every command,
      // with what the steps give.
      Case{"gate_report_forged_step_mean",
           [](const fs::path& scratch) {
             nlohmann::json j = nlohmann::json::parse(slurp(kH100));
             j["summary"]["step_seconds"]["mean"] = 3.6075736380912167;
             write_bytes(scratch / "new.json", j.dump(2));
             return "gate " + q(kH100) + " " + q(scratch / "new.json") + " --fail-on step_time:+5%";
           },
           {"new.json: summary.step_seconds.mean: expected the mean of the measured steps' "
            "wall_seconds = 2.405049092060811, found 3.6075736380912167"}},
      Case{"compare_report_forged_tflops",
           [](const fs::path& scratch) {
             nlohmann::json j = nlohmann::json::parse(slurp(kH100));
             j["summary"]["mfu"]["entries"][0]["achieved_tflops"] = 3782.820273772121;
             write_bytes(scratch / "b.json", j.dump(2));
             return "compare " + q(kH100) + " " + q(scratch / "b.json") + " --rate 2";
           },
           {"b.json: summary.mfu.entries[0].achieved_tflops: expected flops_per_step x "
            "measured_steps / their wall_seconds / 10^12 = 75.65640547544241, found "
            "3782.820273772121"}},
      Case{"compare_report_steps_longer_than_run",
           [](const fs::path& scratch) {
             nlohmann::json j = nlohmann::json::parse(slurp(kMi300x));
             for (nlohmann::json& step : j["steps"]) step["wall_seconds"] = 144.75;
             write_bytes(scratch / "b.json", j.dump(2));
             return "compare " + q(kH100) + " " + q(scratch / "b.json") + " --rate 2";
           },
           {"b.json: steps[].wall_seconds: the steps add up to 54281.25 s, more than the "
            "run's 2040 s"}},
      Case{"compare_report_huge_world_size",
           [](const fs::path& scratch) {
             nlohmann::json j = nlohmann::json::parse(slurp(kMi300x));
             j["run"]["world_size"] = 2147483648LL;
             write_bytes(scratch / "b.json", j.dump(2));
             return "compare " + q(kH100) + " " + q(scratch / "b.json") + " --rate 2";
           },
           {"b.json: run.world_size: expected an integer between 1 and 65536, found "
            "2147483648"}},
      Case{"report_directory",
           [](const fs::path& scratch) {
             fs::create_directory(scratch / "report.json");
             return "cost " + q(scratch / "report.json") + " --rate 2";
           },
           {"report.json: cannot read: Is a directory"}},
      Case{"report_dev_zero",
           [](const fs::path&) { return "compare " + q(kH100) + " /dev/zero"; },
           {"/dev/zero: cannot read: a character device"}},
      Case{"report_missing",
           [](const fs::path& scratch) {
             return "compare " + q(kH100) + " " + q(scratch / "absent.json");
           },
           {"absent.json: cannot read: No such file or directory"}},
  };
}

class HostileInput : public ::testing::TestWithParam<Case> {};

TEST_P(HostileInput, ClearErrorNoCrashNothingWritten) {
  const ScratchDir scratch("ftbench-hostile");
  const std::string command = GetParam().command(scratch.path());
  const std::vector<std::string> before = listing(scratch.path());
  const Outcome r = run_ftbench(command, scratch.path(), "", 60.0);
  SCOPED_TRACE("ftbench " + command.substr(0, 300));
  expect_bad_input(r, GetParam().expected, GetParam().exit_code);
  EXPECT_EQ(listing(scratch.path()), before) << "the command left files behind";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileInput, ::testing::ValuesIn(cases()), case_name);

// Files in the corpus that look hostile but are valid as documented: blank lines in JSONL are
// skipped; a .json file holding one object is read as JSON Lines of one record. (An empty spec,
// or one of comments, is refused: issue 14, item 15.)
const std::vector<std::string> kValidCorpus = {"data/empty-lines.jsonl",
                                               "data/object-not-array.json"};

TEST(HostileCorpus, DocumentedValidFilesAreAccepted) {
  const ScratchDir scratch("ftbench-hostile");
  for (const std::string& file : kValidCorpus) {
    SCOPED_TRACE(file);
    const std::string command = file.rfind("specs/", 0) == 0 ? "validate " + q(corpus(file))
                                                             : validate_data_args(corpus(file));
    const Outcome r = run_ftbench(command, scratch.path(), "", 60.0);
    expect_no_crash(r);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("spec is valid"), std::string::npos) << r.out;
  }
}

// Valid files whose strings carry what a terminal acts on (TerminalEscapes below).
const std::vector<std::string> kTerminalEscapeCorpus = {"catalogs/terminal-escapes.yaml",
                                                        "catalogs/terminal-escapes.csv"};

// Valid files whose strings carry Markdown and HTML (MarkdownInjection below).
const std::vector<std::string> kMarkdownInjectionCorpus = {"catalogs/markdown-injection.yaml"};

// What in `markdown` a renderer would act on, for a message: a raw HTML tag or entity (a '<'
// before a letter, '/' or '!', an '&' before a name or '#'), or the "](" or "![" of a link or
// an image, without the backslash that makes it text; "" when there is none.
std::string raw_markdown_markup(const std::string& markdown) {
  const auto escaped = [&](std::size_t i) {
    std::size_t backslashes = 0;
    while (i > backslashes && markdown[i - backslashes - 1] == '\\') ++backslashes;
    return backslashes % 2 == 1;
  };
  for (std::size_t i = 0; i + 1 < markdown.size(); ++i) {
    const char c = markdown[i];
    const char next = markdown[i + 1];
    const bool tag = c == '<' && (std::isalpha(static_cast<unsigned char>(next)) != 0 ||
                                  next == '/' || next == '!');
    const bool entity =
        c == '&' && (std::isalpha(static_cast<unsigned char>(next)) != 0 || next == '#');
    const bool link = (c == ']' && next == '(') || (c == '!' && next == '[' && !escaped(i + 1));
    if ((tag || entity || link) && !escaped(i)) {
      return "raw markup at byte " + std::to_string(i) + " of:\n" +
             markdown.substr(i < 200 ? 0 : i - 200, 400);
    }
  }
  return "";
}

// What a terminal would act on in `text`, for a message: C0 controls but the line feed, DEL, C1
// controls (U+0080-U+009F, which some terminals take for CSI and OSC) and bidirectional
// controls; "" when there is none.
std::string raw_terminal_control(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = [&](std::size_t k) {
      return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
    };
    std::string found;
    if ((c < 0x20 && c != '\n') || c == 0x7F) found = "a C0 control or DEL";
    if (c == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) found = "a C1 control";
    if (c == 0xE2 && next(1) == 0x80 &&
        (next(2) == 0x8E || next(2) == 0x8F || (next(2) >= 0xAA && next(2) <= 0xAE))) {
      found = "a bidirectional control";
    }
    if (c == 0xE2 && next(1) == 0x81 && next(2) >= 0xA6 && next(2) <= 0xA9) {
      found = "a bidirectional isolate";
    }
    if (!found.empty()) {
      return found + " at byte " + std::to_string(i) + " of:\n" +
             text.substr(i < 200 ? 0 : i - 200, 400);
    }
  }
  return "";
}

// Control characters in shared files (a catalog's strings, a report's run and device names)
// reach every text printer of catalog, cost and compare: tables, summary lines, verdicts,
// warnings and errors. Each is printed escaped (\x1B, \u009B), never raw. JSON escapes in its
// own way and is not checked here.
TEST(TerminalEscapes, SharedFilesCannotDriveTheTerminal) {
  const ScratchDir scratch("ftbench-hostile");
  const std::string yaml = q(corpus("catalogs/terminal-escapes.yaml"));
  const std::string csv = q(corpus("catalogs/terminal-escapes.csv"));
  nlohmann::json j = nlohmann::json::parse(slurp(kH100));
  j["run"]["name"] = "run\x1B[2J";
  j["environment"]["device"]["name"] = "Evil-GPU\x1B[2J";
  j["environment"]["device"]["backend"] =
      "cuda\xC2\x9B"
      "31m";
  j["environment"]["host"]["hostname"] = "host\xE2\x80\xAE";
  j["timing"]["t0_source"] = "--t0\x1B]0;pwned\x07";
  const fs::path escaped = scratch.path() / "escaped.json";
  write_bytes(escaped, j.dump(2));
  const std::string report = q(escaped);

  struct Run {
    std::string args;
    int exit_code;
    bool shows_escape = true;  // the output holds a string of the files
  };
  std::vector<Run> runs;
  for (const char* format : {"table", "markdown", "csv"}) {
    const std::string f = std::string(" --format ") + format + " --color never";
    runs.push_back({"catalog --catalog " + yaml + f, 0});
    runs.push_back({"catalog --catalog " + yaml + " --gpus" + f, 0});
    runs.push_back({"catalog --catalog " + csv + f, 0});
    // The offers of H100-SXM include the hostile one, the cheapest: the summary prints it.
    runs.push_back({"cost " + q(kH100) + " --catalog " + yaml + f, 0});
    runs.push_back({"cost " + report + " --rate 2" + f, 0, std::string(format) != "csv"});
    // The report ran on the catalog's Evil-GPU: a warning says another GPU's price is used.
    runs.push_back(
        {"cost " + report + " --catalog " + yaml + " --offer reference-run/H100-SXM" + f, 0});
    runs.push_back({"compare " + q(kH100) + " " + report + " --rate 2" + f, 0});
    runs.push_back({"compare " + report + " " + q(kMi300x) + " --catalog " + yaml + f, 0});
  }
  // Errors quote the device: no offer for it.
  runs.push_back({"cost " + report, 2});
  for (const Run& run : runs) {
    SCOPED_TRACE("ftbench " + run.args);
    const Outcome r = run_ftbench(run.args, scratch.path(), "", 60.0);
    expect_no_crash(r);
    EXPECT_EQ(r.exit_code, run.exit_code) << r.err;
    EXPECT_EQ(raw_terminal_control(r.out), "") << "stdout";
    EXPECT_EQ(raw_terminal_control(r.err), "") << "stderr";
    if (run.shows_escape) {
      EXPECT_TRUE(r.out.find("\\x1B") != std::string::npos ||
                  r.err.find("\\x1B") != std::string::npos)
          << "the escape is shown: " << r.out << r.err;
    }
  }
}

// Strings of shared files (a catalog's GPU names, providers, regions and sources; a report's run,
// device and CPU names) reach every Markdown output: cost, compare, catalog, plan and gate
// --format markdown, report --markdown. Each is shown as text (issue 39: cost, compare and
// catalog passed them through raw), "&" too.
TEST(MarkdownInjection, SharedFilesCannotInjectMarkup) {
  const ScratchDir scratch("ftbench-hostile");
  const std::string yaml = q(corpus("catalogs/markdown-injection.yaml"));
  nlohmann::json j = nlohmann::json::parse(slurp(kH100));
  j["run"]["name"] = "<script>alert(1)</script>";
  j["environment"]["device"]["name"] = "![x](http://evil.example/x.png) &amp;";
  j["environment"]["host"]["cpu_model"] = "<img src=x onerror=alert(1)>";
  const fs::path injected = scratch.path() / "injected.json";
  write_bytes(injected, j.dump(2));
  nlohmann::json cpu = j;
  cpu["environment"]["device"]["backend"] = "cpu";
  cpu["environment"]["device"]["name"] = "[click](http://evil.example)";
  const fs::path cpu_report = scratch.path() / "cpu.json";
  write_bytes(cpu_report, cpu.dump(2));
  const std::string report = q(injected);
  const std::string f = " --format markdown";
  const std::vector<std::string> runs = {
      "catalog --catalog " + yaml + f, "catalog --catalog " + yaml + " --gpus" + f,
      "cost " + q(kH100) + " --catalog " + yaml + f, "cost " + report + " --rate 2" + f,
      "cost " + q(cpu_report) + " --rate 2" + f,
      "compare " + q(kH100) + " " + report + " --rate 2" + f,
      "compare " + report + " " + q(kMi300x) + " --rate 2" + f,
      "compare " + q(cpu_report) + " " + report + " --rate 2 --allow-different" + f,
      "gate " + q(kH100) + " " + report + " --fail-on status" + f,
      // (plan) The hostile offer is the cheapest: the recommendation names it.
      "plan " + q(kSource / "configs/ci-tiny.yaml") + " --set model.dtype=bf16 --catalog " + yaml +
          f,
      "report " + q(kH100) + " " + report + " --markdown -"};
  for (const std::string& args : runs) {
    SCOPED_TRACE("ftbench " + args);
    const Outcome r = run_ftbench(args, scratch.path(), "", 60.0);
    expect_no_crash(r);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(raw_markdown_markup(r.out), "");
  }
}

// Every committed corpus file is used by a case above (a new file without a case is a mistake).
TEST(HostileCorpus, EveryFileHasACase) {
  std::string names;
  for (const Case& c : cases()) names += c.name + "\n";
  for (const std::string& file : kValidCorpus) {
    names += "_" + file.substr(file.find('/') + 1) + "\n";
  }
  for (const std::string& file : kTerminalEscapeCorpus) {
    names += "_" + file.substr(file.find('/') + 1) + "\n";
  }
  for (const std::string& file : kMarkdownInjectionCorpus) {
    names += "_" + file.substr(file.find('/') + 1) + "\n";
  }
  // The gemm files are cases of hostile_run_test.cpp (`run --gemm` needs LibTorch).
  for (const std::string& file : ftbench::e2e::kHostileGemmFiles) names += "_" + file + "\n";
  // Every folder of the corpus, so that a new one is not left out either.
  int folders = 0;
  for (const auto& folder : fs::directory_iterator(kCorpus)) {
    if (!folder.is_directory()) continue;
    ++folders;
    for (const auto& e : fs::directory_iterator(folder.path())) {
      const std::string file = e.path().filename().string();
      EXPECT_NE(names.find("_" + file + "\n"), std::string::npos)
          << folder.path().filename().string() << "/" << file;
    }
  }
  EXPECT_EQ(folders, 5) << "specs, data, tokenizers, catalogs, gemm";
}

// A report cut short at many places: a prefix of the file is never valid JSON, so each one is
// refused, by both readers, with the file and byte named.
TEST(HostileReports, TruncatedAnywhereIsRefused) {
  const ScratchDir scratch("ftbench-hostile");
  const std::string full = slurp(kH100);
  const std::size_t last_brace = full.rfind('}');
  ASSERT_NE(last_brace, std::string::npos);
  std::vector<std::size_t> cuts = {0, 1, 2, 3, 17, 18, 19, 20, last_brace - 1, last_brace};
  for (std::size_t cut = 97; cut < last_brace; cut += last_brace / 60) cuts.push_back(cut);
  const fs::path path = scratch.path() / "truncated.json";
  for (const std::size_t cut : cuts) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    write_bytes(path, full.substr(0, cut));
    const bool compare = cut % 2 == 1;
    const Outcome r = run_ftbench(
        compare ? "compare " + q(kH100) + " " + q(path) : "cost " + q(path) + " --rate 2",
        scratch.path(), "", 60.0);
    expect_bad_input(r, {path.string() + ": not valid JSON at byte "});
  }
}

// Bytes of the report replaced at random (seeded): the result may still parse (a digit for a
// digit), so the command may succeed; what it may not do is crash, hang or give an unclear
// error.
TEST(HostileReports, GarbledBytesNeverCrash) {
  const ScratchDir scratch("ftbench-hostile");
  const std::string full = slurp(kMi300x);
  std::mt19937 rng(20260913);
  const fs::path path = scratch.path() / "garbled.json";
  int refused = 0;
  for (int i = 0; i < 60; ++i) {
    std::string text = full;
    const int changes = 1 + static_cast<int>(rng() % 8);
    for (int c = 0; c < changes; ++c) {
      text[rng() % text.size()] = static_cast<char>(rng() & 0xFF);
    }
    write_bytes(path, text);
    SCOPED_TRACE("variant " + std::to_string(i));
    const Outcome r = run_ftbench("cost " + q(path) + " --rate 2", scratch.path(), "", 60.0);
    expect_no_crash(r);
    if (r.exit_code == 0) continue;
    ++refused;
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("error: " + path.string() + ": ", 0), 0u) << r.err;
  }
  EXPECT_GT(refused, 30) << "most random changes break the JSON or its schema";
}

// A report with a huge array in a field readers ignore: read, not refused, and in bounded time.
TEST(HostileReports, HugeUnknownArrayIsIgnored) {
  const ScratchDir scratch("ftbench-hostile");
  nlohmann::json j = nlohmann::json::parse(slurp(kH100));
  j["padding"] = nlohmann::json::array();
  for (int i = 0; i < 2'000'000; ++i) j["padding"].push_back(i);
  const fs::path path = scratch.path() / "huge.json";
  write_bytes(path, j.dump());
  const Outcome r =
      run_ftbench("cost " + q(path) + " --rate 2 --billing per-second", scratch.path(), "", 60.0);
  expect_no_crash(r);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// 300,000 steps (a long run's report, about 100 MB): read, or refused, but not a crash.
TEST(HostileReports, HugeStepsArrayIsReadOrRefused) {
  const ScratchDir scratch("ftbench-hostile");
  nlohmann::json j = nlohmann::json::parse(slurp(kH100));
  const nlohmann::json step = j["steps"][0];
  for (int i = 0; i < 300'000; ++i) j["steps"].push_back(step);
  const fs::path path = scratch.path() / "steps.json";
  write_bytes(path, j.dump());
  const Outcome r =
      run_ftbench("cost " + q(path) + " --rate 2 --billing per-second", scratch.path(), "", 120.0);
  expect_no_crash(r);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
}

}  // namespace
