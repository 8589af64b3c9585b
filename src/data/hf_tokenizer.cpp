#include "data/hf_tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "data/hf_tokenizer_parts.h"
#include "util/io/whole_file.h"
#include "util/text/json_errors.h"
#include "util/text/messages.h"

namespace ftbench::data {
namespace {

using detail::AddedToken;
using detail::append_utf8;
using detail::byte_to_code_point;
using detail::check_utf8;
using detail::Matcher;
using detail::parse_json;
using detail::PreTokenizerStep;
using detail::read_file;
using detail::Regex;
using detail::Section;
using detail::SplitBehavior;
using detail::TokenTrie;
using detail::trim_space_end;
using detail::trim_space_start;
using detail::utf8_sequence;
using nlohmann::json;

// The pattern GPT-2's ByteLevel pre-tokenizer splits with when use_regex is true (hard-coded in
// the Rust tokenizers crate, not written in tokenizer.json).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Pre-tokens longer than this are encoded without the cache: they are rare and would bloat it.
constexpr size_t kMaxCachedPieceBytes = 256;
// The cache stops growing here (about 100 MB at worst); encode stays correct without it.
constexpr size_t kMaxCacheEntries = 200000;

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// The largest token id of the file, and where it is, for the gap check.
struct IdRange {
  int64_t max_id = -1;
  std::string where;
};

}  // namespace

struct HfTokenizer::Impl : detail::TokenizerFields {
  explicit Impl(const std::string& source) : TokenizerFields(source), source(source) {}
  std::string source;
  std::unordered_map<std::string, int32_t> vocab;  // token text (byte-level form) -> id
  // Vocabulary tokens by the raw bytes they stand for (byte-level form decoded); only tokens
  // made entirely of byte-level characters.
  std::unordered_map<std::string, int32_t> vocab_by_bytes;
  std::vector<std::string> id_to_text;  // decode output per id (raw bytes; added tokens as text)
  std::vector<bool> id_known;           // whether the id names a token
  std::array<int32_t, 256> byte_ids{};  // id of each single byte's byte-level symbol
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // pair -> (rank, new id)
  bool ignore_merges = false;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::vector<AddedToken> added;
  TokenTrie unnormalized_trie;  // added tokens with normalized false, matched first
  TokenTrie normalized_trie;    // then the others, in the text between those
  int32_t bos = -1, eos = -1, pad = -1;
  bool add_bos = false;
  int64_t vocab_size = 0;

  // Pre-token bytes -> ids. Readers share the lock: after warm-up nearly every lookup hits.
  mutable std::shared_mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void bpe(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void pre_tokenize(std::string_view text, size_t step, std::vector<std::unique_ptr<Matcher>>& m,
                    std::vector<int32_t>& out) const;
  std::vector<Section> split_added(std::string_view text) const;

  // Reading tokenizer.json, a section of the format each; every problem is a TokenizerError
  // naming `source` and the key.
  void read_model(const json& model, IdRange& ids);
  std::array<int, 0x144> read_byte_symbols();
  void read_merges(const json& model);
  void read_pre_tokenizer(const json& root);
  void read_added_tokens(const json& root, IdRange& ids);
  void check_id_range(const IdRange& ids, size_t vocab_entries);
  void build_decode_table(const std::array<int, 0x144>& code_point_to_byte, int64_t max_id);
  // BOS, EOS, PAD and whether an example starts with BOS: tokenizer_config.json first, then the
  // post-processor and well-known added tokens.
  void read_special_tokens(const HfTokenizer& self, const json& root,
                           const std::string& config_json);
};

// Byte-pair merges on one pre-token, lowest rank first and leftmost among equal ranks, as the
// Rust crate's Word::merge_all: a heap of candidate pairs over a linked list of symbols, so a
// long piece (a run of 100k spaces) costs n log n, not n^2.
void HfTokenizer::Impl::bpe(std::string_view piece, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  const auto n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> symbols(piece.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1,
                  true};
  }
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_pair = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    const auto it = merges.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges.end()) queue.push({it->second.first, left, it->second.second});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Stale when either side merged since the candidate was queued.
    const auto it = merges.find(pair_key(left.id, right.id));
    if (it == merges.end() || it->second.second != top.new_id) continue;
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) out.push_back(symbols[i].id);
}

void HfTokenizer::Impl::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges) {
    const auto it = vocab_by_bytes.find(std::string(piece));
    if (it != vocab_by_bytes.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (piece.size() == 1) {
    out.push_back(byte_ids[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (piece.size() > kMaxCachedPieceBytes) {
    bpe(piece, out);
    return;
  }
  std::string key(piece);
  {
    std::shared_lock<std::shared_mutex> lock(cache_mutex);
    const auto it = cache.find(key);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  bpe(piece, out);
  std::unique_lock<std::shared_mutex> lock(cache_mutex);
  if (cache.size() < kMaxCacheEntries) {
    cache.emplace(std::move(key), std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

// Runs pre-tokenizer steps `step`.. on `text` and encodes each final piece.
void HfTokenizer::Impl::pre_tokenize(std::string_view text, size_t step,
                                     std::vector<std::unique_ptr<Matcher>>& matchers,
                                     std::vector<int32_t>& out) const {
  if (text.empty()) return;
  if (step == pre_tokenizer.size()) {
    encode_piece(text, out);
    return;
  }
  const PreTokenizerStep& s = pre_tokenizer[step];
  std::string prefixed;  // keeps the prefixed text alive while its pieces are encoded
  if (s.kind == PreTokenizerStep::Kind::kByteLevel) {
    if (s.add_prefix_space && text[0] != ' ') {
      prefixed = " " + std::string(text);
      text = prefixed;
    }
    if (!s.regex) {
      pre_tokenize(text, step + 1, matchers, out);
      return;
    }
  }
  // Isolated: matches and the gaps between them are pieces; Removed: only the gaps.
  const bool keep_matches = s.behavior == SplitBehavior::kIsolated;
  size_t gap_start = 0;
  const auto on_match = [&](size_t b, size_t e) {
    if (b > gap_start) pre_tokenize(text.substr(gap_start, b - gap_start), step + 1, matchers, out);
    if (keep_matches) pre_tokenize(text.substr(b, e - b), step + 1, matchers, out);
    gap_start = e;
  };
  if (s.kind == PreTokenizerStep::Kind::kSplitString) {
    for (size_t pos = text.find(s.literal); pos != std::string_view::npos;
         pos = text.find(s.literal, pos + s.literal.size())) {
      on_match(pos, pos + s.literal.size());
    }
  } else {
    matchers[step]->for_each_match(text, on_match);
  }
  if (gap_start < text.size()) pre_tokenize(text.substr(gap_start), step + 1, matchers, out);
}

// Splits `text` around added tokens: first those with normalized false, then, in the text between
// them, the others (the Rust crate's two passes); lstrip / rstrip eat the whitespace next to a
// token.
std::vector<Section> HfTokenizer::Impl::split_added(std::string_view text) const {
  const auto split_with = [&](const TokenTrie& trie, std::string_view t,
                              std::vector<Section>& out) {
    if (trie.empty()) {
      out.push_back({t, -1});
      return;
    }
    size_t start = 0;
    for (size_t i = 0; i < t.size();) {
      const auto [token, len] = trie.longest_at(t, i);
      if (token < 0) {
        ++i;
        continue;
      }
      if (i > start) out.push_back({t.substr(start, i - start), -1});
      out.push_back({t.substr(i, len), token});
      i += len;
      start = i;
    }
    if (start < t.size()) out.push_back({t.substr(start), -1});
  };
  std::vector<Section> first;
  split_with(unnormalized_trie, text, first);
  std::vector<Section> sections;
  for (const Section& s : first) {
    if (s.token >= 0) {
      sections.push_back(s);
    } else {
      split_with(normalized_trie, s.text, sections);
    }
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].token < 0) continue;
    const AddedToken& t = added[static_cast<size_t>(sections[i].token)];
    if (t.lstrip && i > 0 && sections[i - 1].token < 0) {
      sections[i - 1].text = trim_space_end(sections[i - 1].text);
    }
    if (t.rstrip && i + 1 < sections.size() && sections[i + 1].token < 0) {
      sections[i + 1].text = trim_space_start(sections[i + 1].text);
    }
  }
  return sections;
}

namespace {

// The id of the special token a post_processor puts before a single text (TemplateProcessing's
// `single` starting with a SpecialToken, RobertaProcessing's `cls`), or nullopt when it puts
// none. Sequence post-processors are searched in order.
std::optional<int32_t> leading_special_token(const HfTokenizer& tokenizer, const json& processor,
                                             const detail::TokenizerFields& fields) {
  if (processor.is_null()) return std::nullopt;
  const std::string type = fields.type_of(processor, "post_processor");
  const auto id_of = [&](const std::string& token, const std::string& where) {
    if (processor.contains("special_tokens") && processor["special_tokens"].is_object()) {
      const auto it = processor["special_tokens"].find(token);
      if (it != processor["special_tokens"].end() && it->contains("ids") &&
          (*it)["ids"].is_array() && (*it)["ids"].size() == 1 &&
          (*it)["ids"][0].is_number_integer()) {
        return (*it)["ids"][0].get<int32_t>();
      }
    }
    const std::optional<int32_t> id = tokenizer.token_id(token);
    if (!id) {
      fields.fail(fmt::format("post_processor.{}: {} is not a token of the file", where,
                              text::quoted(token)));
    }
    return *id;
  };
  if (type == "Sequence") {
    if (!processor.contains("processors") || !processor["processors"].is_array()) {
      fields.fail("post_processor.processors: expected an array");
    }
    for (const json& p : processor["processors"]) {
      if (const auto id = leading_special_token(tokenizer, p, fields)) return id;
    }
    return std::nullopt;
  }
  if (type == "TemplateProcessing") {
    if (!processor.contains("single") || !processor["single"].is_array()) {
      fields.fail(
          fmt::format("post_processor.single: expected an array of template pieces, found {}",
                      processor.contains("single") ? processor["single"].dump() : "nothing"));
    }
    const json& single = processor["single"];
    if (single.empty() || !single[0].is_object() || !single[0].contains("SpecialToken")) {
      return std::nullopt;
    }
    const json& special = single[0]["SpecialToken"];
    if (!special.is_object() || !special.contains("id") || !special["id"].is_string()) {
      fields.fail(fmt::format(
          "post_processor.single[0].SpecialToken: expected {{\"id\": \"...\"}}, found {}",
          special.dump()));
    }
    return id_of(special["id"].get<std::string>(), "single[0]");
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const json& cls = processor.contains("cls") ? processor["cls"] : json();
    if (!cls.is_array() || cls.size() != 2 || !cls[0].is_string()) {
      fields.fail(
          fmt::format("post_processor.cls: expected [\"token\", id], found {}", cls.dump()));
    }
    return id_of(cls[0].get<std::string>(), "cls");
  }
  return std::nullopt;  // ByteLevel and the like add no token
}

}  // namespace

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::~HfTokenizer() = default;

std::unique_ptr<HfTokenizer> HfTokenizer::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path file = path;
  std::error_code ec;
  if (fs::is_directory(file, ec)) file /= "tokenizer.json";
  if (!fs::exists(file, ec)) throw TokenizerError(fmt::format("{}: no such file", file.string()));
  const fs::path config = file.parent_path() / "tokenizer_config.json";
  std::string config_text;
  if (fs::is_regular_file(config, ec)) config_text = read_file(config);
  return from_json(read_file(file), config_text, file.string());
}

// model: a byte-level BPE's vocabulary and options; `ids` gets the largest id seen.
void HfTokenizer::Impl::read_model(const json& model, IdRange& ids) {
  const std::string model_type = model.is_object() && model.contains("type")
                                     ? type_of(model, "model")
                                     : std::string("BPE");  // older files omit it
  if (model_type != "BPE") {
    fail(fmt::format("model.type: {} is not supported (only \"BPE\")", text::quoted(model_type)));
  }
  if (bool_or(model, "byte_fallback", false, "model")) {
    fail("model.byte_fallback: true is not supported (byte-level BPE needs no fallback)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() && model[key] != "") {
      fail(fmt::format("model.{}: {} is not supported", key, model[key].dump()));
    }
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0.0) {
    fail(fmt::format("model.dropout: {} is not supported (encode is deterministic)",
                     model["dropout"].dump()));
  }
  ignore_merges = bool_or(model, "ignore_merges", false, "model");
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    fail("model.vocab: missing or not an object of token -> id");
  }
  vocab.reserve(model["vocab"].size());
  vocab_by_bytes.reserve(model["vocab"].size());
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      fail(fmt::format("model.vocab[{}]: expected a non-negative id, found {}", text::quoted(token),
                       id.dump()));
    }
    vocab[token] = id.get<int32_t>();
    if (id.get<int64_t>() > ids.max_id) {
      ids.max_id = id.get<int64_t>();
      ids.where = fmt::format("model.vocab[{}]", json(token).dump());
    }
  }
}

// Byte-level symbols: every byte must have its token, so encode never meets an unknown symbol.
// Returns the byte of each byte-level code point (all are below U+0144), -1 for other code
// points.
std::array<int, 0x144> HfTokenizer::Impl::read_byte_symbols() {
  const std::array<uint32_t, 256> cp = byte_to_code_point();
  std::array<int, 0x144> code_point_to_byte;
  code_point_to_byte.fill(-1);
  for (int b = 0; b < 256; ++b) {
    code_point_to_byte[cp[b]] = b;
    std::string symbol;
    append_utf8(symbol, cp[b]);
    const auto it = vocab.find(symbol);
    if (it == vocab.end()) {
      fail(
          fmt::format("model.vocab: no token \"{}\" for byte 0x{:02X} (byte-level BPE needs all "
                      "256)",
                      symbol, b));
    }
    byte_ids[b] = it->second;
  }

  return code_point_to_byte;
}

void HfTokenizer::Impl::read_merges(const json& model) {
  // merges: "a b" strings or ["a", "b"] pairs; rank is the position; a later duplicate wins.
  if (!model.contains("merges") || !model["merges"].is_array()) {
    fail("model.merges: missing or not an array");
  }
  const json& list = model["merges"];
  merges.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        fail(fmt::format("model.merges[{}]: expected \"left right\", found {}", i, m.dump()));
      }
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      fail(
          fmt::format("model.merges[{}]: expected \"left right\" or [\"left\", \"right\"], "
                      "found {}",
                      i, m.dump()));
    }
    const auto id_of = [&](const std::string& token, const char* what) {
      const auto it = vocab.find(token);
      if (it == vocab.end()) {
        fail(fmt::format("model.merges[{}]: {} token {} is not in model.vocab", i, what,
                         text::quoted(token)));
      }
      return it->second;
    };
    const int32_t left = id_of(a, "left");
    const int32_t right = id_of(b, "right");
    const int32_t merged = id_of(a + b, "merged");
    merges[pair_key(left, right)] = {static_cast<int32_t>(i), merged};
  }
}

void HfTokenizer::Impl::read_pre_tokenizer(const json& root) {
  // pre_tokenizer: ByteLevel, or a Sequence of Split steps ending in ByteLevel.
  if (!root.contains("pre_tokenizer") || root["pre_tokenizer"].is_null()) {
    fail("pre_tokenizer: missing (expected ByteLevel or a Sequence ending in ByteLevel)");
  }
  std::vector<std::pair<json, std::string>> steps;
  {
    const json& pt = root["pre_tokenizer"];
    if (type_of(pt, "pre_tokenizer") == "Sequence") {
      if (!pt.contains("pretokenizers") || !pt["pretokenizers"].is_array()) {
        fail("pre_tokenizer.pretokenizers: missing or not an array");
      }
      for (size_t i = 0; i < pt["pretokenizers"].size(); ++i) {
        steps.emplace_back(pt["pretokenizers"][i],
                           fmt::format("pre_tokenizer.pretokenizers[{}]", i));
      }
    } else {
      steps.emplace_back(pt, "pre_tokenizer");
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& [j, where] = steps[i];
    const std::string type = type_of(j, where);
    PreTokenizerStep step;
    if (type == "ByteLevel") {
      if (i + 1 != steps.size()) fail(where + ": ByteLevel must be the last pre-tokenizer");
      step.kind = PreTokenizerStep::Kind::kByteLevel;
      step.add_prefix_space = bool_or(j, "add_prefix_space", false, where);
      if (bool_or(j, "use_regex", true, where)) {
        step.regex = std::make_shared<const Regex>(kGpt2Pattern, source + ": " + where);
      }
    } else if (type == "Split") {
      if (bool_or(j, "invert", false, where)) fail(where + ".invert: true is not supported");
      const std::string behavior = j.value("behavior", std::string("Isolated"));
      if (behavior == "Isolated") {
        step.behavior = SplitBehavior::kIsolated;
      } else if (behavior == "Removed") {
        step.behavior = SplitBehavior::kRemoved;
      } else {
        fail(fmt::format("{}.behavior: {} is not supported (Isolated or Removed)", where,
                         text::quoted(behavior)));
      }
      const json pattern = j.value("pattern", json());
      if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
        step.kind = PreTokenizerStep::Kind::kSplitRegex;
        step.regex = std::make_shared<const Regex>(pattern["Regex"].get<std::string>(),
                                                   source + ": " + where + ".pattern.Regex");
      } else if (pattern.is_object() && pattern.contains("String") &&
                 pattern["String"].is_string() && !pattern["String"].get<std::string>().empty()) {
        step.kind = PreTokenizerStep::Kind::kSplitString;
        step.literal = pattern["String"].get<std::string>();
      } else {
        fail(fmt::format("{}.pattern: expected {{\"Regex\": ...}} or {{\"String\": ...}}, found {}",
                         where, pattern.dump()));
      }
    } else {
      fail(fmt::format("{}: {} is not supported (ByteLevel, or Split then ByteLevel)", where,
                       text::quoted(type)));
    }
    pre_tokenizer.push_back(std::move(step));
  }
  if (pre_tokenizer.empty() || pre_tokenizer.back().kind != PreTokenizerStep::Kind::kByteLevel) {
    fail("pre_tokenizer: must end in ByteLevel (only byte-level BPE is supported)");
  }
}

void HfTokenizer::Impl::read_added_tokens(const json& root, IdRange& ids) {
  // added_tokens
  if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
    if (!root["added_tokens"].is_array()) fail("added_tokens: expected an array");
    for (size_t i = 0; i < root["added_tokens"].size(); ++i) {
      const json& a = root["added_tokens"][i];
      const std::string where = fmt::format("added_tokens[{}]", i);
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          a["id"].get<int64_t>() < 0 || a["id"].get<int64_t>() > INT32_MAX ||
          !a.contains("content") || !a["content"].is_string()) {
        fail(fmt::format("{}: expected {{\"id\": N, \"content\": \"...\"}}, found {}", where,
                         a.dump()));
      }
      AddedToken t;
      t.content = a["content"].get<std::string>();
      t.id = a["id"].get<int32_t>();
      t.special = bool_or(a, "special", false, where);
      t.lstrip = bool_or(a, "lstrip", false, where);
      t.rstrip = bool_or(a, "rstrip", false, where);
      t.normalized = bool_or(a, "normalized", !t.special, where);
      if (bool_or(a, "single_word", false, where)) {
        fail(where + ".single_word: true is not supported");
      }
      if (t.id > ids.max_id) {
        ids.max_id = t.id;
        ids.where = fmt::format("{} {}", where, json(t.content).dump());
      }
      added.push_back(std::move(t));
    }
  }
}

void HfTokenizer::Impl::check_id_range(const IdRange& ids, size_t vocab_entries) {
  // The id table below has ids.max_id + 1 entries: an id far beyond the number of tokens (one entry
  // "x": 2147483647 asks for 2^31 strings, 64 GiB) is a broken file, not a vocabulary. Real
  // vocabularies leave small gaps (reserved ids: cl100k-style tokenizers number their special
  // tokens from 100,257 to 100,276 over 100,256 regular ones), so ids up to twice the number of
  // tokens plus 1,024 are accepted: the table stays within a small multiple of the file.
  const auto token_count = static_cast<int64_t>(vocab_entries + added.size());
  const int64_t max_accepted_id = 2 * token_count + 1023;
  if (ids.max_id > max_accepted_id) {
    fail(fmt::format(
        "{}: id {} is far beyond the tokenizer's {} tokens ({} in model.vocab, {} in "
        "added_tokens): ids up to {} (twice the tokens, plus 1,024 for gaps) are "
        "accepted; a gap that large is a broken file",
        ids.where, ids.max_id, token_count, vocab_entries, added.size(), max_accepted_id));
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& t = added[i];
    (t.normalized ? normalized_trie : unnormalized_trie).insert(t.content, i);
  }
}

void HfTokenizer::Impl::build_decode_table(const std::array<int, 0x144>& code_point_to_byte,
                                           int64_t max_id) {
  // Decode table: vocabulary tokens as the bytes their byte-level characters stand for (a token
  // with other characters decodes to its own text, as the Rust ByteLevel decoder does); added
  // tokens as their content.
  vocab_size = max_id + 1;
  id_to_text.assign(static_cast<size_t>(vocab_size), std::string());
  id_known.assign(static_cast<size_t>(vocab_size), false);
  for (const auto& [token, id] : vocab) {
    std::string bytes;
    bool byte_level = true;
    uint32_t c = 0;
    for (size_t i = 0; i < token.size();) {
      const size_t len = utf8_sequence(token, i, c);
      if (len == 0 || c >= code_point_to_byte.size() || code_point_to_byte[c] < 0) {
        byte_level = false;
        break;
      }
      bytes.push_back(static_cast<char>(code_point_to_byte[c]));
      i += len;
    }
    if (byte_level) vocab_by_bytes.emplace(bytes, id);
    id_to_text[static_cast<size_t>(id)] = byte_level ? bytes : token;
    id_known[static_cast<size_t>(id)] = true;
  }
  for (const AddedToken& t : added) {
    id_to_text[static_cast<size_t>(t.id)] = t.content;
    id_known[static_cast<size_t>(t.id)] = true;
  }
}

void HfTokenizer::Impl::read_special_tokens(const HfTokenizer& self, const json& root,
                                            const std::string& config_json) {
  // BOS / EOS / PAD: tokenizer_config.json first, then well-known added tokens.
  json config;
  const std::string config_source =
      (std::filesystem::path(source).parent_path() / "tokenizer_config.json").string();
  if (!config_json.empty()) config = parse_json(config_json, config_source);
  const auto special_from_config = [&](const char* key) -> std::optional<int32_t> {
    if (!config.is_object() || !config.contains(key) || config[key].is_null()) return std::nullopt;
    const json& v = config[key];
    std::string content;
    if (v.is_string()) {
      content = v.get<std::string>();
    } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
      content = v["content"].get<std::string>();
    } else {
      throw TokenizerError(
          fmt::format("{}: {}: expected a token text, found {}", config_source, key, v.dump()));
    }
    const auto id = self.token_id(content);
    if (!id) {
      throw TokenizerError(fmt::format("{}: {}: {} is not a token of {}", config_source, key,
                                       text::quoted(content), source));
    }
    return id;
  };
  const auto first_known = [&](std::initializer_list<const char*> names) -> int32_t {
    for (const char* name : names) {
      if (const auto id = self.token_id(name)) return *id;
    }
    return -1;
  };
  bos = special_from_config("bos_token")
            .value_or(first_known({"<|begin_of_text|>", "<s>", "<|endoftext|>"}));
  eos = special_from_config("eos_token")
            .value_or(first_known({"<|end_of_text|>", "</s>", "<|endoftext|>"}));
  pad = special_from_config("pad_token").value_or(eos);

  // Does an example start with BOS? add_bos_token says so where the config has it (the Llama
  // tokenizer classes rebuild their post-processor from it); else the post-processor decides.
  const std::optional<int32_t> template_bos =
      root.contains("post_processor") ? leading_special_token(self, root["post_processor"], *this)
                                      : std::nullopt;
  if (config.is_object() && config.contains("add_bos_token") &&
      !config["add_bos_token"].is_null()) {
    add_bos = detail::TokenizerFields(config_source).bool_or(config, "add_bos_token", false, "");
    if (add_bos && bos < 0) {
      throw TokenizerError(fmt::format(
          "{}: add_bos_token is true, but there is no BOS token: set bos_token", config_source));
    }
  } else if (template_bos) {
    add_bos = true;
    bos = *template_bos;
  }
}

std::unique_ptr<HfTokenizer> HfTokenizer::from_json(const std::string& tokenizer_json,
                                                    const std::string& config_json,
                                                    const std::string& source) {
  auto impl = std::make_unique<Impl>(source);
  const json root = parse_json(tokenizer_json, source);
  if (!root.is_object()) {
    impl->fail("expected a JSON object at the top");
  }
  if (!root.contains("model")) impl->fail("model: missing");
  const json& model = root["model"];
  IdRange ids;
  impl->read_model(model, ids);
  const std::array<int, 0x144> code_point_to_byte = impl->read_byte_symbols();
  impl->read_merges(model);
  // normalizer
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    impl->fail(fmt::format("normalizer: {} is not supported (only null)",
                           text::quoted(impl->type_of(root["normalizer"], "normalizer"))));
  }

  impl->read_pre_tokenizer(root);
  // decoder
  if (!root.contains("decoder") || root["decoder"].is_null() ||
      impl->type_of(root["decoder"], "decoder") != "ByteLevel") {
    impl->fail(fmt::format("decoder: expected ByteLevel, found {}",
                           root.contains("decoder") ? root["decoder"].dump() : "nothing"));
  }

  impl->read_added_tokens(root, ids);
  impl->check_id_range(ids, model["vocab"].size());
  impl->build_decode_table(code_point_to_byte, ids.max_id);
  auto tokenizer = std::unique_ptr<HfTokenizer>(new HfTokenizer(std::move(impl)));
  tokenizer->impl_->read_special_tokens(*tokenizer, root, config_json);
  return tokenizer;
}

std::string HfTokenizer::name() const {
  return fmt::format("tokenizer.json BPE ({} tokens)", impl_->vocab_size);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  check_utf8(text);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 16);
  std::vector<std::unique_ptr<Matcher>> matchers;
  for (const PreTokenizerStep& step : impl_->pre_tokenizer) {
    matchers.push_back(step.regex ? std::make_unique<Matcher>(*step.regex) : nullptr);
  }
  for (const Section& s : impl_->split_added(text)) {
    if (s.token >= 0) {
      ids.push_back(impl_->added[static_cast<size_t>(s.token)].id);
    } else {
      impl_->pre_tokenize(s.text, 0, matchers, ids);
    }
  }
  return ids;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (const int32_t id : ids) {
    if (id < 0 || id >= impl_->vocab_size || !impl_->id_known[static_cast<size_t>(id)]) continue;
    text += impl_->id_to_text[static_cast<size_t>(id)];
  }
  return text;
}

int64_t HfTokenizer::vocab_size() const { return impl_->vocab_size; }
int32_t HfTokenizer::bos_id() const { return impl_->bos; }
int32_t HfTokenizer::eos_id() const { return impl_->eos; }
int32_t HfTokenizer::pad_id() const { return impl_->pad; }
bool HfTokenizer::adds_bos() const { return impl_->add_bos; }

std::optional<int32_t> HfTokenizer::token_id(std::string_view token) const {
  for (const AddedToken& t : impl_->added) {
    if (t.content == token) return t.id;
  }
  const auto it = impl_->vocab.find(std::string(token));
  if (it == impl_->vocab.end()) return std::nullopt;
  return it->second;
}

}  // namespace ftbench::data
