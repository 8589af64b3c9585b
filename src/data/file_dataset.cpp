#include "data/file_dataset.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "data/file_messages.h"
#include "data/rng.h"
#include "spec/choices.h"
#include "spec/limits.h"
#include "util/io/whole_file.h"
#include "util/stats/summary.h"
#include "util/text/json_parse.h"
#include "util/text/messages.h"

namespace ftbench::data {

using json = nlohmann::json;
using ftbench::text::JsonTextError;
namespace formats = spec::choice::data_format;
using text::not_one_of_message;

namespace {

using detail::array_element_offsets;
using detail::describe;
using detail::invalid_utf8_at;
using detail::invalid_utf8_message;
using detail::is_blank;
using detail::line_column;
using detail::malformed_json_message;
using detail::missing_key;
using detail::trim_ascii_space;

const std::vector<std::string> kRoles = {"system", "user", "assistant"};

constexpr int64_t kIgnoreLabel = -100;
// Random streams drawn from DataFileOptions::seed.
constexpr uint64_t kSubsetStream = 1;
constexpr uint64_t kValidationStream = 2;

// A record that cannot be used; the message has no location yet (the reader adds it).
class BadRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Records to examples.

struct ChatTokens {
  int32_t start_header = 0;
  int32_t end_header = 0;
  int32_t eot = 0;
};

const json& required(const json& record, const char* key) {
  const auto it = record.find(key);
  if (it == record.end()) throw BadRecord(missing_key(key));
  return *it;
}

const std::string& required_string(const json& record, const char* key) {
  const json& value = required(record, key);
  if (!value.is_string()) {
    throw BadRecord(fmt::format("{}: expected a string, found {}", key, describe(value)));
  }
  return value.get_ref<const std::string&>();
}

// An integer JSON value as int64, nullopt for anything else (1.0 included) or out of range.
std::optional<int64_t> as_int64(const json& value) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

int64_t count_targets(const Example& example) {
  int64_t count = 0;
  const auto n = static_cast<int64_t>(example.tokens.size());
  for (int64_t t = 0; t < n; ++t) count += is_target(example, t, false) ? 1 : 0;
  return count;
}

class RecordBuilder {
 public:
  RecordBuilder(const DataFileOptions& options, const Tokenizer& tokenizer)
      : options_(options),
        tokenizer_(tokenizer),
        add_bos_(options.add_bos && tokenizer.adds_bos()) {}

  Example build(const std::string& format, const json& record) const {
    if (options_.add_eos && tokenizer_.eos_id() < 0 &&
        (format == formats::kAlpaca || format == formats::kText)) {
      throw DataError(fmt::format(
          "{}: the tokenizer ({}) has no EOS token to end {} examples with; set eos_token in "
          "tokenizer_config.json",
          options_.path, tokenizer_.name(), format));
    }
    Example example;
    if (format == formats::kAlpaca) {
      example = alpaca(record);
    } else if (format == formats::kChat) {
      example = chat(record);
    } else if (format == formats::kText) {
      example = plain_text(record);
    } else {
      example = tokenized(record);
    }
    if (options_.train_on_input) {
      example.prompt_tokens = 1;
      example.loss_mask.clear();
    }
    if (count_targets(example) == 0) {
      throw BadRecord(
          fmt::format("no target token: the example has {} token{} and none is trained on",
                      example.tokens.size(), example.tokens.size() == 1 ? "" : "s"));
    }
    return example;
  }

  void set_chat_tokens(const ChatTokens& tokens) { chat_tokens_ = tokens; }

 private:
  void append(std::vector<int32_t>& tokens, std::string_view text) const {
    const std::vector<int32_t> ids = tokenizer_.encode(text);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
  }

  Example alpaca(const json& record) const {
    const std::string& instruction = required_string(record, "instruction");
    std::string_view input;
    if (const auto it = record.find("input"); it != record.end() && !it->is_null()) {
      if (!it->is_string()) {
        throw BadRecord(fmt::format("input: expected a string or null, found {}", describe(*it)));
      }
      input = it->get_ref<const std::string&>();
    }
    const std::string& output = required_string(record, "output");
    Example example;
    if (add_bos_) example.tokens.push_back(tokenizer_.bos_id());
    append(example.tokens, alpaca_prompt(instruction, input));
    example.prompt_tokens = static_cast<int64_t>(example.tokens.size());
    append(example.tokens, output);
    if (options_.add_eos) example.tokens.push_back(tokenizer_.eos_id());
    return example;
  }

  Example chat(const json& record) const {
    const json& messages = required(record, "messages");
    if (!messages.is_array() || messages.empty()) {
      throw BadRecord(fmt::format("messages: expected a non-empty array of messages, found {}",
                                  describe(messages)));
    }
    Example example;
    std::vector<int32_t>& tokens = example.tokens;
    std::vector<uint8_t>& mask = example.loss_mask;
    if (add_bos_) tokens.push_back(tokenizer_.bos_id());
    bool any_assistant = false;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const json& message = messages[i];
      const std::string field = fmt::format("messages[{}]", i);
      if (!message.is_object()) {
        throw BadRecord(fmt::format("{}: expected an object, found {}", field, describe(message)));
      }
      const auto role_it = message.find("role");
      if (role_it == message.end()) throw BadRecord(field + ": " + missing_key("role"));
      const json& role_value = *role_it;
      if (!role_value.is_string()) {
        throw BadRecord(
            fmt::format("{}.role: expected a string, found {}", field, describe(role_value)));
      }
      const auto& role = role_value.get_ref<const std::string&>();
      if (std::find(kRoles.begin(), kRoles.end(), role) == kRoles.end()) {
        throw BadRecord(fmt::format("{}.role: {}", field, not_one_of_message(role, kRoles)));
      }
      const auto content_it = message.find("content");
      if (content_it == message.end()) throw BadRecord(field + ": " + missing_key("content"));
      const json& content = *content_it;
      if (!content.is_string()) {
        throw BadRecord(
            fmt::format("{}.content: expected a string, found {}", field, describe(content)));
      }
      const bool target = role == "assistant";
      any_assistant = any_assistant || target;
      tokens.push_back(chat_tokens_.start_header);
      append(tokens, role);
      tokens.push_back(chat_tokens_.end_header);
      append(tokens, "\n\n");
      mask.resize(tokens.size(), 0);
      append(tokens, trim_ascii_space(content.get_ref<const std::string&>()));
      tokens.push_back(chat_tokens_.eot);
      mask.resize(tokens.size(), target ? 1 : 0);
    }
    if (!any_assistant && !options_.train_on_input) {
      throw BadRecord("messages: no assistant message, so nothing to train on");
    }
    mask[0] = 0;
    example.prompt_tokens = std::find(mask.begin(), mask.end(), 1) - mask.begin();
    return example;
  }

  Example plain_text(const json& record) const {
    const std::string& text = required_string(record, "text");
    Example example;
    if (add_bos_) example.tokens.push_back(tokenizer_.bos_id());
    append(example.tokens, text);
    if (options_.add_eos) example.tokens.push_back(tokenizer_.eos_id());
    example.prompt_tokens = 1;
    return example;
  }

  Example tokenized(const json& record) const {
    const json& ids = required(record, "input_ids");
    if (!ids.is_array() || ids.empty()) {
      throw BadRecord(fmt::format("input_ids: expected a non-empty array of token ids, found {}",
                                  describe(ids)));
    }
    const int64_t vocab = options_.vocab_size > 0 ? options_.vocab_size : tokenizer_.vocab_size();
    Example example;
    for (std::size_t t = 0; t < ids.size(); ++t) {
      const std::optional<int64_t> id = as_int64(ids[t]);
      if (!id) {
        throw BadRecord(fmt::format("input_ids[{}]: expected an integer token id, found {}", t,
                                    describe(ids[t])));
      }
      if (*id < 0 || *id >= vocab) {
        throw BadRecord(
            fmt::format("input_ids[{}]: expected a token id in [0, {}), found {}", t, vocab, *id));
      }
      example.tokens.push_back(static_cast<int32_t>(*id));
    }
    example.prompt_tokens = 1;
    const auto it = record.find("labels");
    if (it == record.end() || it->is_null()) return example;
    const json& labels = *it;
    if (!labels.is_array()) {
      throw BadRecord(
          fmt::format("labels: expected an array of integers, found {}", describe(labels)));
    }
    if (labels.size() != ids.size()) {
      throw BadRecord(fmt::format("labels: expected {} labels (one per input id), found {}",
                                  ids.size(), labels.size()));
    }
    std::vector<uint8_t> mask(ids.size(), 0);
    for (std::size_t t = 0; t < labels.size(); ++t) {
      const std::optional<int64_t> label = as_int64(labels[t]);
      if (!label || (*label != kIgnoreLabel && *label != example.tokens[t])) {
        throw BadRecord(fmt::format("labels[{}]: expected -100 or the input id {}, found {}", t,
                                    example.tokens[t], describe(labels[t])));
      }
      mask[t] = (t > 0 && *label != kIgnoreLabel) ? 1 : 0;
    }
    if (!options_.train_on_input && std::find(mask.begin(), mask.end(), 1) == mask.end()) {
      throw BadRecord("labels: every label after the first is -100, so nothing to train on");
    }
    example.prompt_tokens = std::find(mask.begin(), mask.end(), 1) - mask.begin();
    example.loss_mask = std::move(mask);
    return example;
  }

  const DataFileOptions& options_;
  const Tokenizer& tokenizer_;
  const bool add_bos_;  // the caller wants BOS and the tokenizer's rule adds one
  ChatTokens chat_tokens_;
};

void check_one_of(const std::string& path, const char* key, const std::string& value,
                  const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    throw DataError(fmt::format("{}: {}: {}", path, key, not_one_of_message(value, allowed)));
  }
}

void check_options(const DataFileOptions& options) {
  const std::string& path = options.path;
  check_one_of(path, "format", options.format, spec::choice::data_format::kAll);
  check_one_of(path, "too_long", options.too_long, spec::choice::too_long::kAll);
  check_one_of(path, "on_error", options.on_error, spec::choice::on_error::kAll);
  check_one_of(path, "subset", options.subset, spec::choice::subset::kAll);
  if (options.max_tokens < 2) {
    throw DataError(
        fmt::format("{}: max_tokens: must be an integer >= 2, found {}", path, options.max_tokens));
  }
  if (options.max_examples < 0) {
    throw DataError(fmt::format("{}: max_examples: must be an integer >= 0, found {}", path,
                                options.max_examples));
  }
}

// The format a record's keys say, or nullopt.
std::optional<std::string> detect_format(const json& record) {
  if (record.contains("messages")) return "chat";
  if (record.contains("input_ids")) return "tokenized";
  if (record.contains("instruction")) return "alpaca";
  if (record.contains("text")) return "text";
  return std::nullopt;
}

ChatTokens chat_tokens(const std::string& path, const Tokenizer& tokenizer) {
  const auto id = [&](std::string_view token) {
    const std::optional<int32_t> found = tokenizer.token_id(token);
    if (!found) {
      throw DataError(
          fmt::format("{}: the tokenizer ({}) has no special token {} needed by the chat format",
                      path, tokenizer.name(), token));
    }
    return *found;
  };
  ChatTokens tokens;
  tokens.start_header = id("<|start_header_id|>");
  tokens.end_header = id("<|end_header_id|>");
  tokens.eot = id("<|eot_id|>");
  return tokens;
}

// `k` of the indices [0, n), drawn uniformly by a seeded Fisher-Yates shuffle, ascending.
std::vector<int64_t> seeded_sample(int64_t n, int64_t k, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  SplitMix64 rng(stream_seed(seed, stream));
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  order.resize(static_cast<std::size_t>(k));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int64_t> all_indices(int64_t n) {
  std::vector<int64_t> indices(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) indices[static_cast<std::size_t>(i)] = i;
  return indices;
}

}  // namespace

std::string alpaca_prompt(std::string_view instruction, std::string_view input) {
  const std::string_view templ = input.empty() ? kAlpacaPromptNoInput : kAlpacaPromptWithInput;
  // Placeholders are looked for in the template only, never in the text filled in.
  std::string out;
  std::size_t from = 0;
  while (from < templ.size()) {
    const std::size_t brace = templ.find('{', from);
    out.append(templ.substr(from, brace - from));
    if (brace == std::string_view::npos) break;
    const std::size_t close = templ.find('}', brace);
    const std::string_view name = templ.substr(brace + 1, close - brace - 1);
    out.append(name == "instruction" ? instruction : input);
    from = close + 1;
  }
  return out;
}

namespace {

// Everything read from one file, before a subset or split is chosen.
struct ReadResult {
  std::string format;
  std::vector<Example> examples;   // usable examples, file order
  std::vector<uint8_t> truncated;  // per example: 1 when cut to max_tokens
  int64_t records = 0;
  int64_t skipped_bad = 0;
  int64_t dropped_too_long = 0;
  std::vector<std::string> skip_messages;
};

// Reads and tokenises the whole of options.path.
class FileReader {
 public:
  FileReader(const DataFileOptions& options, const Tokenizer& tokenizer)
      : options_(options), tokenizer_(tokenizer), builder_(options, tokenizer) {}

  // Reads options.path, or takes `content` as the file's bytes when given.
  ReadResult read(std::optional<std::string_view> content = std::nullopt) {
    check_options(options_);
    const std::string& path = options_.path;
    format_ = options_.format;
    if (format_ == formats::kChat) builder_.set_chat_tokens(chat_tokens(path, tokenizer_));
    try {
      if (content) {
        read_text(*content);
      } else {
        read_stream(path);
      }
    } catch (const std::bad_alloc&) {
      // Under a memory limit the examples held so far may be all there is room for: said with
      // the file and how far it got, not as a bare std::bad_alloc.
      const std::size_t examples = result_.examples.size();
      result_ = ReadResult{};
      throw DataError(fmt::format(
          "{}: memory ran out after {} records ({} examples, {} tokens held); a smaller file, "
          "or data.max_examples with a file of that many, fits",
          path, records_seen_, examples, tokens_held_));
    }
    if (result_.records == 0) throw DataError(fmt::format("{}: the file has no records", path));
    if (result_.examples.empty()) {
      std::string why;
      if (result_.dropped_too_long > 0) {
        why = options_.too_long == spec::choice::too_long::kDrop
                  ? fmt::format(" (over {} tokens, data.too_long: drop)", options_.max_tokens)
                  : fmt::format(
                        " (cut to {} tokens, no target token was left: the prompt fills "
                        "data.seq_len)",
                        options_.max_tokens);
      }
      throw DataError(fmt::format(
          "{}: no usable example: {} record{}, {} skipped as bad, {} dropped as too long{}", path,
          result_.records, result_.records == 1 ? "" : "s", result_.skipped_bad,
          result_.dropped_too_long, why));
    }
    result_.format = format_;
    return std::move(result_);
  }

 private:
  void read_array(std::string_view text) {
    const std::string& path = options_.path;
    if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
      throw DataError(fmt::format("{}:{}: {}", path, line_column(text, bad).first,
                                  invalid_utf8_message(text, bad)));
    }
    const json root = ftbench::text::parse_json_text<json>(text, [&](const JsonTextError& e) {
      if (e.kind == JsonTextError::Kind::kOutOfRange) {
        // Valid JSON that no record can hold, such as a number past a double's range (1e999):
        // the error's path says where.
        throw DataError(fmt::format("{}: {}", path, e.reason));
      }
      // A syntax error's and a key given twice's byte is 1-based; the too-deep offset 0-based.
      const bool one_based =
          e.kind == JsonTextError::Kind::kSyntax || e.kind == JsonTextError::Kind::kDuplicateKey;
      const std::size_t offset = one_based && e.byte > 0 ? e.byte - 1 : e.byte;
      throw DataError(fmt::format("{}:{}: {}", path, line_column(text, offset).first,
                                  malformed_json_message(text, e)));
    });
    const std::vector<std::size_t> offsets = array_element_offsets(text);
    for (std::size_t i = 0; i < root.size(); ++i) {
      const int64_t line = i < offsets.size() ? line_column(text, offsets[i]).first : 0;
      const std::string where = fmt::format("{}:{}: record [{}]: ", path, line, i);
      ++result_.records;
      ++records_seen_;
      try {
        add(root[i], where);
      } catch (const BadRecord& e) {
        bad(where + e.what());
      }
    }
  }

  // A file's bytes given whole (tests, the fuzz target): an array or lines, as read_stream().
  void read_text(std::string_view text) {
    if (text.substr(0, 3) == kUtf8Bom) text.remove_prefix(3);
    if (starts_array(text)) {
      read_array(text);
      return;
    }
    int64_t line_number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      read_line(text.substr(start, end - start), ++line_number);
      start = end + 1;
    }
  }

  // The file at `path`: an Alpaca-style JSON array is parsed whole, JSON Lines are streamed a
  // line at a time; both within util/io/whole_file.h's limits, so an endless stream ends in an
  // error naming the file rather than in exhausted memory.
  void read_stream(const std::string& path) {
    try {
      io::LineReader lines(path, io::kDataLinesFile, io::kMaxDataLineBytes);
      std::string_view head = lines.peek();
      const bool bom = head.substr(0, 3) == kUtf8Bom;
      if (bom) head.remove_prefix(3);
      if (starts_array(head)) {
        const std::string bytes = lines.rest(io::kDataArrayFile);
        read_array(std::string_view(bytes).substr(bom ? 3 : 0));
        return;
      }
      std::string line;
      while (lines.next(line)) {
        std::string_view view(line);
        if (bom && lines.line_number() == 1) view.remove_prefix(3);
        read_line(view, lines.line_number());
      }
    } catch (const io::FileReadError& e) {
      throw DataError(fmt::format("{}: cannot read: {}", path, e.reason()));
    }
  }

  static constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

  // True when the first character that is not white space is '['.
  static bool starts_array(std::string_view text) {
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && text[first] == '[';
  }

  // One line of a JSON Lines file (without its '\n'), 1-based `line_number`.
  void read_line(std::string_view line, int64_t line_number) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (is_blank(line)) return;
    ++result_.records;
    ++records_seen_;
    const std::string where = fmt::format("{}:{}: ", options_.path, line_number);
    try {
      if (const std::size_t bad = invalid_utf8_at(line); bad != std::string_view::npos) {
        throw BadRecord(invalid_utf8_message(line, bad));
      }
      const json record = ftbench::text::parse_json_text<json>(
          line, [&](const JsonTextError& e) { throw BadRecord(malformed_json_message(line, e)); });
      add(record, where);
    } catch (const BadRecord& e) {
      bad(where + e.what());
    }
  }

  void bad(std::string message) {
    if (options_.on_error != spec::choice::on_error::kSkip) throw DataError(message);
    ++result_.skipped_bad;
    if (result_.skip_messages.size() < DataFileStats::kMaxSkipMessages) {
      result_.skip_messages.push_back(std::move(message));
    }
  }

  void add(const json& record, const std::string& where) {
    if (!record.is_object()) {
      throw BadRecord(fmt::format("expected a JSON object, found {}", describe(record)));
    }
    if (format_ == formats::kAuto) {
      const std::optional<std::string> detected = detect_format(record);
      if (!detected) {
        std::vector<std::string> keys;
        for (const auto& item : record.items()) keys.push_back(text::quoted(item.key()));
        throw DataError(fmt::format(
            "{}cannot tell the data format from the keys {}: expected messages (chat), "
            "input_ids (tokenized), instruction (alpaca) or text (text); or set the format",
            where, keys.empty() ? "of an empty object" : text::join(keys)));
      }
      format_ = *detected;
      if (format_ == formats::kChat) {
        builder_.set_chat_tokens(chat_tokens(options_.path, tokenizer_));
      }
    }
    Example example = builder_.build(format_, record);
    const auto max_tokens = static_cast<std::size_t>(options_.max_tokens);
    bool cut = false;
    if (example.tokens.size() > max_tokens) {
      if (options_.too_long == spec::choice::too_long::kDrop) {
        ++result_.dropped_too_long;
        return;
      }
      example.tokens.resize(max_tokens);
      if (!example.loss_mask.empty()) example.loss_mask.resize(max_tokens);
      example.prompt_tokens = std::min(example.prompt_tokens, options_.max_tokens);
      if (count_targets(example) == 0) {
        ++result_.dropped_too_long;
        return;
      }
      cut = true;
    }
    // What the examples hold stays bounded whatever the file (an endless stream of records):
    // spec/limits.h.
    tokens_held_ += static_cast<int64_t>(example.tokens.size());
    if (static_cast<int64_t>(result_.examples.size()) >= options_.max_examples_held ||
        tokens_held_ > options_.max_tokens_held) {
      throw DataError(fmt::format(
          "{}: more than {} examples or {} tokens after {} records; a data set of this size is "
          "not held in memory (docs/spec.md, Limits)",
          options_.path, options_.max_examples_held, options_.max_tokens_held, records_seen_));
    }
    result_.examples.push_back(std::move(example));
    result_.truncated.push_back(cut ? 1 : 0);
  }

  const DataFileOptions& options_;
  const Tokenizer& tokenizer_;
  RecordBuilder builder_;
  std::string format_;
  ReadResult result_;
  int64_t records_seen_ = 0;
  int64_t tokens_held_ = 0;
};

// The examples max_examples keeps, ascending, and how the description names the choice.
std::vector<int64_t> choose_subset(const DataFileOptions& options, int64_t usable,
                                   std::string& description) {
  if (options.max_examples == 0 || options.max_examples >= usable) return all_indices(usable);
  if (options.subset == spec::choice::subset::kFirst) {
    description = fmt::format("subset=first {} of {}", options.max_examples, usable);
    return all_indices(options.max_examples);
  }
  description =
      fmt::format("subset=random {} of {} (seed={})", options.max_examples, usable, options.seed);
  return seeded_sample(usable, options.max_examples, options.seed, kSubsetStream);
}

std::string describe_file(const std::string& path, const std::string& format, std::size_t n,
                          const std::vector<std::string>& extra) {
  std::string out = fmt::format("file(path={}, format={}, n={}", path, format, n);
  for (const std::string& item : extra) {
    if (!item.empty()) out += ", " + item;
  }
  return out + ")";
}

// Moves the examples `selected` (ascending indices) out of `read` into `examples`; their stats.
DataFileStats take_examples(ReadResult& read, const std::vector<int64_t>& selected,
                            std::vector<Example>& examples) {
  DataFileStats s;
  s.records = read.records;
  s.skipped_bad = read.skipped_bad;
  s.dropped_too_long = read.dropped_too_long;
  s.not_selected = static_cast<int64_t>(read.examples.size() - selected.size());
  s.skip_messages = read.skip_messages;
  std::vector<double> lengths;
  for (const int64_t i : selected) {
    const auto index = static_cast<std::size_t>(i);
    examples.push_back(std::move(read.examples[index]));
    const Example& example = examples.back();
    const auto length = static_cast<int64_t>(example.tokens.size());
    s.truncated += read.truncated[index];
    s.tokens += length;
    s.loss_tokens += count_targets(example);
    s.max_length = std::max(s.max_length, length);
    lengths.push_back(static_cast<double>(length));
  }
  s.examples = static_cast<int64_t>(examples.size());
  if (s.examples > 0) {
    s.mean_length = static_cast<double>(s.tokens) / static_cast<double>(s.examples);
    s.p50_length = stats::percentile(lengths, 0.5);
    s.p90_length = stats::percentile(lengths, 0.9);
  }
  if (s.tokens > 0) {
    s.masked_fraction =
        static_cast<double>(s.tokens - s.loss_tokens) / static_cast<double>(s.tokens);
  }
  return s;
}

}  // namespace

FileDataset::FileDataset(const DataFileOptions& options, const Tokenizer& tokenizer)
    : FileDataset(options, tokenizer, std::nullopt) {}

std::unique_ptr<FileDataset> FileDataset::from_text(std::string_view text,
                                                    const DataFileOptions& options,
                                                    const Tokenizer& tokenizer) {
  return std::unique_ptr<FileDataset>(new FileDataset(options, tokenizer, text));
}

FileDataset::FileDataset(const DataFileOptions& options, const Tokenizer& tokenizer,
                         std::optional<std::string_view> text) {
  ReadResult read = FileReader(options, tokenizer).read(text);
  std::string subset;
  const std::vector<int64_t> selected =
      choose_subset(options, static_cast<int64_t>(read.examples.size()), subset);
  stats_ = take_examples(read, selected, examples_);
  format_ = read.format;
  description_ = describe_file(options.path, format_, selected.size(), {subset});
}

TrainValidationData load_train_validation(const DataFileOptions& options,
                                          const ValidationOptions& validation,
                                          const Tokenizer& tokenizer) {
  const double fraction = validation.fraction;
  if (!(fraction >= 0.0 && fraction < 1.0)) {
    throw DataError(fmt::format("{}: validation fraction: must be a number in [0, 1), found {}",
                                options.path, fraction));
  }
  if (fraction > 0.0 && !validation.path.empty()) {
    throw DataError(fmt::format("{}: validation: give a fraction ({}) or a file ({}), not both",
                                options.path, fraction, validation.path));
  }
  TrainValidationData out;
  if (fraction == 0.0) {
    out.train = std::make_unique<FileDataset>(options, tokenizer);
    if (!validation.path.empty()) {
      DataFileOptions validation_options = options;
      validation_options.path = validation.path;
      validation_options.max_examples = 0;
      try {
        out.validation = std::make_unique<FileDataset>(validation_options, tokenizer);
      } catch (const DataError& e) {
        throw DataError(e.what(), "data.validation_path");
      }
    }
    return out;
  }
  ReadResult read = FileReader(options, tokenizer).read();
  std::string subset;
  const std::vector<int64_t> selected =
      choose_subset(options, static_cast<int64_t>(read.examples.size()), subset);
  const auto n = static_cast<int64_t>(selected.size());
  // ceil(fraction * n), a product within 1e-9 of an integer taken as that integer (0.07 * 100
  // is 7.000000000000001 in binary floating point).
  const auto held_out = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(n) - 1e-9));
  if (held_out >= n) {
    throw DataError(
        fmt::format("{}: validation fraction {} of {} example{} leaves no training example",
                    options.path, fraction, n, n == 1 ? "" : "s"));
  }
  const std::vector<int64_t> chosen = seeded_sample(n, held_out, options.seed, kValidationStream);
  std::vector<int64_t> train_indices;
  std::vector<int64_t> validation_indices;
  std::size_t next = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (next < chosen.size() && chosen[next] == k) {
      validation_indices.push_back(selected[static_cast<std::size_t>(k)]);
      ++next;
    } else {
      train_indices.push_back(selected[static_cast<std::size_t>(k)]);
    }
  }
  const std::string split = fmt::format("validation fraction {}, seed={}", fraction, options.seed);
  const auto fill = [&](FileDataset& dataset, const std::vector<int64_t>& indices,
                        const char* side) {
    dataset.stats_ = take_examples(read, indices, dataset.examples_);
    dataset.format_ = read.format;
    dataset.description_ = describe_file(options.path, read.format, indices.size(),
                                         {subset, fmt::format("split={} ({})", side, split)});
  };
  out.train.reset(new FileDataset());
  fill(*out.train, train_indices, "train");
  out.validation.reset(new FileDataset());
  fill(*out.validation, validation_indices, "validation");
  return out;
}

}  // namespace ftbench::data
