// Private to src/data: the words and positions of the data files' messages (what a JSON value
// is, where a byte sits as line and column, invalid UTF-8, malformed JSON) and the offsets of a
// JSON array's elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/text/json_parse.h"

namespace ftbench::data::detail {

// Strings quoted in messages are cut after this many bytes.
inline constexpr std::size_t kMaxQuotedBytes = 40;

// What a JSON value is, for "expected X, found Y": scalars as JSON (strings quoted and cut
// after kMaxQuotedBytes), "an array", "an object".
std::string describe(const nlohmann::json& value);

std::string missing_key(std::string_view key);

// Offset of the first character that is not well-formed UTF-8 (its first byte), or npos.
std::size_t invalid_utf8_at(std::string_view s);

// 1-based line and column (in bytes) of `offset` in `text`.
std::pair<int64_t, int64_t> line_column(std::string_view text, std::size_t offset);

// "invalid UTF-8 at column C (byte 0xNN)", C in the line that holds `offset`.
std::string invalid_utf8_message(std::string_view text, std::size_t offset);

// Why `text` did not parse: "malformed JSON at column C: <the parser's reason>", C in the line
// that `text` starts, for a syntax error; else the error's reason (too deep, out of range).
std::string malformed_json_message(std::string_view text, const ftbench::text::JsonTextError& e);

bool is_blank(std::string_view line);

std::string_view trim_ascii_space(std::string_view s);

// Offsets of the elements of the top-level array in `text`, which parsed as a JSON array.
std::vector<std::size_t> array_element_offsets(std::string_view text);

}  // namespace ftbench::data::detail
