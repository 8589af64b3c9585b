// Wording and limits for JSON read from users' files (reports, gemm results, tokenizer.json).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ftbench::text {

// `what` of a nlohmann::json exception without the library's "[json.exception.parse_error.101]
// parse error at line 1, column 2: " prefix (callers say where, in their own words), and with
// its "last read: '...'" excerpt cut to its first and last 32 bytes: on a 64 MiB line the parser
// quotes the whole line. "number overflow parsing '1e999'" (out_of_range.406, which JSON's
// grammar allows but a double cannot hold) reads "number out of range: 1e999".
std::string json_error_reason(std::string_view what);

// The path of the value where nlohmann's parser stops in `text` ("summary.loss[3]", "[0].text"):
// what json_error_reason cannot say for a number out of range, which nlohmann reports without a
// position. "" when the text parses or the parser stops outside any array or object.
std::string json_error_path(std::string_view text);
// The first key that an object in `text` gives twice, or nullopt: nlohmann keeps the last value
// without a word, and a file that says two things about one figure is not to be read as either.
// Keys compare as the strings they are ("a" and "\u0061" are one key).
struct JsonDuplicateKey {
  std::string path;    // the key's path, "steps[0].loss" (as json_error_path writes it)
  std::size_t offset;  // 0-based offset of its second occurrence's opening quote in `text`
};
std::optional<JsonDuplicateKey> json_duplicate_key(std::string_view text);

// json_error_reason(what), after "<path>: " when json_error_path(text) has one.
std::string json_error_at(std::string_view text, std::string_view what);

// No file ftbench reads nests deeper than a handful of levels; nlohmann-json parses any depth
// without recursion, but copying, comparing or printing a value recurses once per level, and a
// few hundred thousand levels overflow the stack. Readers refuse deeper files before parsing.
inline constexpr int kMaxJsonDepth = 128;

// Calls on_byte(i, c) for each byte of `text` outside JSON strings, a string's opening quote
// included (its contents, escapes and closing quote are skipped), until on_byte returns false:
// for scanners of JSON structure that brackets and commas inside strings must not fool.
template <class F>
void for_each_byte_outside_strings(std::string_view text, F&& on_byte) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (!on_byte(i, c)) return;
  }
}

// The offset of the first '[' or '{' (outside strings) that opens level `max_depth` + 1, or
// nullopt when `text` nests no deeper than `max_depth`. Works on any bytes, valid JSON or not.
std::optional<std::size_t> json_too_deep_at(std::string_view text, int max_depth = kMaxJsonDepth);

// "nested deeper than 128 levels (at byte N)", N 1-based as nlohmann's parse errors count.
std::string json_too_deep_message(std::size_t offset, int max_depth = kMaxJsonDepth);

}  // namespace ftbench::text
