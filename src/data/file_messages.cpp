#include "data/file_messages.h"

#include <fmt/format.h>

#include "util/text/messages.h"

namespace ftbench::data::detail {

using json = nlohmann::json;

// What a JSON value is, for "expected X, found Y": scalars as JSON (strings quoted and cut
// after kMaxQuotedBytes), "an array", "an object".
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::array:
      return value.empty() ? "an empty array" : "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::string: {
      std::string s = value.get<std::string>();
      if (s.size() > kMaxQuotedBytes) {
        std::size_t cut = kMaxQuotedBytes;
        // The text is valid UTF-8 (checked before parsing): cut at a character boundary.
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
        s = s.substr(0, cut) + "...";
      }
      return json(s).dump();
    }
    default:
      return value.dump();
  }
}

std::string missing_key(std::string_view key) {
  return "missing required key " + text::quoted(key);
}

// ---------------------------------------------------------------------------------------------
// Bytes.

// Offset of the first character that is not well-formed UTF-8 (its first byte), or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = ftbench::text::utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

// 1-based line and column (in bytes) of `offset` in `text`.
std::pair<int64_t, int64_t> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const auto line = 1 + static_cast<int64_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t newline = before.rfind('\n');
  const auto column =
      static_cast<int64_t>(newline == std::string_view::npos ? offset + 1 : offset - newline);
  return {line, column};
}

// "invalid UTF-8 at column C (byte 0xNN)", C in the line that holds `offset`.
std::string invalid_utf8_message(std::string_view text, std::size_t offset) {
  const int64_t column = line_column(text, offset).second;
  if (offset >= text.size()) {
    return fmt::format("invalid UTF-8 at column {}: the text ends inside a character", column);
  }
  return fmt::format("invalid UTF-8 at column {} (byte 0x{:02x})", column,
                     static_cast<unsigned char>(text[offset]));
}

// "malformed JSON at column C: <the parser's reason>", C in the line that `text` starts.
std::string malformed_json_message(std::string_view text, const ftbench::text::JsonTextError& e) {
  if (e.kind != ftbench::text::JsonTextError::Kind::kSyntax) return e.reason;
  // nlohmann's byte is the 1-based position of the last character read.
  const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
  const int64_t column = line_column(text, offset).second;
  return fmt::format("malformed JSON at column {}: {}", column, e.reason);
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

std::string_view trim_ascii_space(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  const std::size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// Offsets of the elements of the top-level array in `text`, which parsed as a JSON array.
std::vector<std::size_t> array_element_offsets(std::string_view text) {
  std::vector<std::size_t> offsets;
  int depth = 0;
  bool expecting = false;
  text::for_each_byte_outside_strings(text, [&](std::size_t i, char c) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return true;
    if (expecting && c != ']') {
      offsets.push_back(i);
      expecting = false;
    }
    if (c == '[' || c == '{') {
      ++depth;
      if (depth == 1) expecting = true;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expecting = true;
    }
    return true;
  });
  return offsets;
}

}  // namespace ftbench::data::detail
