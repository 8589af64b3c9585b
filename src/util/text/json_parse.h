// Parsing a JSON document from a user's file, once for every reader: the depth limit first, then
// nlohmann's parser, and each way it can fail told apart, so that a reader only words the error
// in its own terms (its error type, its file's name, its prefix).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/text/json_errors.h"

namespace ftbench::text {

// Why a JSON text was not parsed.
struct JsonTextError {
  enum class Kind {
    kTooDeep,       // nested deeper than kMaxJsonDepth; refused before parsing
    kSyntax,        // not JSON (nlohmann's parse_error)
    kOutOfRange,    // valid JSON that a value cannot hold, such as the number 1e999
    kDuplicateKey,  // an object gives a key twice
  };
  Kind kind;
  // kSyntax: nlohmann's 1-based byte of the error; kTooDeep: the 0-based offset of the bracket
  // that opens one level too many; kOutOfRange: 0 (nlohmann gives no position); kDuplicateKey:
  // the 1-based byte of the second key's opening quote.
  std::size_t byte = 0;
  // The message without any "<file>: " head: json_too_deep_message, json_error_reason (kSyntax),
  // json_error_at, whose path says where the value is (kOutOfRange), or "<the key's path>: a key
  // given twice in one object" (kDuplicateKey).
  std::string reason;
};

// `text` parsed as a `Json` (nlohmann::json or nlohmann::ordered_json). When it cannot be parsed,
// calls fail(const JsonTextError&), which must throw. An object that gives a key twice is
// refused (kDuplicateKey) instead of keeping its last value, in every file ftbench reads: a
// data record, a vocabulary or a manifest that says two things about one key is read as
// neither. A NUL byte outside a string is a syntax error: nlohmann's parser takes it for the end
// of the text and would ignore what follows (in a string, the parser itself refuses it as an
// unescaped control character).
template <class Json, class Fail>
Json parse_json_text(std::string_view text, Fail&& fail) {
  std::size_t nul = std::string_view::npos;
  for_each_byte_outside_strings(text, [&](std::size_t i, char c) {
    if (c == '\0') nul = i;
    return c != '\0';
  });
  if (nul != std::string_view::npos) {
    fail(JsonTextError{JsonTextError::Kind::kSyntax, nul + 1,
                       "a NUL byte, which no JSON text holds"});
  } else if (const auto deep = json_too_deep_at(text)) {
    fail(JsonTextError{JsonTextError::Kind::kTooDeep, *deep, json_too_deep_message(*deep)});
  } else {
    Json json;
    bool parsed = false;
    try {
      json = Json::parse(text);
      parsed = true;
    } catch (const typename Json::parse_error& e) {
      fail(JsonTextError{JsonTextError::Kind::kSyntax, e.byte, json_error_reason(e.what())});
    } catch (const typename Json::exception& e) {
      fail(JsonTextError{JsonTextError::Kind::kOutOfRange, 0, json_error_at(text, e.what())});
    }
    // Outside the try: what `fail` throws is the caller's, never taken for the parser's.
    if (parsed) {
      const std::optional<JsonDuplicateKey> duplicate = json_duplicate_key(text);
      if (!duplicate) return json;
      fail(JsonTextError{JsonTextError::Kind::kDuplicateKey, duplicate->offset + 1,
                         duplicate->path + ": a key given twice in one object"});
    }
  }
  throw std::logic_error("parse_json_text: the fail callback returned");
}

// How the readers of ftbench's own files word `e`: "<source>: not valid JSON at byte N:
// <reason>" for a syntax error, else "<source>: not a readable <what>: <reason>" (what = "report",
// "gemm result").
inline std::string own_file_message(const JsonTextError& e, const std::string& source,
                                    const std::string& what) {
  if (e.kind == JsonTextError::Kind::kSyntax) {
    return source + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + e.reason;
  }
  return source + ": not a readable " + what + ": " + e.reason;
}

}  // namespace ftbench::text
