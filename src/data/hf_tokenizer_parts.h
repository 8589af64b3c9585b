// Private to src/data: the parts of the Hugging Face tokenizer (hf_tokenizer.cpp): byte-level
// symbols and UTF-8, the PCRE2 regex of the pre-tokenizer, pre-tokenizer steps, added tokens and
// their trie.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/text/json_fields.h"

#include "data/hf_tokenizer.h"

namespace ftbench::data::detail {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// are shifted to U+0100 and up, in byte order. Returns the code point of each byte.
std::array<uint32_t, 256> byte_to_code_point();

void append_utf8(std::string& out, uint32_t cp);

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid (overlong forms,
// surrogates and code points above U+10FFFF included). `cp` receives the code point.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp);

// Throws TokenizerError naming the offset of the first byte that is not valid UTF-8.
void check_utf8(std::string_view text);

// Unicode White_Space, as Rust's char::is_whitespace (used for lstrip / rstrip of added tokens).
bool is_unicode_space(uint32_t cp);

std::string_view trim_space_end(std::string_view s);

std::string_view trim_space_start(std::string_view s);

// A compiled PCRE2 pattern (UTF + UCP, JIT when available). Immutable once built, so shared by
// threads; each matching thread brings its own match data (Matcher).
class Regex {
 public:
  Regex(const std::string& pattern, const std::string& where);
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const pcre2_code* code() const { return code_; }

 private:
  pcre2_code* code_ = nullptr;
};

// Match data for one Regex, owned by one encode call.
class Matcher {
 public:
  explicit Matcher(const Regex& regex)
      : regex_(regex), data_(pcre2_match_data_create_from_pattern(regex.code(), nullptr)) {}
  ~Matcher() { pcre2_match_data_free(data_); }
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Calls `on_match(begin, end)` for each non-empty match of the regex in `text`, left to right.
  // `text` is valid UTF-8 (checked once by encode).
  template <typename F>
  void for_each_match(std::string_view text, F&& on_match) {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t start = 0;
    while (start <= text.size()) {
      int rc = pcre2_match(regex_.code(), subject, text.size(), start, PCRE2_NO_UTF_CHECK, data_,
                           nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(regex_.code(), subject, text.size(), start,
                         PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data_, nullptr);
      }
      if (rc == PCRE2_ERROR_NOMATCH) return;
      if (rc < 0) {
        std::array<PCRE2_UCHAR, 256> message{};
        pcre2_get_error_message(rc, message.data(), message.size());
        throw TokenizerError(fmt::format("pre-tokenizer regex failed at byte {}: {}", start,
                                         reinterpret_cast<const char*>(message.data())));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data_);
      const size_t begin = ovector[0];
      const size_t end = ovector[1];
      if (end > begin) {
        on_match(begin, end);
        start = end;
      } else {
        // An empty match yields no piece; step over one character so the scan advances.
        if (begin >= text.size()) return;
        uint32_t cp = 0;
        start = begin + std::max<size_t>(1, utf8_sequence(text, begin, cp));
      }
    }
  }

 private:
  const Regex& regex_;
  pcre2_match_data* data_;
};

enum class SplitBehavior { kIsolated, kRemoved };

// One step of the pre-tokenizer pipeline; each step splits every piece the previous one made.
struct PreTokenizerStep {
  enum class Kind { kSplitRegex, kSplitString, kByteLevel } kind = Kind::kByteLevel;
  std::shared_ptr<const Regex> regex;  // kSplitRegex, and kByteLevel with use_regex
  std::string literal;                 // kSplitString
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool add_prefix_space = false;  // kByteLevel
};

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// Longest-first matcher for added tokens: a byte trie, searched at each position left to right
// (as the leftmost-longest Aho-Corasick of the Rust crate).
class TokenTrie {
 public:
  void insert(const std::string& content, size_t token_index) {
    if (content.empty()) return;
    if (nodes_.empty()) nodes_.emplace_back();
    starts_[static_cast<unsigned char>(content[0])] = true;
    size_t node = 0;
    for (const char c : content) {
      const auto key = static_cast<unsigned char>(c);
      auto it = nodes_[node].next.find(key);
      if (it == nodes_[node].next.end()) {
        nodes_.emplace_back();
        it = nodes_[node].next.emplace(key, nodes_.size() - 1).first;
      }
      node = it->second;
    }
    nodes_[node].token = static_cast<int64_t>(token_index);
  }
  bool empty() const { return nodes_.empty(); }
  // The longest token starting at text[pos]: {token index, length}, or {-1, 0}.
  std::pair<int64_t, size_t> longest_at(std::string_view text, size_t pos) const {
    std::pair<int64_t, size_t> best{-1, 0};
    if (!starts_[static_cast<unsigned char>(text[pos])]) return best;
    size_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      const auto it = nodes_[node].next.find(static_cast<unsigned char>(text[i]));
      if (it == nodes_[node].next.end()) break;
      node = it->second;
      if (nodes_[node].token >= 0) best = {nodes_[node].token, i + 1 - pos};
    }
    return best;
  }

 private:
  struct Node {
    std::unordered_map<unsigned char, size_t> next;
    int64_t token = -1;
  };
  std::vector<Node> nodes_;
  std::array<bool, 256> starts_{};  // first bytes of the tokens: most positions stop here
};

// A piece of text between added tokens, or an added token (token >= 0).
struct Section {
  std::string_view text;
  int64_t token = -1;
};

// tokenizer.json as text and as JSON; TokenizerError naming the file.
std::string read_file(const std::filesystem::path& path);
nlohmann::json parse_json(const std::string& text, const std::string& source);

// Field access for tokenizer.json: text::JsonFields (the file and the JSON path in every
// message, TokenizerError) with the two kinds of field the format adds.
class TokenizerFields : public text::JsonFields<nlohmann::json, TokenizerError> {
 public:
  using JsonFields::JsonFields;

  // The string "type" of the component `j` at `where` ("pre_tokenizer", "decoder").
  std::string type_of(const nlohmann::json& j, const std::string& where) const;
  // j[key] as true or false, `fallback` when absent or null; the error names `where.key`.
  bool bool_or(const nlohmann::json& j, const char* key, bool fallback,
               const std::string& where) const;
};

}  // namespace ftbench::data::detail
